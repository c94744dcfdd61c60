// Reading and checking the attention ops the cpu delegate takes (internal to
// backends/cpu/compile): products of two activations (bmm, matmul) and
// scaled_dot_product_attention, lowered to tern's BatchMatMul node (op 26) around XNNPACK's
// multiply, add and softmax. Every function throws Unsupported on what it does not take.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Checks bmm(a, b) / matmul(a, b) of two f32 activations of one rank 2..6 with the same
/// leading (batch) dims (no broadcasting, no 1-D operand) and a [.., M, K] · [.., K, N] output.
void check_batch_matmul(const Graph& g, const Node& node);

/// scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale) as
/// softmax(q · kᵀ · scale + bias) · v.
struct SdpaAttrs {
  float scale = 1.0f;
  /// is_causal: query row i attends keys j <= i (top-left aligned); `bias` then holds that
  /// mask written out.
  bool causal = false;
  /// The additive mask (0 where attended, -inf where not; or a float mask's values), broadcast
  /// over the scores [.., L, S] from `bias_dims` (the scores' rank); empty: none.
  std::vector<float> bias;
  std::vector<int64_t> bias_dims;
  /// Grouped-query attention as the exporter folds it (tern_export/gqa.py): q [.., G, L, E]
  /// with k, v [.., 1, S, E] broadcast over the G query heads of each key/value head: G, else 0.
  int64_t group = 0;
  /// An f32 activation mask (SAM's decomposed relative-position bias): its value id, read by
  /// the node as it is (dims `bias_dims`, `bias` empty); -1 for none or a constant one.
  int mask_value = -1;
};
/// Checks the node (q [.., L, E], k [.., S, E], v [.., S, Ev] f32 activations of one rank 2..6
/// with the same batch dims, or k and v of size 1 where q has G > 1 in the dim before L (grouped
/// query heads); attn_mask None, a constant bool / f32 tensor broadcasting to [.., L, S], or an
/// f32 activation [.., L or 1, S] broadcasting over at most 4 batch dims (no grouped heads);
/// is_causal a Bool (not with a mask); scale None or a number) and reads it. A mask
/// that leaves a query row nothing to attend is refused (the portable kernel gives that row
/// zeros; softmax over -inf would not).
SdpaAttrs sdpa_attrs(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
