// The exponential's constants shared by the cpu kernels' vector code (the SiLU and sigmoid
// epilogues, gemm_activation.cpp; the softmax numerators of attention_softmax_row.cpp and
// channel_mix.cpp, exp_nonpositive_avx512 / _avx2 below): e^z
// = 2^n · e^r with n = round(z · log2 e) and r = z − n · ln 2 (ln 2 in a 16-bit head and a
// tail, so n · head is exact), e^r by a degree-5 polynomial on r in [−ln2/2, ln2/2] (a relative
// minimax fit of our own: 2.1e-7 in f32).
#pragma once

#include "runtime/kernels/util/simd_dispatch.h"

#if defined(TERN_SIMD_X86_DISPATCH)
#include <immintrin.h>
#endif

namespace tern::cpu::exp_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.42860682030941723e-6f;
constexpr float kC5 = 0.008297616615891457f;
constexpr float kC4 = 0.04191537946462631f;
constexpr float kC3 = 0.16667574644088745f;
constexpr float kC2 = 0.49998894333839417f;
constexpr float kC1 = 0.9999997019767761f;
constexpr float kC0 = 1.0000001192092896f;
/// Below this, e^x is under 2^-126: 0.
constexpr float kExpMin = -87.3f;

#if defined(TERN_SIMD_X86_DISPATCH)
/// 2^n · e^r for z clamped by the caller to a range whose result is a normal float (|z| <=
/// 87.3): 16 lanes, AVX-512.
TERN_SIMD_TARGET_AVX512 inline __m512 exp_clamped_avx512(__m512 z) {
  constexpr __mmask16 kAll = 0xFFFF;  // the maskz forms: GCC 12's unmasked ones warn
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(z, _mm512_set1_ps(kLog2e)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), z);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kC5), r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC0));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

/// e^x for x <= 0 (attention's and the channel mix's softmax numerators): 0 below kExpMin
/// (and for -inf), NaN kept; 16 lanes, AVX-512.
TERN_SIMD_TARGET_AVX512 inline __m512 exp_nonpositive_avx512(__m512 x) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 e = exp_clamped_avx512(_mm512_maskz_max_ps(kAll, x, _mm512_set1_ps(kExpMin)));
  // x < kExpMin (and -inf): 0; an unordered compare keeps NaN (max(x, c) gave c for NaN x).
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_NLT_UQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(keep, e), nan, x);
}

/// The same in 8 lanes, AVX2 + FMA (2^n built in the exponent field: n in [-126, 0]).
TERN_SIMD_TARGET_AVX2 inline __m256 exp_nonpositive_avx2(__m256 x) {
  const __m256 z = _mm256_max_ps(x, _mm256_set1_ps(kExpMin));  // NaN x: kExpMin
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), z);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kC5), r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC0));
  // 2^n for n in [-126, 0]: n + 127 into the exponent field.
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_NLT_UQ);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(_mm256_and_ps(e, keep), x, nan);
}
#endif

}  // namespace tern::cpu::exp_poly
