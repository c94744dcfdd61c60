// parse_blob's check of tern's GroupSum node (op 48; internal to backends/cpu/runtime): its
// parts are NHWC values of whole groups of the output's channels, the weight (when there is
// one) has an element per sample, group and channel. Errors name the node, the input, what was
// expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Node `n` (op 48) with values `v` (already checked to exist, the inputs f32 data values).
Error check_group_sum(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
