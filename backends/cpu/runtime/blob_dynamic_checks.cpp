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

namespace {

bool is_gemm(NodeOp op) { return is_gemm_op(static_cast<uint32_t>(op)); }

/// Ops whose static operands broadcast against the output (XNNPACK's binary nodes).
bool is_broadcasting(NodeOp op) {
  return (op >= NodeOp::Add && op <= NodeOp::Divide) || op == NodeOp::Maximum ||
         op == NodeOp::Minimum;
}

}  // namespace

bool is_dynamic_rows_op(uint32_t op) {
  const NodeOp o = static_cast<NodeOp>(op);
  return is_gemm(o) || o == NodeOp::FullyConnected || (o >= NodeOp::Add && o <= NodeOp::Softmax) ||
         o == NodeOp::Reshape || o == NodeOp::Gelu || o == NodeOp::LayerNorm ||
         o == NodeOp::SquareRoot || o == NodeOp::Maximum || o == NodeOp::Minimum ||
         o == NodeOp::UnaryMath;
}

Error check_dynamic_node(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const NodeOp op = static_cast<NodeOp>(node.op);
  const BlobValue& out = v[node.output];
  bool any_dynamic = false;
  for (uint32_t i = 0; i < node.num_inputs; ++i) {
    const BlobValue& in = v[node.inputs[i]];
    if (!is_dynamic_value(in)) continue;
    any_dynamic = true;
    const bool operand =
        is_gemm(op) ? i == 0 || (i >= 2 && op == NodeOp::PackedFullyConnected)
                    : is_dynamic_rows_op(node.op) &&
                          ((op != NodeOp::FullyConnected && op != NodeOp::LayerNorm) || i == 0);
    TERN_CHECK_OR_RETURN_ERROR(operand, InvalidProgram,
                               "cpu blob: node %u (op %u): input %u (value %u) is dynamic, which "
                               "only x of a fully-connected node (ops 3, 17, 23) or a layer norm "
                               "(op 25), op 17's residual or multiplier, or a data input of an "
                               "elementwise node (ops 4-11, 20, 28, 35, 36, 38) or a reshape "
                               "(op 16) may be",
                               n, node.op, i, node.inputs[i]);
    if (op == NodeOp::Reshape) {
      // A reshape moves no bytes: its output may vary in another dim, by as many elements per
      // index of it (the same bound, the same element count).
      TERN_CHECK_OR_RETURN_ERROR(
          is_dynamic_value(out) && dynamic_bound(in) == dynamic_bound(out), InvalidProgram,
          "cpu blob: node %u (reshape): input %u (value %u) varies in dim %u (bound %llu), its "
          "output (value %u) must vary too, by the same bound",
          n, i, node.inputs[i], dynamic_dim_of(in),
          static_cast<unsigned long long>(dynamic_bound(in)), node.output);
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(out.dynamic_mask == in.dynamic_mask, InvalidProgram,
                               "cpu blob: node %u (op %u): input %u (value %u) has dynamic mask "
                               "0x%x, its output (value %u) 0x%x",
                               n, node.op, i, node.inputs[i], in.dynamic_mask, node.output,
                               out.dynamic_mask);
    // The same rows: the dims before the dynamic one equal (the dynamic dim's bound too).
    const uint32_t d = dynamic_dim_of(in);
    for (uint32_t j = 0; j <= d; ++j) {
      TERN_CHECK_OR_RETURN_ERROR(in.dims[j] == out.dims[j], InvalidProgram,
                                 "cpu blob: node %u (op %u): input %u (value %u) dim %u is %llu, "
                                 "the output's (value %u) %llu; dims up to the dynamic one must "
                                 "agree",
                                 n, node.op, i, node.inputs[i], j,
                                 static_cast<unsigned long long>(in.dims[j]), node.output,
                                 static_cast<unsigned long long>(out.dims[j]));
    }
  }
  if (is_dynamic_value(out)) {
    TERN_CHECK_OR_RETURN_ERROR(any_dynamic && (!is_gemm(op) || is_dynamic_value(v[node.inputs[0]])),
                               InvalidProgram,
                               "cpu blob: node %u (op %u): its output (value %u) is dynamic, "
                               "which only a node with a dynamic input (a fully-connected node: "
                               "a dynamic x) may make",
                               n, node.op, node.output);
    if (is_broadcasting(op)) {
      const uint32_t d = dynamic_dim_of(out);
      for (uint32_t i = 0; i < node.num_inputs; ++i) {
        const BlobValue& in = v[node.inputs[i]];
        if (is_dynamic_value(in)) continue;
        const int64_t shift = static_cast<int64_t>(out.rank) - static_cast<int64_t>(in.rank);
        bool same_for_every_row = shift >= 0;
        for (uint32_t j = 0; same_for_every_row && j < in.rank; ++j) {
          if (static_cast<int64_t>(j) + shift <= static_cast<int64_t>(d) && in.dims[j] != 1) {
            same_for_every_row = false;
          }
        }
        TERN_CHECK_OR_RETURN_ERROR(same_for_every_row, InvalidProgram,
                                   "cpu blob: node %u (op %u): static input %u (value %u, rank "
                                   "%u) must be 1 in every dim up to the output's dynamic dim %u "
                                   "(right-aligned), the same for every row",
                                   n, node.op, i, node.inputs[i], in.rank, d);
      }
    }
  }
  return Error::Ok;
}

}  // namespace tern::cpu
