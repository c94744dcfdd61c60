// softplus of one f32 value, for the portable softplus kernel and the cpu backend's unary math
// node: one expression, so both give the same bits.
#pragma once

#include <cmath>

namespace tern {
namespace portable {

/// x · beta > threshold ? x : log1p(e^(x · beta)) / beta (ATen's definition, in f32).
inline float softplus_value(float x, float beta, float threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

}  // namespace portable
}  // namespace tern
