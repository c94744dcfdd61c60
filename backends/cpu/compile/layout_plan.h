// Which layout each 4-D value has inside a cpu delegate (internal to backends/cpu/compile).
// By default a 4-D value is NHWC inside the delegate (its tern tensor is NCHW). A value that a
// model makes channels-last itself (ConvNeXt's permute(0, 2, 3, 1) before a layer norm over
// the channels, and what is computed from it: the layer norm, linears, GELU, elementwise ops,
// views) is kept plain instead: row-major in its own tern dims [N, H, W, C]. Its bytes are
// then those of the NHWC tensor it came from, so the permute to it and the permute(0, 3, 1, 2)
// back are no-ops inside the delegate.
#pragma once

#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Per value id: true for a 4-D tensor the delegate keeps plain (channels last, or row-major
/// attention tensors), false for every other value. Decided once per graph, so any region sees
/// the same answer: a bilinear upsample's output that is a method output and read by no node
/// (a segmentation model's logits: written as NCHW planes, op 34); permute(x, [0, 2, 3, 1]) of
/// an NHWC x; a view of a plain 4-D tensor;
/// layer_norm, linear, gelu, softmax, pad, the activations and the binary ops when an activation
/// operand is plain; bmm / matmul / attention outputs; a cat of plain parts. Values whose
/// producer computes nothing (index maps, views from another rank, ops the delegate does not
/// take) follow what their readers ask for (NHWC for the spatial ops, plain for the row-major
/// ones, through binary ops, activations, index maps and cats; NHWC wins), else an index map
/// keeps its input's layout (plain from another rank) and an untaken op's value is NHWC.
std::vector<bool> plain_4d_values(const Graph& g);

/// Checks that `node` reads and writes the layouts it can (Unsupported otherwise): NHWC 4-D
/// inputs for the convolutions, pools, means and batch_norm; plain 4-D for linear, layer_norm,
/// softmax, bmm / matmul and attention (a conv2d of a plain tensor reads an NHWC copy of it);
/// one layout across a cat's parts. Permutes, views, the other index maps and the binary ops
/// take any layouts (the delegate copies where bytes differ; a binary op's operand into its
/// output's order).
void check_layout(const Graph& g, const Node& node, const std::vector<bool>& plain);

/// The dims of tern::permute `node` (Unsupported unless an IntList of the input's rank),
/// negative ones wrapped.
std::vector<int64_t> permute_dims(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
