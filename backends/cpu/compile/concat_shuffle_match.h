// Finding channel shuffles right after a channel concat in a cpu region (internal to
// backends/cpu/compile): ShuffleNet v2's cat([a, b], dim=1) -> view [N, G, C/G, H, W] ->
// transpose(1, 2) -> [clone ->] view [N, C, H, W], each intermediate read by the next node
// only. The chain is one RowConcat (op 29) interleaving the G inputs channel by channel into
// the last view's output: y[n, k*G + g, h, w] = input_g[n, k, h, w]. When y is read only by a
// split along the channels into parts of a multiple of G channels (the next unit's chunk(2)),
// the split folds in too: one RowConcat per part, each interleaving its channel range of the
// inputs, so y is never made whole and no part is copied out of it.
#pragma once

#include <functional>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct ConcatShuffleMatch {
  int cat = -1;  ///< the cat node
  /// The values the chain makes: the last view's output, or the split's outputs.
  std::vector<int> outputs;
  /// The first channel of y each output holds (0 for the view's output).
  std::vector<int64_t> first_channel;
  std::vector<int> folded;  ///< the view, transpose, clone, view (and split) nodes after the cat
};

/// The chains in `region` whose cat has `max_inputs` inputs or fewer, all of C/G channels (G the
/// input count), where the cat's output and the last view's output are NHWC (`nhwc`).
std::vector<ConcatShuffleMatch> match_concat_shuffles(const Graph& g, const DelegateRegion& region,
                                                      size_t max_inputs,
                                                      const std::function<bool(int)>& nhwc);

}  // namespace tern::compiler::cpu_compile
