// The f32 running sum, for the portable cumsum kernel and for backends that run it on their own
// threads (the cpu backend splits the outer slices over its pool): both give the same bits.
#pragma once

#include <cstdint>

namespace tern {
namespace portable {

/// y[o, k, i] = Σ_{j <= k} x[o, j, i] over x seen as [outer, size, inner] row-major, each sum
/// accumulated in double in order (as ATen's CPU kernel does). x and y do not overlap. Never
/// allocates.
void cumsum_f32(const float* x, float* y, int64_t outer, int64_t size, int64_t inner);

}  // namespace portable
}  // namespace tern
