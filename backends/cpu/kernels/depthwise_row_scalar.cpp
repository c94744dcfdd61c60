// The depthwise row kernel in portable C++: one output pixel at a time, channels innermost
// (NHWC: a pixel's channels are contiguous, so the compiler may vectorize the channel loop), the
// clamp, post-affine and residual in one pass over the finished pixel.
#include "backends/cpu/kernels/depthwise_row.h"

namespace tern::cpu::depthwise_detail {
namespace {

void one_row(const DepthwiseRow& r) {
  const int64_t ch = r.channels;
  for (int64_t ox = 0; ox < r.out_w; ++ox) {
    int64_t ix0, kx_lo, kx_hi;
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    float* out = r.out + ox * ch;
    for (int64_t c = 0; c < ch; ++c) out[c] = r.bias != nullptr ? r.bias[c] : 0.0f;
    for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
      const float* row = r.rows[ky];
      if (row == nullptr) continue;
      for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
        const float* in = row + (ix0 + kx) * ch;
        const float* w = r.w + (ky * r.kernel_w + kx) * ch;
        for (int64_t c = 0; c < ch; ++c) out[c] += in[c] * w[c];
      }
    }
    for (int64_t c = 0; c < ch; ++c) {  // NaN fails both tests and stays
      float v = out[c];
      v = v < r.epi.lo ? r.epi.lo : v;
      v = v > r.epi.hi ? r.epi.hi : v;
      if (r.post_scale != nullptr) v = v * r.post_scale[c] + r.post_shift[c];
      if (r.residual != nullptr) v += r.residual[ox * ch + c];
      out[c] = v;
    }
  }
}

void row_scalar(const DepthwiseRow& r) {
  for (int64_t i = 0; i < r.out_rows; ++i) one_row(row_of(r, i));
}

}  // namespace

RowFn scalar_row() { return &row_scalar; }

}  // namespace tern::cpu::depthwise_detail
