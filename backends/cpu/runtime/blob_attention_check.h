// parse_blob's check of the fused attention node (op 32; internal to backends/cpu/runtime): the
// operands' ranks and dims, the mask's broadcast over the heads, the causal period, the flags
// and the scale. Errors name the node, the field, what was expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Node `n` (op 32) with values `v` (already checked to exist, made before the node, q, k and v
/// data values).
Error check_attention(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
