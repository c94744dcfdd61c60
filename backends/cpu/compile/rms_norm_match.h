// Finding RMS norm written out as its pieces in a cpu region (internal to backends/cpu/compile):
// transformers' LlamaRMSNorm (and Qwen2's, Mistral's, ...) exports
// `w · (x · rsqrt(mean(x², -1, keepdim) + eps))` as pow(x, 2) (or mul(x, x)), mean, add(., eps),
// rsqrt, mul(x, .), and mul by the weight (each product and sum in either order; the weight
// optional). The pieces are one RMS norm over the last dim: tern's layer norm node in its RMS
// mode (op 25), one pass instead of six, whose rows follow a bounded-dynamic x's actual size.
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct RmsNormMatch {
  int x = -1;            ///< the normalized activation (f32, rank 1..6 but 4)
  int y = -1;            ///< the last node's output
  int weight = -1;       ///< the weight constant [C], or -1 (none: ones)
  double eps = 0.0;      ///< the added constant (finite, > 0)
  std::vector<int> nodes;  ///< the pieces, in graph order; nodes.back() makes y
};

/// The patterns in `region` whose intermediate values are each read once, by the next piece,
/// and none of which leaves the region (x may have other readers).
std::vector<RmsNormMatch> match_rms_norms(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
