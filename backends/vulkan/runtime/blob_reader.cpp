// Validation of a vulkan blob: every field is untrusted input (docs/architecture.md).
#include "backends/vulkan/runtime/blob_reader.h"

#include <cstdlib>
#include <cstring>

#include "backends/vulkan/runtime/node_checker.h"
#include "runtime/core/checked_math.h"

namespace tern::vulkan {
namespace {

constexpr uint32_t kMaxRecords = 1u << 20;

}  // namespace

const char* value_kind_name(uint32_t k) {
  switch (static_cast<ValueKind>(k)) {
    case ValueKind::Internal: return "internal";
    case ValueKind::ExternalInput: return "external input";
    case ValueKind::ExternalOutput: return "external output";
    case ValueKind::Constant: return "constant";
  }
  return "?";
}

const char* node_op_name(uint32_t op) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::MatMul: return "matmul";
    case NodeOp::Elementwise: return "elementwise";
    case NodeOp::Unary: return "unary";
    case NodeOp::Softmax: return "softmax";
    case NodeOp::LayerNorm: return "layer_norm";
    case NodeOp::Conv: return "conv";
    case NodeOp::ConvTranspose: return "conv_transpose";
    case NodeOp::Cumsum: return "cumsum";
    case NodeOp::ChannelAffine: return "channel_affine";
    case NodeOp::Pool2d: return "pool2d";
    case NodeOp::Copy: return "copy";
    case NodeOp::Reduce: return "reduce";
    case NodeOp::Embedding: return "embedding";
    case NodeOp::Attention: return "attention";
    case NodeOp::Pad: return "pad";
    case NodeOp::QuantLinear: return "quant_linear";
    case NodeOp::QuantEmbedding: return "quant_embedding";
    case NodeOp::Upsample2d: return "upsample2d";
    case NodeOp::GroupedMatmul: return "grouped_matmul";
    case NodeOp::QuantGroupedLinear: return "quant_grouped_linear";
  }
  return "?";
}

uint64_t value_numel(const BlobValue& v) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < v.rank && d < kMaxDims; ++d) n *= v.dims[d];
  return n;
}

uint64_t value_bytes(const BlobValue& v, uint32_t storage) {
  if (v.type == static_cast<uint32_t>(ValueType::Quant)) return v.data_bytes;
  if (v.type == static_cast<uint32_t>(ValueType::I64)) return value_numel(v) * 8;
  if (v.type == static_cast<uint32_t>(ValueType::I32)) return value_numel(v) * 4;
  return value_numel(v) * storage_element_bytes(storage);
}

bool node_input_type_ok(uint32_t op, uint32_t slot, uint32_t type) {
  const ValueType t = static_cast<ValueType>(type);
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Embedding:  // float-held indices: the node checker's params[4]
      return slot == 1 ? t == ValueType::I64 || t == ValueType::F32 || t == ValueType::I64AsFloat
                       : t == ValueType::F32;
    case NodeOp::QuantLinear: return t == (slot == 1 ? ValueType::Quant : ValueType::F32);
    case NodeOp::QuantEmbedding: return t == (slot == 0 ? ValueType::Quant : ValueType::I64);
    case NodeOp::GroupedMatmul:
    case NodeOp::QuantGroupedLinear:
      if (slot == 2) return t == ValueType::I32 || t == ValueType::I64;
      if (slot == 1 && op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        return t == ValueType::Quant;
      }
      return t == ValueType::F32;
    default:  // bools are 0 / 1 floats, an argmax's integers and a cast's int64 floats too
      return t == ValueType::F32 || t == ValueType::Bool || t == ValueType::I64AsFloat ||
             t == ValueType::I64CastToFloat;
  }
}

const char* node_input_type_text(uint32_t op, uint32_t slot) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Embedding: return slot == 1 ? "i64" : "f32";
    case NodeOp::QuantLinear: return slot == 1 ? "quantized weight" : "f32";
    case NodeOp::QuantEmbedding: return slot == 0 ? "quantized weight" : "i64";
    case NodeOp::GroupedMatmul:
    case NodeOp::QuantGroupedLinear:
      if (slot == 2) return "i32 or i64 (group ends)";
      if (slot == 1 && op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        return "quantized weight";
      }
      return "f32";
    default: return "f32 (a bool or integers held as floats too)";
  }
}

