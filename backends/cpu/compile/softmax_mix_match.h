// Finding a softmax over the channels of a 4-D value read only by a 1x1 convolution in a cpu
// region (internal to backends/cpu/compile): YOLO's distribution focal loss head (Ultralytics'
// DFL block) turns each box side's 16 bins into their expected distance,
//   b = transpose(view(x [N, 4·16, A], [N, 4, 16, A]), 1, 2)     [N, 16, 4, A]
//   y = conv2d(softmax(b, dim 1), w [1, 16, 1, 1] = 0..15)        [N, 1, 4, A]
// Each such pair is tern's ChannelMix node with its softmax flag (op 49, params[2] = 1) on the
// bytes of the softmax's input where they allow it (region_lowering: lower_softmax_mix), so
// neither the bins nor their probabilities are copied.
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct SoftmaxMixMatch {
  int softmax = -1;  ///< the softmax node, over dim 1 of its rank-4 input [N, K, H, W]
  int conv = -1;     ///< the conv2d node reading it: 1x1, stride 1, no padding, one group
  int weight = -1;   ///< the conv's weight [J, K, 1, 1], an f32 constant
  int bias = -1;     ///< its bias [J], an f32 constant, or -1
};

/// The pairs in `region`: a softmax over dim 1 of a static f32 rank-4 activation whose output
/// only the conv reads (not leaving the region), K and J at most cpu::kMaxChannelMixWidth.
std::vector<SoftmaxMixMatch> match_softmax_mixes(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
