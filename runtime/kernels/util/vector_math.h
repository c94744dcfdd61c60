// Branchless f32 math that the compiler vectorizes: e^x for x <= 0, e^(-x^2/2) to a few ulp
// over the whole range, and the two GELU forms built on them. No table lookups, no calls, no
// branches: a loop applying these to an array compiles to straight vector code (std::exp,
// std::erf and std::tanh are library calls the vectorizer cannot use).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/kernels/util/simd_dispatch.h"

namespace tern::portable::vmath {

TERN_SIMD_INLINE uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

TERN_SIMD_INLINE float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// c ? a : b through bit masks. A plain ?: lets GCC sink the computation of the unused side
/// into a branch, which it then will not vectorize without AVX-512 masking (it may not
/// speculate floating-point operations under -ftrapping-math); masks keep the code branchless.
TERN_SIMD_INLINE float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return float_of((bits_of(a) & m) | (bits_of(b) & ~m));
}

/// e^(hi + lo) for hi <= 0 (or NaN, which propagates) and a small correction |lo| <= 0.085.
///
/// Cody-Waite reduction: n = round(hi / ln 2) and r = hi - n ln 2 + lo, with ln 2 split into a
/// 16-bit head (n * head is exact) and a tail; e^r by its Taylor series to degree 7 (|r| <=
/// ln 2 / 2 + 0.085 = 0.43 for the arguments used here, truncation below 3e-8 relative); 2^n
/// written into the exponent field. Results below 2^-126 (hi < -87.3, the subnormal range)
/// are flushed to 0; -inf gives 0.
TERN_SIMD_INLINE float exp_nonpositive_split(float hi, float lo) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kShifter = 12582912.0f;       // 1.5 * 2^23: t + kShifter rounds t to an integer
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 to 16 bits
  constexpr float kLn2Lo = 1.42860682030941723e-6f;  // ln 2 - kLn2Hi
  const float t = hi * kLog2e + kShifter;            // the low mantissa bits of t hold n
  const float n = t - kShifter;
  const float r = ((hi - n * kLn2Hi) + lo) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n: n + 127 in the exponent field (t's bits are 0x4B400000 + n for |n| < 2^22).
  const float scale = float_of((bits_of(t) - 0x4B400000u + 127u) << 23);
  return select(hi < -87.3f, 0.0f, p * scale);
}

/// e^x for x <= 0 (NaN propagates; below -87.3 gives 0).
TERN_SIMD_INLINE float exp_nonpositive(float x) { return exp_nonpositive_split(x, 0.0f); }

/// e^(-x^2 / 2) with a relative error of a few ulp for any x: x^2 is split into an exact head
/// (x rounded to 12 significant bits, squared) and a small tail, so the rounding of x^2 (up to
/// 87 * 2^-24 in the exponent) does not reach the result.
TERN_SIMD_INLINE float exp_neg_half_square(float x) {
  const float x_hi = float_of(bits_of(x) & 0xFFFFF000u);
  const float x_lo = x - x_hi;
  const float hi = -0.5f * (x_hi * x_hi);
  const float lo = -0.5f * (x_lo * (x + x_hi));
  return exp_nonpositive_split(hi, lo);
}

/// GELU, exact form: x * Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, by one formula for every x.
///
/// With a = |x| / sqrt 2: Phi(x) = erfc(a) / 2 for x < 0 and 1 - erfc(a) / 2 for x >= 0, and
/// erfc(a) / 2 = t * Q(t - 1/2) * e^(-a^2), t = 2 / (2 + |x|) in (0, 1] -- the form of
/// Abramowitz & Stegun 7.1.26 and of the "erfcc" of Numerical Recipes, with a degree-10 Q of
/// our own (scripts/fit-gelu-erfc.py: relative least squares against mpmath over t in
/// [0.13, 1], 2.3e-8 before f32 rounding; halved here, exactly). erfc keeps its relative
/// accuracy far into the negative tail, where 1 + erf(...) in f32 cancels; for x >= 0,
/// erfc(a) / 2 <= 1/2, so 1 - erfc(a) / 2 loses nothing either. Powers of t - 1/2 keep the
/// coefficients small near t = 1 (small |x|), where powers of t would cancel.
///
/// Measured against long double over [-13, 14] (every fifth f32), every variant: at most 5.9
/// ulp of the exact GELU of the f32 input (the std::erf form: 14 ulp at x = -2, 4000 at x = -4,
/// no correct digit below x = -5.55 where it gives 0); tests/kernels/gelu_accuracy_test.cpp
/// holds it to 8. Results below 2^-126 in magnitude (x < -13.2) flush to -0. One formula where
/// an earlier version also evaluated a series for |x| < 1 and selected between them: 14-16%
/// less time per element (bench/gelu_micro.cpp on an Intel Xeon, docs/BENCHMARKS.md).
TERN_SIMD_INLINE float gelu_erf(float x) {
  const float ax = std::fabs(x);
  const float t = 2.0f / (2.0f + ax);
  const float s = t - 0.5f;
  float q = -3.543714434e-02f;
  q = q * s - 1.056601480e-02f;
  q = q * s + 9.194263816e-02f;
  q = q * s - 5.578698590e-02f;
  q = q * s - 6.047225744e-02f;
  q = q * s + 1.079448014e-01f;
  q = q * s - 3.863976104e-03f;
  q = q * s - 1.468833834e-01f;
  q = q * s + 5.759671703e-02f;
  q = q * s + 3.314045370e-01f;
  q = q * s + 3.362039924e-01f;
  const float half_erfc_a = (t * q) * exp_neg_half_square(x);
  return x * select(x < 0.0f, half_erfc_a, 1.0f - half_erfc_a);
}

/// GELU, tanh form: x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3), computed as
/// x * sigmoid(2u) = x / (1 + e^(-2u)), with e^(-2|u|) so the exponential never overflows:
/// x / (1 + e) for u >= 0, x * e / (1 + e) for u < 0. No cancellation for negative x (where
/// 1 + tanh(u) in f32 is 0 from x < -4.5 on); results flush to -0 once e < 2^-126 (x < -10).
TERN_SIMD_INLINE float gelu_tanh(float x) {
  constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  const float u = kBeta * (x + kKappa * (x * x * x));
  const float e = exp_nonpositive(-2.0f * std::fabs(u));
  const float num = select(u < 0.0f, e, 1.0f);
  return x * num / (1.0f + e);
}

}  // namespace tern::portable::vmath