/// Whether value `v`'s type may have its kind (the value record's rules, README): f32 any;
/// i64 an input or a constant; i32 and i64-cast-to-floats an input; bool and i64-as-floats an
/// input or an output; a quantized weight a rank-2 constant of an f32-storage blob.
static bool value_type_allowed(const BlobValue& v, uint32_t storage) {
  const bool input = v.kind == static_cast<uint32_t>(ValueKind::ExternalInput);
  const bool edge = input || v.kind == static_cast<uint32_t>(ValueKind::ExternalOutput);
  const bool constant = v.kind == static_cast<uint32_t>(ValueKind::Constant);
  switch (static_cast<ValueType>(v.type)) {
    case ValueType::F32: return true;
    case ValueType::I64: return input || constant;
    case ValueType::I32:
    case ValueType::I64CastToFloat: return input;
    case ValueType::Bool:
    case ValueType::I64AsFloat: return edge;
    case ValueType::Quant: return constant && v.rank == 2 && storage == kStorageF32;
  }
  return false;  // past kLastValueType
}

static const char* value_type_name(uint32_t type) {
  switch (static_cast<ValueType>(type)) {
    case ValueType::F32: return "f32";
    case ValueType::I64: return "i64";
    case ValueType::Quant: return "quantized weight";
    case ValueType::I32: return "i32";
    case ValueType::Bool: return "bool";
    case ValueType::I64AsFloat: return "i64 as floats";
    case ValueType::I64CastToFloat: return "i64 cast to floats";
  }
  return "?";
}

