// parse_blob's checks of tern's batched and grouped matrix products (internal to
// backends/cpu/runtime): BatchMatMul's operands, strides and output, GroupedMatmul's packed
// experts and the group ends input.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Op 26: a [..., M, K] and b [..., K, N] (or [..., N, K] transposed) of one rank with the same
/// batch dims, both data values; output [..., M, N].
Error check_batch_matmul(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Op 46: E, K, N; x [S, K] plain, the packed weights' size, the ends an external [E] input
/// (their int layout is checked with every node's inputs), the output [S, N] plain.
Error check_grouped_matmul(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
