#include "backends/cpu/runtime/blob_lstm_check.h"

#include <limits>

#include "backends/cpu/runtime/blob_copy_checks.h"
#include "backends/cpu/runtime/blob_reader.h"

namespace tern::cpu {

Error check_lstm_cell(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint64_t h = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(h >= 1 && h <= kMaxParam, InvalidProgram,
                             "cpu blob: node %u (lstm_cell): hidden size %llu, expected 1..2^30",
                             n, static_cast<unsigned long long>(h));
  for (uint32_t i = 1; i < kNodeParams; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(node.params[i] == 0, InvalidProgram,
                               "cpu blob: node %u (lstm_cell): unused parameter %u is %u, "
                               "expected 0",
                               n, i, node.params[i]);
  }
  TERN_CHECK_OR_RETURN_ERROR(node.fparams[0] == -std::numeric_limits<float>::infinity() &&
                                 node.fparams[1] == std::numeric_limits<float>::infinity(),
                             InvalidProgram,
                             "cpu blob: node %u (lstm_cell): output bounds [%g, %g], expected "
                             "(-inf, +inf)",
                             n, static_cast<double>(node.fparams[0]),
                             static_cast<double>(node.fparams[1]));
  const BlobValue& c = v[node.inputs[1]];
  const uint64_t cn = value_numel(c);
  TERN_CHECK_OR_RETURN_ERROR(c.dims[c.rank - 1] == h && cn % h == 0, InvalidProgram,
                             "cpu blob: node %u (lstm_cell): cell state value %u has last dim "
                             "%llu, expected the hidden size %llu",
                             n, node.inputs[1],
                             static_cast<unsigned long long>(c.dims[c.rank - 1]),
                             static_cast<unsigned long long>(h));
  const uint64_t rows = cn / h;
  for (uint32_t i = 0; i < node.num_inputs; i += 2) {  // the gates, and gates2 when present
    const BlobValue& g = v[node.inputs[i]];
    TERN_CHECK_OR_RETURN_ERROR(
        g.dims[g.rank - 1] == 4 * h && value_numel(g) == 4 * cn, InvalidProgram,
        "cpu blob: node %u (lstm_cell): gates value %u has %llu elements, last dim %llu, "
        "expected %llu rows of 4 x %llu",
        n, node.inputs[i], static_cast<unsigned long long>(value_numel(g)),
        static_cast<unsigned long long>(g.dims[g.rank - 1]),
        static_cast<unsigned long long>(rows), static_cast<unsigned long long>(h));
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

}  // namespace tern::cpu
