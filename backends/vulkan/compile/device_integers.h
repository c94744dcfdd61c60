// Integers the vulkan delegate makes on the device (internal to backends/vulkan/compile): an
// argmax's / argmin's indices, and views and copies of them, are held as floats of the
// storage type (blob version 10), so a codebook lookup after a nearest-code search (VQ
// autoencoders, DAC's quantizers) stays in the delegate. An int64 value read only by casts (an
// attention mask's int64 -> bool, a timestep's int64 -> float) enters as floats rounded at the
// edge (blob version 11). Other integers (embedding ids) keep their int64 bytes.
#pragma once

#include <cstdint>

#include "tools/compiler/graph.h"

namespace tern::compiler::vulkan_compile {

/// For an int64 graph tensor made by tern::argmax / argmin, or by data movement of such
/// tensors only: one more than the largest value it can hold (the reduced element count).
/// 0 for anything else.
int64_t device_integer_bound(const Graph& g, int id);

/// Whether int64 graph tensor `id` is an activation (not a constant, state or method output)
/// whose every reader is a tern::cast to f32 or bool: the delegate may take it as floats
/// rounded from the int64 values, since those casts give the same result from them.
bool read_only_by_casts(const Graph& g, int id);

}  // namespace tern::compiler::vulkan_compile
