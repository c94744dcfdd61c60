// tern's elementwise math functions XNNPACK's subgraph API lacks (the cpu delegate's op 38):
// exp and softplus (Mamba's step sizes and decays), sin and cos (the Snake activation of audio
// decoders, sinusoidal embeddings), log (log-mel spectrograms), expm1 and log1p (xIELU, xLSTM's
// gates), acos, asin, atan and x^e by a constant e (YOSO's collision probabilities), each
// element computed with the same libm
// expression as the portable kernel (runtime/kernels/portable: unary_math.cpp, activation.cpp),
// so the delegate's result equals the portable one bit for bit (but for subnormal results,
// which the delegate flushes to zero like all its kernels).
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// The function (the blob's op 38 params[0]).
enum class UnaryMathFn : uint32_t {
  Exp = 1,       ///< e^x
  Softplus = 2,  ///< x · beta > threshold ? x : log1p(e^(x · beta)) / beta
  Sin = 3,       ///< since blob version 19
  Cos = 4,
  Log = 5,       ///< natural logarithm
  Expm1 = 6,     ///< e^x - 1, exact near 0 (since blob version 21)
  Log1p = 7,     ///< log(1 + x), exact near 0 (since blob version 21)
  Acos = 8,      ///< since blob version 22
  Asin = 9,
  Atan = 10,
  Pow = 11,      ///< x^e for a constant e (`beta` holds it; since blob version 22)
};
constexpr uint32_t kLastUnaryMathFn = 11;

struct UnaryMathProblem {
  UnaryMathFn fn = UnaryMathFn::Exp;
  float beta = 1.0f;        ///< softplus; pow's exponent
  float threshold = 20.0f;  ///< softplus only
  const float* x = nullptr;
  float* y = nullptr;  ///< may be x
  int64_t n = 0;
};

/// y = fn(x) over n elements, split over `pool` in chunks (null: the caller's thread).
void unary_math(const UnaryMathProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
