#include "backends/cpu/runtime/blob_dynamic_checks.h"

namespace tern::cpu {

Error check_dynamic_value(uint32_t i, const BlobValue& v) {
  if (!is_dynamic_value(v)) return Error::Ok;
  const ValueKind k = static_cast<ValueKind>(v.kind);
  TERN_CHECK_OR_RETURN_ERROR(
      (k == ValueKind::Internal || k == ValueKind::ExternalInput ||
       k == ValueKind::ExternalOutput) &&
          v.layout == static_cast<uint32_t>(ValueLayout::Plain),
      InvalidProgram,
      "cpu blob: value %u: dynamic mask 0x%x on a value of kind %u and layout %u, expected a "
      "plain (layout 0) internal or external value",
      i, v.dynamic_mask, v.kind, v.layout);
  const uint32_t d = dynamic_dim_of(v);
  TERN_CHECK_OR_RETURN_ERROR((v.dynamic_mask & (v.dynamic_mask - 1)) == 0 && v.rank >= 2 &&
                                 d + 1 < v.rank,
                             InvalidProgram,
                             "cpu blob: value %u: dynamic mask 0x%x of a rank-%u value, expected "
                             "one bit for a dim before the last",
                             i, v.dynamic_mask, v.rank);
  return Error::Ok;
}

Error check_dynamic_node(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const NodeOp op = static_cast<NodeOp>(node.op);
  const bool gemm = op == NodeOp::PackedFullyConnected || op == NodeOp::QuantizedFullyConnected;
  const BlobValue& out = v[node.output];
  for (uint32_t i = 0; i < node.num_inputs; ++i) {
    const BlobValue& in = v[node.inputs[i]];
    if (!is_dynamic_value(in)) continue;
    const bool row_operand = gemm && (i == 0 || (i >= 2 && op == NodeOp::PackedFullyConnected));
    TERN_CHECK_OR_RETURN_ERROR(row_operand, InvalidProgram,
                               "cpu blob: node %u (op %u): input %u (value %u) is dynamic, which "
                               "only x of a fully-connected node (ops 17, 23) or op 17's "
                               "residual or multiplier may be",
                               n, node.op, i, node.inputs[i]);
    TERN_CHECK_OR_RETURN_ERROR(out.dynamic_mask == in.dynamic_mask, InvalidProgram,
                               "cpu blob: node %u (op %u): input %u (value %u) has dynamic mask "
                               "0x%x, its output (value %u) 0x%x",
                               n, node.op, i, node.inputs[i], in.dynamic_mask, node.output,
                               out.dynamic_mask);
  }
  if (is_dynamic_value(out)) {
    TERN_CHECK_OR_RETURN_ERROR(gemm && is_dynamic_value(v[node.inputs[0]]), InvalidProgram,
                               "cpu blob: node %u (op %u): its output (value %u) is dynamic, "
                               "which only a fully-connected node (ops 17, 23) with a dynamic x "
                               "may make",
                               n, node.op, node.output);
  }
  return Error::Ok;
}

}  // namespace tern::cpu
