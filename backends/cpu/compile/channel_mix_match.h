// Finding linear maps along an inner dim in a cpu region (internal to backends/cpu/compile):
// CaiT's talking heads mix the heads of the attention scores with a linear layer written
// around two permutes,
//   t = permute(x, [.., d+1, .., d])        x's dim d moved last (x [.., K, ..])
//   u = linear(view(t), W [J, K], b?)        any views that keep the rows of K
//   y = permute(view(u (+ c)), inverse)      c: a constant of J elements, added per row
// so y[o, j, i] = sum_k W[j, k] x[o, k, i] + b[j] with x's dim d mixed in place. Each such
// chain is tern's ChannelMix node (op 49) on x's row-major bytes: neither permute is copied
// and the linear does not run as K-wide rows.
#pragma once

#include <functional>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct ChannelMixMatch {
  int x = -1;          ///< the input, [.., K, ..] with K at `dim`
  int dim = -1;        ///< the dim of x mixed (never the last)
  int weight = -1;     ///< W [J, K], a constant
  int bias = -1;       ///< a constant of J elements (the linear's bias or the added one), or -1
  int y = -1;          ///< the output: x's dims with dim `dim` J
  std::vector<int> nodes;  ///< the chain's nodes in order, the last permute last
};

/// Whether `node` is the last permute of such a chain by the graph's structure alone (any
/// region): the layout plan gives its output x's layout (row-major), which the ChannelMix
/// writes, where a permute to channels first is otherwise NHWC. `maker`: the node of the graph
/// making a value, or -1. *x: the chain's input.
bool ends_channel_mix(const Graph& g, const Node& node, const std::function<int(int)>& maker,
                      int* x);

/// The chains in `region` whose nodes are all its own, whose intermediate values only the next
/// node reads, and whose x and y are static f32 activations, neither NHWC (`nhwc`), with J and K
/// at most cpu::kMaxChannelMixWidth.
std::vector<ChannelMixMatch> match_channel_mixes(const Graph& g, const DelegateRegion& region,
                                                 const std::function<bool(int)>& nhwc);

}  // namespace tern::compiler::cpu_compile
