// Finding an LSTM cell written out as its pieces in a cpu region (internal to
// backends/cpu/compile): torch.export's and make_fx's nn.LSTM unrolled per step as
//   gates = add(a, b)?  (the recurrent product and the step's row of the input projection)
//   i, f, g, o = split(gates, H, dim=-1)
//   c' = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)))
//   h' = mul(sigmoid(o), tanh(c'))
// (each product and sum in either order). The nodes are one LstmCell node (blob op 37).
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct LstmCellMatch {
  int gates = -1;   ///< the gates [..., 4H] (the add's first operand when there is an add)
  int gates2 = -1;  ///< the add's second operand, or -1 without an add
  int c = -1;       ///< the previous cell state [..., H]
  int c_next = -1;  ///< c' (may have other readers, all after the pattern's last node)
  int h_next = -1;  ///< h'
  int64_t hidden = 0;
  std::vector<int> nodes;  ///< the pattern's nodes in graph order; lowered at nodes.back()
};

/// The cells in `region` on f32 tensors of rank <= 3 whose intermediates are each read once by
/// the pattern's next node and none of which is a region output.
std::vector<LstmCellMatch> match_lstm_cells(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
