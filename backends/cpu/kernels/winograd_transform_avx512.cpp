// AVX-512F transforms of the Winograd convolutions (F(4x4, 3x3): winograd_f43.h on 16-float
// vectors). F(2x2, 3x3): 16 channels per zmm, the input
// tile's 16 pixels (or the output tile's 16 GEMM results) held in registers while the adds and
// subtracts of Bᵀ d B (or Aᵀ M A) run; tails masked, so nothing past kc (oc) floats of x, y or
// the residual is touched. Per-function target attributes: no special flags, and the code only
// runs when dispatch saw AVX-512F.
#include "backends/cpu/kernels/winograd_transform.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "backends/cpu/kernels/winograd_f43.h"

#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::winograd_detail {
namespace {

/// V = Bᵀ d B of 16 lanes, stored to the 16 positions.
TERN_AVX512_TARGET inline void transform_input(const __m512 (&d)[16], float* v, int64_t plane) {
  __m512 t[16];  // Bᵀ d: combinations of rows, per column j
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    t[0 + j] = _mm512_sub_ps(d[0 + j], d[8 + j]);
    t[4 + j] = _mm512_add_ps(d[4 + j], d[8 + j]);
    t[8 + j] = _mm512_sub_ps(d[8 + j], d[4 + j]);
    t[12 + j] = _mm512_sub_ps(d[4 + j], d[12 + j]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // (Bᵀ d) B: combinations of columns, per row i
    const __m512* r = t + 4 * i;
    _mm512_storeu_ps(v + (4 * i + 0) * plane, _mm512_sub_ps(r[0], r[2]));
    _mm512_storeu_ps(v + (4 * i + 1) * plane, _mm512_add_ps(r[1], r[2]));
    _mm512_storeu_ps(v + (4 * i + 2) * plane, _mm512_sub_ps(r[2], r[1]));
    _mm512_storeu_ps(v + (4 * i + 3) * plane, _mm512_sub_ps(r[1], r[3]));
  }
}

TERN_AVX512_TARGET void input_tile_avx512(const float* const src[16], int64_t kc, float* v,
                                          int64_t plane) {
  int64_t c = 0;
  for (; c + 16 <= kc; c += 16) {
    __m512 d[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) d[i] = _mm512_loadu_ps(src[i] + c);
    transform_input(d, v + c, plane);
  }
  if (c < kc) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (kc - c)) - 1u);
    __m512 d[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) d[i] = _mm512_maskz_loadu_ps(mask, src[i] + c);
    transform_input(d, v + c, plane);
  }
}

TERN_AVX512_TARGET void output_tile_avx512(const float* m, int64_t plane, int64_t oc,
                                           float* const dst[4], const float* const residual[4],
                                           float out_min, float out_max) {
  const __m512 lo = _mm512_set1_ps(out_min);
  const __m512 hi = _mm512_set1_ps(out_max);
  const __mmask16 all = 0xFFFF;
  for (int64_t c = 0; c < oc; c += 16) {
    const bool full = oc - c >= 16;
    const __mmask16 mask = full ? all : static_cast<__mmask16>((1u << (oc - c)) - 1u);
    // Aᵀ M: s0 = M0 + M1 + M2, s1 = M1 - M2 - M3 (rows of M), per column b.
    __m512 s0[4], s1[4];
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      const __m512 m0 = _mm512_loadu_ps(m + (0 + b) * plane + c);
      const __m512 m1 = _mm512_loadu_ps(m + (4 + b) * plane + c);
      const __m512 m2 = _mm512_loadu_ps(m + (8 + b) * plane + c);
      const __m512 m3 = _mm512_loadu_ps(m + (12 + b) * plane + c);
      s0[b] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
      s1[b] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
    }
    __m512 y[4];  // (Aᵀ M) A, q = 2·row + column
    y[0] = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]);
    y[1] = _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]);
    y[2] = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]);
    y[3] = _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      if (dst[q] == nullptr) continue;
      __m512 out = y[q];
      if (residual != nullptr) {
        out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask, residual[q] + c));
      }
      // min(hi, x) / max(lo, x) return x when x is NaN, so NaN propagates (the maskz forms
      // with an all-ones mask avoid GCC 12's bogus -Wmaybe-uninitialized, as in the GEMM).
      out = _mm512_maskz_max_ps(all, lo, _mm512_maskz_min_ps(all, hi, out));
      if (full) {
        _mm512_storeu_ps(dst[q] + c, out);
      } else {
        _mm512_mask_storeu_ps(dst[q] + c, mask, out);
      }
    }
  }
}

typedef float Vec16 __attribute__((vector_size(64)));

TERN_AVX512_TARGET void input_tile_f43_avx512(const float* const* src, int64_t kc, float* v,
                                              int64_t plane) {
  f43::input_tile<Vec16>(src, kc, v, plane);
}

TERN_AVX512_TARGET void output_tile_f43_avx512(const float* m, int64_t plane, int64_t oc,
                                               float* const* dst, const float* const* residual,
                                               float out_min, float out_max) {
  f43::output_tile<Vec16>(m, plane, oc, dst, residual, out_min, out_max);
}

constexpr TransformSet kSet = {&input_tile_avx512, &output_tile_avx512, &input_tile_f43_avx512,
                               &output_tile_f43_avx512};

}  // namespace

const TransformSet* avx512_transforms() { return &kSet; }

}  // namespace tern::cpu::winograd_detail

#else  // !__x86_64__

namespace tern::cpu::winograd_detail {
const TransformSet* avx512_transforms() { return nullptr; }
}  // namespace tern::cpu::winograd_detail

#endif
