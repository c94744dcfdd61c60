// Finding inverted bottlenecks in a cpu region (internal to backends/cpu/compile): the chains
// [1x1 expand conv -> activation ->] depthwise conv [-> activation] [-> squeeze-excitation]
// [-> 1x1 project conv] [-> add residual] of MobileNetV2/V3 and EfficientNet that lower to one
// PackedBottleneck node (the fused kernel of backends/cpu/kernels/bottleneck.h). Their weight
// constant is packed by a PackBottleneck recipe (backends/cpu/weights/weight_recipe.h).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// One chain of graph nodes the fused kernel runs. Every intermediate value is read by the next
/// node of the chain only and does not leave the region.
struct BottleneckMatch {
  int expand = -1;             ///< the 1x1 expand conv node, or -1
  uint32_t expand_epilogue = 0;  ///< cpu::BottleneckEpilogue after it
  int depthwise = -1;          ///< the depthwise conv node
  /// Its output channels per input channel (FastViT's patch embedding: 2); above 1 only without
  /// an expand: the input's channels are then repeated that many times before the kernel.
  int64_t multiplier = 1;
  uint32_t depthwise_epilogue = 0;
  /// Squeeze-excitation between the depthwise stage and the project (only with a project):
  /// mean(d) -> 1x1 squeeze conv [-> activation] -> 1x1 excitation conv -> sigmoid or
  /// hardsigmoid -> mul(d, gate), the mul read by the project only.
  int se_squeeze = -1;           ///< the squeeze conv node, or -1: none
  uint32_t se_squeeze_epilogue = 0;
  int se_excite = -1;            ///< the excitation conv node
  uint32_t se_gate = 0;          ///< cpu::SqueezeGate
  int64_t se_channels = 0;       ///< the squeeze's output channels S
  int project = -1;            ///< the 1x1 project conv node, or -1
  int residual = -1;  ///< value added to the project's (or the depthwise's) output, or -1
  int input = -1;              ///< value the chain reads (x)
  int output = -1;             ///< value the chain makes
  std::vector<int> nodes;      ///< every node it replaces, ascending; the last is where it runs
};

/// The chains in `region`, disjoint, each with a depthwise conv and an expand or a project, or
/// a lone depthwise conv with a large output or a window of more than 25 taps (smaller ones
/// stay XNNPACK's: a stage boundary would cost more than tern's kernel saves), found from the
/// first region node on.
std::vector<BottleneckMatch> match_bottlenecks(const Graph& g, const DelegateRegion& region);

}  // namespace tern::compiler::cpu_compile
