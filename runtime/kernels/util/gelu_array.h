// GELU over a float array, for the portable gelu kernel and for backends that run it on their
// own threads (the cpu backend splits an array over its pool).
#pragma once

#include <cstdint>

namespace tern {
namespace portable {

/// y[i] = gelu(x[i]) for i < n: the erf form, or the tanh form when `tanh_form`. x and y may be
/// the same array (not otherwise overlapping). At most 5.6 ulp from the exact GELU of the f32
/// input (vector_math.h). Never allocates.
void gelu_f32(bool tanh_form, const float* x, float* y, int64_t n);

}  // namespace portable
}  // namespace tern
