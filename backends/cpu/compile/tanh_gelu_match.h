// Finding the tanh GELU written out as its pieces in a cpu region (internal to
// backends/cpu/compile): GPT-2's `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`,
// exported as mul(x, 0.5), pow(x, 3), mul(., 0.044715), add(x, .), mul(., sqrt(2 / pi)), tanh,
// add(., 1), mul(., .) (each product and sum in either order). The eight nodes are one GELU of
// the tanh form: the epilogue of the GEMM that makes x, or tern's GELU node, instead of eight
// passes over the tensor.
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct TanhGeluMatch {
  int x = -1;               ///< the GELU's input
  int y = -1;               ///< the last mul's output: the GELU's output
  std::vector<int> nodes;   ///< the eight nodes, in graph order; nodes.back() is the last mul
  int x_reads = 0;          ///< how many of the eight read x (3); x may have other readers
};

/// The patterns in `region` on f32 tensors whose intermediate values are each read once, by
/// the next node of the pattern, and none of which is a region output.
std::vector<TanhGeluMatch> match_tanh_gelus(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
