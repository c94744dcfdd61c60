// Finding channel-group sums in a cpu region (internal to backends/cpu/compile): ResNeSt's
// split attention and SKNet's selective kernel sum R groups of C channels of channels-last
// tensors, each group optionally scaled by a per-sample, per-channel weight:
//   X = view(x, [N, R, C, H, W])            (ResNeSt: one conv output of R C channels), or
//   X = cat([view(x_i, [N, R_i, C, H, W])], dim 1)  (SKNet: a stack of R branches);
//   y = sum(X, [1])  or  y = sum(mul(X, A), [1])  with A [N, R, C, 1, 1] (a softmax's output).
// Each such sum is tern's GroupSum node (op 48) reading the NHWC x's in place: X is never made
// (a view of an NHWC tensor into five dims is a transposing copy, and the product a pass of its
// own), the product and, when nothing else reads X, the cat disappear.
#pragma once

#include <functional>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct GroupSumMatch {
  std::vector<int> parts;  ///< the NHWC x's, [N, R_i C, H, W] each (1 to 3)
  int weight = -1;         ///< A [N, R, C, 1, 1], or -1 (a plain sum)
  int y = -1;              ///< the sum's output [N, C, H, W] (NHWC)
  int sum_node = -1;       ///< lowered as the GroupSum
  int mul_node = -1;       ///< the product folded into it, or -1
  int cat_node = -1;       ///< the cat no other node reads (not lowered), or -1
};

/// Whether `node` is such a sum by the graph's structure alone (any region, any layouts): the
/// layout plan gives its output the NHWC layout the GroupSum writes, where a sum of five dims
/// is otherwise row-major.
bool is_group_sum_shape(const Graph& g, const Node& node);

/// The sums in `region` of that form whose x's and y are NHWC (`nhwc`), all static f32.
std::vector<GroupSumMatch> match_group_sums(const Graph& g, const DelegateRegion& region,
                                            const std::function<bool(int)>& nhwc);

}  // namespace tern::compiler::cpu_compile
