// Finding attention written out as its pieces in a cpu region (internal to
// backends/cpu/compile): Hugging Face's eager attention (Whisper, BERT, GPT-2, DeiT, wav2vec2),
//   s = bmm(q, kᵀ) [-> view to more batch dims] [-> mul or div by a scalar] [-> add(mask)]
//     -> softmax over the last dim [-> view back] -> bmm(s, v),
// or its transposed second product (LeViT's conv-mode attention, v [.., Ev, S] by heads of
// channels: bmm(v, [view of] transpose(s, -2, -1)), whose output is [.., Ev, L]),
// is one fused Attention node (op 32) instead of two products, up to three passes over the
// scores and their copies: the scores never leave the cache.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct AttentionMatch {
  int q = -1;         ///< the first bmm's a: [.., L, E]
  int kt = -1;        ///< the first bmm's b: kᵀ [.., E, S]
  int v = -1;         ///< the second bmm's b: [.., S, Ev] (its a: [.., Ev, S] when transposed)
  int mask = -1;      ///< the added mask (a constant or an activation), or -1
  int out = -1;       ///< the second bmm's output [.., L, Ev] ([.., Ev, L] when transposed)
  /// The second product is bmm(v, sᵀ) = (s · vᵀ)ᵀ: v and the output are the transposes of the
  /// fused node's.
  bool transposed = false;
  double scale = 1.0; ///< the scalar multiplier (1 / the divisor)
  /// The dims the mask broadcasts against: the scores as the add sees them (after the view).
  std::vector<int64_t> scores_dims;
  std::vector<int> nodes;  ///< the pattern's nodes in graph order; nodes.back() is the second bmm
};

/// The patterns in `region` on f32 static tensors whose intermediate values are each read once,
/// by the pattern's next node, none a region output; the mask broadcasts to the scores with
/// their last dim (the keys) in full and at most 4 dims before the last two.
std::vector<AttentionMatch> match_attentions(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
