#include "backends/cpu/runtime/blob_check_util.h"

#include <cstdio>

#include "backends/cpu/runtime/blob_reader.h"

namespace tern::cpu {

/// Whether the node's flags say its last input is a post-activation affine (op 17's
/// kFcPostAffine, op 21's kBottleneckHasPostAffine; each checked with its op).
bool has_post_affine(const BlobNode& node) {
  if (node.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
    return node.params[kFcEpilogueFlags] == kFcPostAffine;
  }
  return node.op == static_cast<uint32_t>(NodeOp::PackedBottleneck) &&
         (node.params[kBottleneckFlags] & kBottleneckHasPostAffine) != 0;
}

bool dims_equal(const BlobValue& v, const uint64_t* dims, uint32_t rank) {
  if (v.rank != rank) return false;
  for (uint32_t i = 0; i < rank; ++i) {
    if (v.dims[i] != dims[i]) return false;
  }
  return true;
}

const char* format_dims(const uint64_t* dims, uint32_t rank, char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  used += static_cast<size_t>(snprintf(buf, size, "["));
  for (uint32_t i = 0; i < rank && used < size; ++i) {
    used += static_cast<size_t>(snprintf(buf + used, size - used, "%s%llu", i ? ", " : "",
                                         static_cast<unsigned long long>(dims[i])));
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

Error check_out_dims(uint32_t n, const BlobNode& node, const BlobValue& out, const uint64_t* expect,
                     uint32_t rank) {
  if (dims_equal(out, expect, rank)) return Error::Ok;
  char a[128], b[128];
  TERN_RETURN_ERROR(InvalidProgram,
                    "cpu blob: node %u (%s): output value %u has dims %s, the inputs and "
                    "parameters give %s",
                    n, node_op_name(node.op), node.output, format_dims(out.dims, out.rank, a, sizeof(a)),
                    format_dims(expect, rank, b, sizeof(b)));
}

/// A 3rd input (the residual of tern's packed ops), when the node has one, has dims `expect`; or an
/// error.
Error check_residual(uint32_t n, const BlobNode& node, const BlobValue* v, const uint64_t* expect,
                     uint32_t rank) {
  if (node.num_inputs != 3 || dims_equal(v[node.inputs[2]], expect, rank)) return Error::Ok;
  char a[128], b[128];
  TERN_RETURN_ERROR(InvalidProgram,
                    "cpu blob: node %u (%s): residual value %u has dims %s, expected the "
                    "output's %s",
                    n, node_op_name(node.op), node.inputs[2],
                    format_dims(v[node.inputs[2]].dims, v[node.inputs[2]].rank, a, sizeof(a)),
                    format_dims(expect, rank, b, sizeof(b)));
}

}  // namespace tern::cpu
