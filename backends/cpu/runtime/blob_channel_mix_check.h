// parse_blob's check of tern's ChannelMix node (op 49; internal to backends/cpu/runtime): x is
// a plain value whose dim d is mixed, the matrix has J K elements, the bias J, the output is
// x's dims with dim d J. Errors name the node, the input, what was expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Node `n` (op 49) with values `v` (already checked to exist: x an f32 data value, w and b
/// constants).
Error check_channel_mix(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
