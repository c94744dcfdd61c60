// Parsing and full validation of an untrusted cpu blob (internal to the cpu backend).
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"
#include "runtime/core/span.h"

namespace tern::cpu {

/// A validated blob. `values`, `nodes` and `recipes` are heap copies owned by the plan (free
/// them with free_blob_plan); `data` points into the blob, which must outlive the plan.
struct BlobPlan {
  BlobHeader header{};
  BlobValue* values = nullptr;
  BlobNode* nodes = nullptr;
  BlobRecipe* recipes = nullptr;  ///< header.num_recipes
  const uint8_t* data = nullptr;  ///< the data section (4-byte aligned)
  uint64_t data_size = 0;
  bool dynamic = false;  ///< some value has a dynamic dim (blob_dynamic_checks.h)
};

/// Parses and checks every field of `blob` (magic, version, sizes, ranges, value kinds, each
/// recipe against the value it makes and its sources, node operands and each node's output
/// shape against its inputs and parameters). The sources' bytes are the delegate call's
/// arguments, checked at prepare. On success fills
/// *plan. Errors (with a message naming the field, the value/node index, expected and found):
/// DelegateInvalidCompatibility for another blob version; InvalidProgram for anything
/// malformed; MemoryAllocationFailed when the tables cannot be copied. `blob` must be 4-byte
/// aligned (the caller copies it otherwise).
Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan);

/// Frees what parse_blob allocated; safe on a default plan.
void free_blob_plan(BlobPlan* plan);

/// Element count of value `v` (validated: no overflow).
uint64_t value_numel(const BlobValue& v);

/// The op's name as messages show it ("packed_conv2d"; "?" for an unknown op).
const char* node_op_name(uint32_t op);

/// Node `n` takes no output bounds: fparams exactly (-inf, +inf), else InvalidProgram naming
/// the node.
Error check_unbounded(uint32_t n, const BlobNode& node);

/// Node `n`'s params: those from `count` on 0, the others at most kMaxParam, and those in
/// [min_from, min_to) at least 1; else InvalidProgram naming the parameter.
Error check_params_range(uint32_t n, const BlobNode& node, uint32_t count, uint32_t min_from,
                         uint32_t min_to);

/// `dims` as "[1, 56, 56, 64]" in buf (truncated to size); returns buf.
const char* format_dims(const uint64_t* dims, uint32_t rank, char* buf, size_t size);

}  // namespace tern::cpu
