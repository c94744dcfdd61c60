// Parsing and full validation of an untrusted cuda blob (internal to the cuda backend). Host
// code only (no CUDA): fuzzable and testable without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_blob_format.h"
#include "runtime/core/error.h"
#include "runtime/core/span.h"

namespace tern::cuda {

/// A validated blob: heap copies of its tables, owned by the plan (free with free_blob_plan).
/// The blob itself is not referenced afterwards.
struct BlobPlan {
  BlobHeader header{};
  BlobValue* values = nullptr;  ///< header.num_values records
  BlobNode* nodes = nullptr;    ///< header.num_nodes records
};

/// Parses and checks every field of `blob`: magic, version, sizes, the three buffer sizes,
/// every value (kind, dtype, rank, dims, bytes, argument, alias, offset within its buffer) and
/// every node (op, operand slots, dtypes, each value made once and before it is read, every
/// parameter, and the output shape against the inputs and parameters; every index a kernel
/// will compute stays inside its tensor). On success fills *plan. Errors, each with a message
/// naming the field, the value/node index, what was expected and what was found:
/// DelegateInvalidCompatibility for another blob version or a compute dtype this runtime does
/// not run (the method then takes its portable fallback); InvalidProgram for anything
/// malformed; MemoryAllocationFailed when the tables cannot be copied. Any alignment of `blob`.
Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan);

/// Frees what parse_blob allocated; safe on a default plan and twice.
void free_blob_plan(BlobPlan* plan);

/// Element count of a validated value.
uint64_t value_numel(const BlobValue& v);

/// The op's name as messages show it ("gemm"; "?" for an unknown op).
const char* node_op_name(uint32_t op);

}  // namespace tern::cuda
