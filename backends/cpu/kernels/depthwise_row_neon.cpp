// The depthwise row kernel in NEON (aarch64): per output pixel, the channels in blocks of 16
// (four q-register accumulators, then blocks of 4, then single channels), each block summed over
// the window's taps in registers with fused multiply-adds and stored once, clamped (then the
// row's post-affine and residual). Borders clip the window with tap_range as the portable kernel
// does. Dispatch's portable slot on aarch64
// (bottleneck.cpp's row_fn); elsewhere the file compiles to a null-returning stub.
#include "backends/cpu/kernels/depthwise_row.h"

#if defined(__aarch64__)

#include <arm_neon.h>

namespace tern::cpu::depthwise_detail {
namespace {

/// NaN fails both comparisons and stays, as in the portable kernel.
inline float32x4_t clamp4(float32x4_t v, float32x4_t lo, float32x4_t hi) {
  v = vbslq_f32(vcltq_f32(v, lo), lo, v);
  return vbslq_f32(vcgtq_f32(v, hi), hi, v);
}

/// Channels [c, c + 4 * Q) of one output pixel.
template <int Q>
inline void block(const DepthwiseRow& r, int64_t ix0, int64_t kx_lo, int64_t kx_hi, int64_t c,
                  float32x4_t lo, float32x4_t hi, float* out) {
  const int64_t ch = r.channels;
  float32x4_t acc[Q];
#pragma GCC unroll 4
  for (int q = 0; q < Q; ++q)
    acc[q] = r.bias != nullptr ? vld1q_f32(r.bias + c + 4 * q) : vdupq_n_f32(0.0f);
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
      const float* in = row + (ix0 + kx) * ch + c;
      const float* w = r.w + (ky * r.kernel_w + kx) * ch + c;
#pragma GCC unroll 4
      for (int q = 0; q < Q; ++q)
        acc[q] = vfmaq_f32(acc[q], vld1q_f32(in + 4 * q), vld1q_f32(w + 4 * q));
    }
  }
  const float* res = r.residual != nullptr ? r.residual + (out - r.out) + c : nullptr;
#pragma GCC unroll 4
  for (int q = 0; q < Q; ++q) {
    float32x4_t v = clamp4(acc[q], lo, hi);
    if (r.post_scale != nullptr) {
      v = vfmaq_f32(vld1q_f32(r.post_shift + c + 4 * q), v, vld1q_f32(r.post_scale + c + 4 * q));
    }
    if (res != nullptr) v = vaddq_f32(v, vld1q_f32(res + 4 * q));
    vst1q_f32(out + c + 4 * q, v);
  }
}

void one_row(const DepthwiseRow& r) {
  const int64_t ch = r.channels;
  const float32x4_t lo = vdupq_n_f32(r.epi.lo);
  const float32x4_t hi = vdupq_n_f32(r.epi.hi);
  for (int64_t ox = 0; ox < r.out_w; ++ox) {
    int64_t ix0, kx_lo, kx_hi;
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    float* out = r.out + ox * ch;
    int64_t c = 0;
    for (; c + 16 <= ch; c += 16) block<4>(r, ix0, kx_lo, kx_hi, c, lo, hi, out);
    for (; c + 4 <= ch; c += 4) block<1>(r, ix0, kx_lo, kx_hi, c, lo, hi, out);
    for (; c < ch; ++c) {
      float v = r.bias != nullptr ? r.bias[c] : 0.0f;
      for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
        const float* row = r.rows[ky];
        if (row == nullptr) continue;
        for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
          v += row[(ix0 + kx) * ch + c] * r.w[(ky * r.kernel_w + kx) * ch + c];
        }
      }
      v = v < r.epi.lo ? r.epi.lo : v;
      v = v > r.epi.hi ? r.epi.hi : v;
      if (r.post_scale != nullptr) v = v * r.post_scale[c] + r.post_shift[c];
      if (r.residual != nullptr) v += r.residual[ox * ch + c];
      out[c] = v;
    }
  }
}

void row_neon(const DepthwiseRow& r) {
  for (int64_t i = 0; i < r.out_rows; ++i) one_row(row_of(r, i));
}

}  // namespace

RowFn neon_row() { return &row_neon; }

}  // namespace tern::cpu::depthwise_detail

#else

namespace tern::cpu::depthwise_detail {
RowFn neon_row() { return nullptr; }
}  // namespace tern::cpu::depthwise_detail

#endif
