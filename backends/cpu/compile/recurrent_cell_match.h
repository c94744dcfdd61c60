// Finding recurrent cells written out as their pieces in a cpu region (internal to
// backends/cpu/compile): torch.export's and make_fx's nn.LSTM and nn.GRU unrolled per step.
// An LSTM step:
//   gates = add(a, b)?  (the recurrent product and the step's row of the input projection)
//   i, f, g, o = split(gates, H, dim=-1)
//   c' = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)))
//   h' = mul(sigmoid(o), tanh(c'))
// is one LstmCell node (blob op 37). A GRU step:
//   xr, xz, xn = split(gi, H, -1); hr, hz, hn = split(gh, H, -1)
//   r = sigmoid(add(hr, xr)), z = sigmoid(add(hz, xz)), n = tanh(add(xn, mul(hn, r)))
//   h' = add(mul(sub(h, n), z), n)
// is one GruCell node (blob op 40). Each product and sum in either order (a sub as written).
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

struct GruCellMatch {
  int gi = -1;      ///< the input side's gates [..., 3H]
  int gh = -1;      ///< the hidden side's gates [..., 3H] (its n part multiplied by r)
  int h = -1;       ///< the previous hidden state [..., H]
  int h_next = -1;  ///< h'
  int64_t hidden = 0;
  std::vector<int> nodes;  ///< the pattern's nodes in graph order; lowered at nodes.back()
};

/// The GRU cells in `region`, under the same conditions (n is read twice, by the sub and the
/// last add).
std::vector<GruCellMatch> match_gru_cells(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
