// AVX2 transforms of the Winograd convolutions (F(4x4, 3x3): winograd_f43.h on 8-float
// vectors). F(2x2, 3x3): 8 channels per ymm, the tile's 16
// pixels (or 16 GEMM results) in registers while the adds and subtracts of Bᵀ d B (or Aᵀ M A)
// run; tails through vmaskmovps (masked-off lanes neither fault nor write), so nothing past kc
// (oc) floats of x, y or the residual is touched. Per-function target attributes: no special
// flags, and the code only runs when dispatch saw AVX2 and FMA.
#include "backends/cpu/kernels/winograd_transform.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "backends/cpu/kernels/winograd_f43.h"

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::winograd_detail {
namespace {

/// Lane i on when i < n.
TERN_AVX2_TARGET inline __m256i lane_mask(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes);
}

/// V = Bᵀ d B of 8 lanes, stored to the 16 positions.
TERN_AVX2_TARGET inline void transform_input(const __m256 (&d)[16], float* v, int64_t plane) {
  __m256 t[16];  // Bᵀ d: combinations of rows, per column j
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    t[0 + j] = _mm256_sub_ps(d[0 + j], d[8 + j]);
    t[4 + j] = _mm256_add_ps(d[4 + j], d[8 + j]);
    t[8 + j] = _mm256_sub_ps(d[8 + j], d[4 + j]);
    t[12 + j] = _mm256_sub_ps(d[4 + j], d[12 + j]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // (Bᵀ d) B: combinations of columns, per row i
    const __m256* r = t + 4 * i;
    _mm256_storeu_ps(v + (4 * i + 0) * plane, _mm256_sub_ps(r[0], r[2]));
    _mm256_storeu_ps(v + (4 * i + 1) * plane, _mm256_add_ps(r[1], r[2]));
    _mm256_storeu_ps(v + (4 * i + 2) * plane, _mm256_sub_ps(r[2], r[1]));
    _mm256_storeu_ps(v + (4 * i + 3) * plane, _mm256_sub_ps(r[1], r[3]));
  }
}

TERN_AVX2_TARGET void input_tile_avx2(const float* const src[16], int64_t kc, float* v,
                                      int64_t plane) {
  int64_t c = 0;
  for (; c + 8 <= kc; c += 8) {
    __m256 d[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) d[i] = _mm256_loadu_ps(src[i] + c);
    transform_input(d, v + c, plane);
  }
  if (c < kc) {
    const __m256i mask = lane_mask(kc - c);
    __m256 d[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) d[i] = _mm256_maskload_ps(src[i] + c, mask);
    transform_input(d, v + c, plane);
  }
}

TERN_AVX2_TARGET void output_tile_avx2(const float* m, int64_t plane, int64_t oc,
                                       float* const dst[4], const float* const residual[4],
                                       float out_min, float out_max) {
  const __m256 lo = _mm256_set1_ps(out_min);
  const __m256 hi = _mm256_set1_ps(out_max);
  for (int64_t c = 0; c < oc; c += 8) {
    const bool full = oc - c >= 8;
    const __m256i mask = lane_mask(oc - c);
    // Aᵀ M: s0 = M0 + M1 + M2, s1 = M1 - M2 - M3 (rows of M), per column b.
    __m256 s0[4], s1[4];
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      const __m256 m0 = _mm256_loadu_ps(m + (0 + b) * plane + c);
      const __m256 m1 = _mm256_loadu_ps(m + (4 + b) * plane + c);
      const __m256 m2 = _mm256_loadu_ps(m + (8 + b) * plane + c);
      const __m256 m3 = _mm256_loadu_ps(m + (12 + b) * plane + c);
      s0[b] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
      s1[b] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
    }
    __m256 y[4];  // (Aᵀ M) A, q = 2·row + column
    y[0] = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
    y[1] = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
    y[2] = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
    y[3] = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      if (dst[q] == nullptr) continue;
      __m256 out = y[q];
      if (residual != nullptr) {
        out = _mm256_add_ps(out, full ? _mm256_loadu_ps(residual[q] + c)
                                      : _mm256_maskload_ps(residual[q] + c, mask));
      }
      // min(hi, x) / max(lo, x) return x when x is NaN, so NaN propagates.
      out = _mm256_max_ps(lo, _mm256_min_ps(hi, out));
      if (full) {
        _mm256_storeu_ps(dst[q] + c, out);
      } else {
        _mm256_maskstore_ps(dst[q] + c, mask, out);
      }
    }
  }
}

typedef float Vec8 __attribute__((vector_size(32)));

TERN_AVX2_TARGET void input_tile_f43_avx2(const float* const* src, int64_t kc, float* v,
                                          int64_t plane) {
  f43::input_tile<Vec8>(src, kc, v, plane);
}

TERN_AVX2_TARGET void output_tile_f43_avx2(const float* m, int64_t plane, int64_t oc,
                                           float* const* dst, const float* const* residual,
                                           float out_min, float out_max) {
  f43::output_tile<Vec8>(m, plane, oc, dst, residual, out_min, out_max);
}

constexpr TransformSet kSet = {&input_tile_avx2, &output_tile_avx2, &input_tile_f43_avx2,
                               &output_tile_f43_avx2};

}  // namespace

const TransformSet* avx2_transforms() { return &kSet; }

}  // namespace tern::cpu::winograd_detail

#else  // !__x86_64__

namespace tern::cpu::winograd_detail {
const TransformSet* avx2_transforms() { return nullptr; }
}  // namespace tern::cpu::winograd_detail

#endif
