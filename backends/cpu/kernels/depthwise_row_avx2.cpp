// The depthwise row kernel in AVX2+FMA: per output pixel, 32 channels (four ymm accumulators)
// at a time over the window's taps, then 8 at a time, then a masked tail (maskload/maskstore),
// so nothing past `channels` floats of an input pixel, a weight tap or the output is touched.
// Per-function target attributes: runs only when dispatch saw AVX2 and FMA.
#include "backends/cpu/kernels/depthwise_row.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::depthwise_detail {
namespace {

/// NV vectors of channels [c, c + 8 NV) of output pixel ox (the last one masked by `tail`).
template <int NV>
TERN_AVX2_TARGET inline void pixel_block(const DepthwiseRow& r, int64_t ix0, int64_t kx_lo,
                                         int64_t kx_hi, int64_t c, __m256i tail, float* out) {
  const int64_t ch = r.channels;
  const __m256i all = _mm256_set1_epi32(-1);
  __m256 acc[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m256i m = v == NV - 1 ? tail : all;
    acc[v] = r.bias != nullptr ? _mm256_maskload_ps(r.bias + c + 8 * v, m) : _mm256_setzero_ps();
  }
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + (ix0 + kx_lo) * ch + c;
    const float* w = r.w + (ky * r.kernel_w + kx_lo) * ch + c;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx, in += ch, w += ch) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m256i m = v == NV - 1 ? tail : all;
        acc[v] = _mm256_fmadd_ps(_mm256_maskload_ps(in + 8 * v, m),
                                 _mm256_maskload_ps(w + 8 * v, m), acc[v]);
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(r.epi.lo);
  const __m256 hi = _mm256_set1_ps(r.epi.hi);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m256i m = v == NV - 1 ? tail : all;
    // max(lo, min(hi, x)) returns x when x is NaN: NaN propagates.
    _mm256_maskstore_ps(out + 8 * v, m, _mm256_max_ps(lo, _mm256_min_ps(hi, acc[v])));
  }
}

TERN_AVX2_TARGET void row_avx2(const DepthwiseRow& r) {
  const int64_t ch = r.channels;
  const __m256i all = _mm256_set1_epi32(-1);
  for (int64_t ox = 0; ox < r.out_w; ++ox) {
    int64_t ix0, kx_lo, kx_hi;
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    float* out = r.out + ox * ch;
    int64_t c = 0;
    for (; c + 32 <= ch; c += 32) pixel_block<4>(r, ix0, kx_lo, kx_hi, c, all, out + c);
    for (; c + 8 <= ch; c += 8) pixel_block<1>(r, ix0, kx_lo, kx_hi, c, all, out + c);
    if (c < ch) {
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(ch - c)), lanes);
      pixel_block<1>(r, ix0, kx_lo, kx_hi, c, tail, out + c);
    }
  }
}

}  // namespace

RowFn avx2_row() { return &row_avx2; }

}  // namespace tern::cpu::depthwise_detail

#else  // !__x86_64__

namespace tern::cpu::depthwise_detail {
RowFn avx2_row() { return nullptr; }
}  // namespace tern::cpu::depthwise_detail

#endif
