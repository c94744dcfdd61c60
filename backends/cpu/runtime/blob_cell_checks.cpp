#include "backends/cpu/runtime/blob_cell_checks.h"

#include "backends/cpu/runtime/blob_copy_checks.h"
#include "backends/cpu/runtime/blob_reader.h"

namespace tern::cpu {

namespace {

/// The hidden size params[0] in 1..2^30, the other params 0 and no output bounds.
Error check_cell_node(uint32_t n, const BlobNode& node) {
  const uint64_t h = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(h >= 1 && h <= kMaxParam, InvalidProgram,
                             "cpu blob: node %u (%s): hidden size %llu, expected 1..2^30", n,
                             node_op_name(node.op), static_cast<unsigned long long>(h));
  for (uint32_t i = 1; i < kNodeParams; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(node.params[i] == 0, InvalidProgram,
                               "cpu blob: node %u (%s): unused parameter %u is %u, expected 0",
                               n, node_op_name(node.op), i, node.params[i]);
  }
  return check_unbounded(n, node);
}

/// Input `i` of node `n`, a gates operand of `gates` x H per row for `rows` rows.
Error check_gates(uint32_t n, const BlobNode& node, const BlobValue* v, uint32_t i,
                  uint64_t gates, uint64_t rows) {
  const uint64_t h = node.params[0];
  const BlobValue& g = v[node.inputs[i]];
  TERN_CHECK_OR_RETURN_ERROR(
      g.dims[g.rank - 1] == gates * h && value_numel(g) == gates * h * rows, InvalidProgram,
      "cpu blob: node %u (%s): gates value %u has %llu elements, last dim %llu, expected %llu "
      "rows of %llu x %llu",
      n, node_op_name(node.op), node.inputs[i], static_cast<unsigned long long>(value_numel(g)),
      static_cast<unsigned long long>(g.dims[g.rank - 1]), static_cast<unsigned long long>(rows),
      static_cast<unsigned long long>(gates), static_cast<unsigned long long>(h));
  return Error::Ok;
}

/// Input `i` of node `n`, a state of last dim H: its rows into *rows.
Error check_state(uint32_t n, const BlobNode& node, const BlobValue* v, uint32_t i,
                  uint64_t* rows) {
  const uint64_t h = node.params[0];
  const BlobValue& c = v[node.inputs[i]];
  TERN_CHECK_OR_RETURN_ERROR(c.dims[c.rank - 1] == h && value_numel(c) % h == 0, InvalidProgram,
                             "cpu blob: node %u (%s): state value %u has last dim %llu, "
                             "expected the hidden size %llu",
                             n, node_op_name(node.op), node.inputs[i],
                             static_cast<unsigned long long>(c.dims[c.rank - 1]),
                             static_cast<unsigned long long>(h));
  *rows = value_numel(c) / h;
  return Error::Ok;
}

}  // namespace

Error check_lstm_cell(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_cell_node(n, node));
  const uint64_t h = node.params[0];
  uint64_t rows = 0;
  TERN_RETURN_IF_ERROR(check_state(n, node, v, 1, &rows));
  for (uint32_t i = 0; i < node.num_inputs; i += 2) {  // the gates, and gates2 when present
    TERN_RETURN_IF_ERROR(check_gates(n, node, v, i, 4, rows));
  }
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(out.rank == 3 && out.dims[0] == 2 && out.dims[1] == rows &&
                                 out.dims[2] == h,
                             InvalidProgram,
                             "cpu blob: node %u (lstm_cell): output value %u is not [2, %llu, "
                             "%llu] (the new cell and hidden states)",
                             n, node.output, static_cast<unsigned long long>(rows),
                             static_cast<unsigned long long>(h));
  return Error::Ok;
}

Error check_gru_cell(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_cell_node(n, node));
  const uint64_t h = node.params[0];
  uint64_t rows = 0;
  TERN_RETURN_IF_ERROR(check_state(n, node, v, 2, &rows));
  TERN_RETURN_IF_ERROR(check_gates(n, node, v, 0, 3, rows));
  TERN_RETURN_IF_ERROR(check_gates(n, node, v, 1, 3, rows));
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(out.dims[out.rank - 1] == h && value_numel(out) == rows * h,
                             InvalidProgram,
                             "cpu blob: node %u (gru_cell): output value %u has %llu elements, "
                             "expected %llu rows of %llu",
                             n, node.output, static_cast<unsigned long long>(value_numel(out)),
                             static_cast<unsigned long long>(rows),
                             static_cast<unsigned long long>(h));
  return Error::Ok;
}

}  // namespace tern::cpu
