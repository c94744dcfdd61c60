// parse_blob's check of tern's 3-D convolution node (op 33; internal to backends/cpu/runtime):
// its window parameters, channels, groups and activation, the input's rank and channels, the
// packed weight's size, the residual's and the output's dims. Errors name the node, the field,
// what was expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Node `n` (op 33) with values `v` (already checked to exist and to be made before the node;
/// the weight a constant).
Error check_packed_conv3d(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
