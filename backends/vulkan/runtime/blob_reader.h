// Parsing and full validation of an untrusted vulkan blob (internal to the vulkan backend).
#pragma once

#include <cstdint>

#include "backends/vulkan/vulkan_blob_format.h"
#include "runtime/core/error.h"
#include "runtime/core/span.h"

namespace tern::vulkan {

/// A validated blob. `values` and `nodes` are heap copies owned by the plan (free them with
/// free_blob_plan); `data` points into the blob, which must outlive the plan's use of it.
struct BlobPlan {
  BlobHeader header{};
  BlobValue* values = nullptr;
  BlobNode* nodes = nullptr;
  const uint8_t* data = nullptr;  ///< the data section
  uint64_t data_size = 0;
};

/// Parses and checks every field of `blob`: magic, version, sizes, ranges, value kinds and
/// dims, constant placement, argument indices, node operands, and for each node that its
/// parameters keep every shader access inside the buffers it binds (the shaders do not bound
/// check). Errors name the field, the value or node index, what was expected and what was
/// found: DelegateInvalidCompatibility for another version or an unknown storage type;
/// InvalidProgram for anything malformed (quantized weights in an f16-storage blob too);
/// MemoryAllocationFailed when the tables cannot be copied.
Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan);

/// Frees what parse_blob allocated; safe on a default plan.
void free_blob_plan(BlobPlan* plan);

/// Element count of a validated value (1 for rank 0).
uint64_t value_numel(const BlobValue& v);
/// Bytes of a validated value on the device under the blob's `storage` (an f32 value 4 or, with
/// kStorageF16, 2 per element; i64 8; i32 4; a quantized weight's data_bytes).
uint64_t value_bytes(const BlobValue& v, uint32_t storage);

/// Whether input `slot` of a node of `op` may be a value of `type` (f32 unless the op says:
/// embedding indices i64, group ends i32 or i64, quantized weights).
bool node_input_type_ok(uint32_t op, uint32_t slot, uint32_t type);
/// What input `slot` of a node of `op` takes, as messages show it ("f32", "i64", ...).
const char* node_input_type_text(uint32_t op, uint32_t slot);

/// The op's name as messages show it ("matmul"; "?" for an unknown op).
const char* node_op_name(uint32_t op);
/// A value kind's name as messages show it ("external input"; "?" for an unknown kind).
const char* value_kind_name(uint32_t kind);

}  // namespace tern::vulkan
