// One row of attention scores turned into softmax numerators in place, for the fused attention
// (fused_attention.h): x = s · scale (+ mask) over the attended keys, then e^(x - max(x)),
// zeros after them. AVX-512 and AVX2 in intrinsics, plain loops elsewhere; picked at run time.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <cstdint>

namespace tern::cpu {

/// s[0, keys): for j < lim, s[j] = e^(s[j] · scale + mask[j] - m) with m the maximum of those
/// (mask null: no mask); s[j] = 0 for lim <= j < keys. Returns 1 / sum of the numerators, or 0
/// when every x is -inf (nothing attended; s is then all zeros). NaN in x makes the sum, and so
/// the result, NaN. e^y is below 2^-126 relative error 3e-7 (exact 0 for y < -87.3).
using AttentionSoftmaxRowFn = float (*)(float* s, int64_t lim, int64_t keys, float scale,
                                        const float* mask);

/// The variant for this CPU (within portable::simd_level_cap()).
AttentionSoftmaxRowFn attention_softmax_row();

}  // namespace tern::cpu