void free_blob_plan(BlobPlan* plan) {
  std::free(plan->values);
  std::free(plan->nodes);
  plan->values = nullptr;
  plan->nodes = nullptr;
}

Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan) {
  TERN_CHECK_OR_RETURN_ERROR(blob.size() >= sizeof(BlobHeader), InvalidProgram,
                             "vulkan blob: %zu bytes, expected at least the %zu-byte header",
                             blob.size(), sizeof(BlobHeader));
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  TERN_CHECK_OR_RETURN_ERROR(std::memcmp(h.magic, kBlobMagic, 4) == 0, InvalidProgram,
                             "vulkan blob: magic %02x %02x %02x %02x, expected \"TVKN\"",
                             static_cast<uint8_t>(h.magic[0]), static_cast<uint8_t>(h.magic[1]),
                             static_cast<uint8_t>(h.magic[2]), static_cast<uint8_t>(h.magic[3]));
  TERN_CHECK_OR_RETURN_ERROR(h.version == kBlobVersion, DelegateInvalidCompatibility,
                             "vulkan blob: version %u, this runtime reads version %u", h.version,
                             kBlobVersion);
  TERN_CHECK_OR_RETURN_ERROR(h.storage <= kLastStorage, DelegateInvalidCompatibility,
                             "vulkan blob: storage type %u, this runtime implements f32 (0) and "
                             "f16 (1)", h.storage);
  TERN_CHECK_OR_RETURN_ERROR(h.header_size == sizeof(BlobHeader), InvalidProgram,
                             "vulkan blob: header_size %u, expected %zu", h.header_size,
                             sizeof(BlobHeader));
  TERN_CHECK_OR_RETURN_ERROR(h.value_record_size == sizeof(BlobValue), InvalidProgram,
                             "vulkan blob: value_record_size %u, expected %zu",
                             h.value_record_size, sizeof(BlobValue));
  TERN_CHECK_OR_RETURN_ERROR(h.node_record_size == sizeof(BlobNode), InvalidProgram,
                             "vulkan blob: node_record_size %u, expected %zu", h.node_record_size,
                             sizeof(BlobNode));
  TERN_CHECK_OR_RETURN_ERROR(h.num_values >= 1 && h.num_values <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_values %u, expected 1..%u", h.num_values,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(h.num_nodes >= 1 && h.num_nodes <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_nodes %u, expected 1..%u", h.num_nodes,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(h.num_args <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_args %u, expected at most %u", h.num_args,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(h.workgroup_size) && h.workgroup_size >= 32 &&
                                 h.workgroup_size <= 1024,
                             InvalidProgram,
                             "vulkan blob: workgroup_size %u, expected a power of two in "
                             "[32, 1024]", h.workgroup_size);
  TERN_CHECK_OR_RETURN_ERROR(h.matmul_tile == 8 || h.matmul_tile == 16 || h.matmul_tile == 32,
                             InvalidProgram, "vulkan blob: matmul_tile %u, expected 8, 16 or 32",
                             h.matmul_tile);
  TERN_CHECK_OR_RETURN_ERROR(h.reserved == 0, InvalidProgram,
                             "vulkan blob: reserved header field %u, expected 0", h.reserved);
  const uint64_t tables = sizeof(BlobHeader) + uint64_t{h.num_values} * sizeof(BlobValue) +
                          uint64_t{h.num_nodes} * sizeof(BlobNode);
  TERN_CHECK_OR_RETURN_ERROR(h.data_offset % kDataAlignment == 0 && h.data_offset >= tables,
                             InvalidProgram,
                             "vulkan blob: data_offset %llu, expected a multiple of %llu at or "
                             "after the tables' end %llu",
                             static_cast<unsigned long long>(h.data_offset),
                             static_cast<unsigned long long>(kDataAlignment),
                             static_cast<unsigned long long>(tables));
  TERN_CHECK_OR_RETURN_ERROR(range_within(h.data_offset, h.data_size, blob.size()),
                             InvalidProgram,
                             "vulkan blob: data section [%llu, +%llu) past the blob's %zu bytes",
                             static_cast<unsigned long long>(h.data_offset),
                             static_cast<unsigned long long>(h.data_size), blob.size());

  plan->header = h;
  plan->values = static_cast<BlobValue*>(std::malloc(h.num_values * sizeof(BlobValue)));
  plan->nodes = static_cast<BlobNode*>(std::malloc(h.num_nodes * sizeof(BlobNode)));
  if (plan->values == nullptr || plan->nodes == nullptr) {
    free_blob_plan(plan);
    TERN_RETURN_ERROR(MemoryAllocationFailed, "vulkan blob: no memory for %u values, %u nodes",
                      h.num_values, h.num_nodes);
  }
  std::memcpy(plan->values, blob.data() + sizeof(BlobHeader), h.num_values * sizeof(BlobValue));
  std::memcpy(plan->nodes, blob.data() + sizeof(BlobHeader) + h.num_values * sizeof(BlobValue),
              h.num_nodes * sizeof(BlobNode));
  plan->data = blob.data() + h.data_offset;
  plan->data_size = h.data_size;

  // Values.
  bool* arg_seen = static_cast<bool*>(std::calloc(h.num_args + 1, 1));
  bool* written = static_cast<bool*>(std::calloc(h.num_values, 1));
  Error err = Error::Ok;
  if (arg_seen == nullptr || written == nullptr) {
    err = set_error_message(Error::MemoryAllocationFailed, "vulkan blob: no memory to check");
  }
  for (uint32_t i = 0; err == Error::Ok && i < h.num_values; ++i) {
    const BlobValue& v = plan->values[i];
    if (v.kind > static_cast<uint32_t>(ValueKind::Constant)) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: value %u: kind %u, expected 0..3", i, v.kind);
      break;
    }
    if (!value_type_allowed(v, h.storage)) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s, rank %u): type %u, expected 0 (f32), 1 "
                              "(i64), 3 (i32), 4 (bool), 5 (i64 as floats) or 6 (i64 cast to "
                              "floats) for an external input, 0, 4 or 5 for an external output, 0 for an internal "
                              "value, 0, 1 or 2 (quantized: rank 2, an f32-storage blob) for a "
                              "constant (storage %u)", i,
                              value_kind_name(v.kind), v.rank, v.type, h.storage);
      break;
    }
    if (v.rank > kMaxDims) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: value %u: rank %u, expected 0..%u", i, v.rank, kMaxDims);
      break;
    }
    uint64_t n = 1;
    for (uint32_t d = 0; d < kMaxDims && err == Error::Ok; ++d) {
      const bool used = d < v.rank;
      if ((used && (v.dims[d] < 1 || v.dims[d] > kMaxElements)) || (!used && v.dims[d] != 0)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: value %u: dims[%u] = %llu, expected %s", i, d,
                                static_cast<unsigned long long>(v.dims[d]),
                                used ? "1..2^30" : "0 (past the rank)");
      } else if (used) {
        n *= v.dims[d];
        if (n > kMaxElements) {
          err = set_error_message(Error::InvalidProgram,
                                  "vulkan blob: value %u: more than 2^30 elements", i);
        }
      }
    }
    if (err != Error::Ok) break;
    const bool external = v.kind == static_cast<uint32_t>(ValueKind::ExternalInput) ||
                          v.kind == static_cast<uint32_t>(ValueKind::ExternalOutput);
    if (external) {
      if (v.arg >= h.num_args || arg_seen[v.arg]) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: value %u (%s): arg %u, expected an unused argument "
                                "below num_args %u", i, value_kind_name(v.kind), v.arg, h.num_args);
        break;
      }
      arg_seen[v.arg] = true;
    } else if (v.arg != kNoValue) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s): arg %u, expected none (0xFFFFFFFF)", i,
                              value_kind_name(v.kind), v.arg);
      break;
    }
    if (v.kind == static_cast<uint32_t>(ValueKind::Constant)) {
      // A quantized weight's exact size follows its scheme, which the nodes reading it hold
      // (NodeChecker::quant_weight); here only a whole number of words.
      const bool quant = v.type == static_cast<uint32_t>(ValueType::Quant);
      const uint64_t elem = v.type == static_cast<uint32_t>(ValueType::I64)
                                ? 8
                                : storage_element_bytes(h.storage);
      const bool size_ok = quant ? v.data_bytes >= 4 && v.data_bytes % 4 == 0 &&
                                       v.data_bytes <= 8 * kMaxElements
                                 : v.data_bytes == elem * n;
      if (!size_ok || v.data_offset % kDataAlignment != 0 ||
          !range_within(v.data_offset, v.data_bytes, h.data_size)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: constant %u: [%llu, +%llu) bytes, expected %s%llu "
                                "bytes at a multiple of %llu inside the %llu-byte data section",
                                i, static_cast<unsigned long long>(v.data_offset),
                                static_cast<unsigned long long>(v.data_bytes),
                                quant ? "a positive multiple of 4 (quantized), at most " : "",
                                static_cast<unsigned long long>(quant ? 8 * kMaxElements
                                                                      : elem * n),
                                static_cast<unsigned long long>(kDataAlignment),
                                static_cast<unsigned long long>(h.data_size));
        break;
      }
      written[i] = true;
    } else if (v.data_offset != 0 || v.data_bytes != 0) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s): data [%llu, +%llu), expected none", i,
                              value_kind_name(v.kind), static_cast<unsigned long long>(v.data_offset),
                              static_cast<unsigned long long>(v.data_bytes));
      break;
    }
    if (v.kind == static_cast<uint32_t>(ValueKind::ExternalInput)) written[i] = true;
  }
  // Nodes, in order: operands in range and already written; outputs not read-only.
  for (uint32_t n = 0; err == Error::Ok && n < h.num_nodes; ++n) {
    const BlobNode& node = plan->nodes[n];
    if (node.num_inputs < 1 || node.num_inputs > kMaxNodeInputs) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s): num_inputs %u, expected 1..%u", n,
                              node_op_name(node.op), node.num_inputs, kMaxNodeInputs);
      break;
    }
    for (uint32_t i = 0; i < kMaxNodeInputs && err == Error::Ok; ++i) {
      const uint32_t id = node.inputs[i];
      if (i >= node.num_inputs) {
        if (id != kNoValue) {
          err = set_error_message(Error::InvalidProgram,
                                  "vulkan blob: node %u: unused input %u = %u, expected none", n,
                                  i, id);
        }
      } else if (id >= h.num_values || !written[id]) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): input %u is value %u, expected a "
                                "value below %u written before the node", n,
                                node_op_name(node.op), i, id, h.num_values);
      } else if (!node_input_type_ok(node.op, i, plan->values[id].type)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): input %u (value %u) is %s, expected %s",
                                n, node_op_name(node.op), i, id,
                                value_type_name(plan->values[id].type),
                                node_input_type_text(node.op, i));
      }
    }
    if (err != Error::Ok) break;
    const uint32_t o = node.output;
    if (o >= h.num_values || (plan->values[o].kind != static_cast<uint32_t>(ValueKind::Internal) &&
                              plan->values[o].kind != static_cast<uint32_t>(ValueKind::ExternalOutput))) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s): output value %u, expected an internal "
                              "or external output value below %u", n, node_op_name(node.op), o,
                              h.num_values);
      break;
    }
    for (uint32_t i = 0; i < node.num_inputs; ++i) {
      if (node.inputs[i] == o) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): output value %u is also its input %u",
                                n, node_op_name(node.op), o, i);
      }
    }
    if (err != Error::Ok) break;
    if (h.storage != kStorageF32 && (node.op == static_cast<uint32_t>(NodeOp::QuantLinear) ||
                                     node.op == static_cast<uint32_t>(NodeOp::QuantEmbedding) ||
                                     node.op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear))) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s) in a blob of storage %u: quantized "
                              "weights need f32 storage (0)", n, node_op_name(node.op), h.storage);
      break;
    }
    if (node.reserved != 0) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: node %u: reserved %u, expected 0", n, node.reserved);
      break;
    }
    err = check_node(*plan, n);
    written[o] = true;
  }
  for (uint32_t i = 0; err == Error::Ok && i < h.num_values; ++i) {
    if (!written[i]) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s) is never written", i,
                              value_kind_name(plan->values[i].kind));
    }
  }
  std::free(arg_seen);
  std::free(written);
  if (err != Error::Ok) free_blob_plan(plan);
  return err;
}

}  // namespace tern::vulkan
