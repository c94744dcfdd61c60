// Helpers shared by parse_blob's node checks (internal to backends/cpu/runtime): dims compared
// and printed, the output's and the residual's dims checked with messages naming the node,
// and which nodes carry a post-activation affine input.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Largest dim taken (keeps every product below 2^62; node parameters: kMaxParam).
constexpr uint64_t kMaxDim = uint64_t{1} << 31;

/// Whether the node's flags say its last input is a post-activation affine (op 17's
/// kFcPostAffine, op 21's kBottleneckHasPostAffine; each checked with its op).
bool has_post_affine(const BlobNode& node);

/// Whether v has exactly `rank` dims equal to dims[0..rank). (Printing dims: format_dims,
/// blob_reader.h.)
bool dims_equal(const BlobValue& v, const uint64_t* dims, uint32_t rank);

Error check_out_dims(uint32_t n, const BlobNode& node, const BlobValue& out, const uint64_t* expect,
                     uint32_t rank);

/// A 3rd input (the residual of tern's packed ops), when the node has one, has dims `expect`; or an
/// error.
Error check_residual(uint32_t n, const BlobNode& node, const BlobValue* v, const uint64_t* expect,
                     uint32_t rank);

}  // namespace tern::cpu
