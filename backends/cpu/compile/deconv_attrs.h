// tern::conv_transpose2d in the cpu delegate: XNNPACK's deconvolution (op 41, since blob
// version 19) on NHWC values (internal to backends/cpu/compile).
#pragma once

#include <cstdint>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

/// A transposed conv's window: per spatial dim (height, width) the stride (XNNPACK's
/// upsampling), the padding taken off both ends of the output, the output padding (XNNPACK's
/// adjustment, added at the bottom / right; below the stride) and the dilation.
struct DeconvAttrs {
  int64_t stride[2];
  int64_t pad[2];
  int64_t output_padding[2];
  int64_t dilation[2];
  int64_t groups;  ///< G: C and the output channels G·O/G are split in G groups
};

/// Checks tern::conv_transpose2d(x [N, C, H, W], weight [C, O/G, KH, KW] (a constant), bias
/// [O]?, stride, padding, output_padding, groups G (dividing C), dilation) -> [N, O, OH, OW],
/// shapes included, and reads its window; Unsupported for anything else.
DeconvAttrs conv_transpose2d_attrs(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
