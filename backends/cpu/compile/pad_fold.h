// Zero pads folded into the convolutions that read them (internal to backends/cpu/compile).
//
// PyTorch ports of TensorFlow models write "same" padding as an explicit zero pad before a conv
// with no padding of its own (timm's tf_* models pad every strided conv and the stem; HGNetV2's
// stem pads its 2x2 convs): pad(x, (left, right, top, bottom)) → conv2d. Run as written that is a
// copy of the activation a pad (XNNPACK's constant_pad: 0.75 of 3.75 ms in
// tf_mobilenetv3_large_100, its input pad alone 0.38), and the pad between an expand conv and its
// depthwise conv keeps them from one fused bottleneck. The convolution pads with zeros itself, so
// the pad's amounts add to the conv's own padding, top / left and bottom / right separately: every
// conv kernel of the backend takes four pads (XNNPACK's) or top / left with the bottom / right
// ones implied by the output's size (tern's). A max pool may read the pad too when the padded
// tensor is a relu's or a clamp's to [0, ..] (HGNetV2's stem: pad → 2x2 conv and 2x2 max pool):
// zeros then never win a window that holds a pixel of the tensor, so the pad joins the pool's
// padding as well (XNNPACK's padded taps never win a max).
#pragma once

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// The op a folded pad node becomes in the graph fold_zero_pads writes: no inputs, no outputs,
/// lowered to nothing.
inline constexpr const char* kFoldedPadOp = "tern::cpu_folded_pad";

/// When region `r` of `g` holds a constant-zero pad of a 4-D tensor's H and W only, read only
/// by conv2d nodes (and max_pool2d nodes, above) of the region as their x (not a region or
/// graph output), writes to `out` a copy of `g` (constants shared, not copied) where each such
/// reader reads the pad's input with padding [top, left, bottom, right] (its own plus the
/// pad's; node_attrs' conv_attrs and pool_attrs read the four; a pool in floor mode, its
/// ceil-mode extra in the bottom / right) and the pad is a kFoldedPadOp node; returns whether
/// it did (false: `out` untouched).
bool fold_zero_pads(const Graph& g, const DelegateRegion& r, Graph* out);

}  // namespace tern::compiler::cpu_compile
