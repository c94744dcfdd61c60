// The ops the cpu delegate runs as index maps over strided views (internal to
// backends/cpu/compile): transpose, permute, slice, select, expand, repeat (of size-1 dims: an
// expand), clone, split and flip (a negative stride). None of
// them computes anything; the lowering composes each into its input's StridedView and copies
// once, where a reader needs the bytes (strided_view.h; the StridedCopy node, op 27).
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/compile/strided_view.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Whether `op` is one of the index-map ops above.
bool is_index_map_op(const std::string& op);

/// Checks an index-map node (an f32 activation x of rank 1..6, its static arguments, each
/// output's sizes against what they give; no empty output). Throws Unsupported.
void check_index_map(const Graph& g, const Node& node);

/// The permutation a transpose or permute node applies (perm[i]: the input dim of output dim
/// i), dims wrapped; empty for any other op. Throws Unsupported on a malformed node.
std::vector<int64_t> index_map_permutation(const Graph& g, const Node& node, size_t rank);

/// The views of the node's outputs (one per output; split gives several) for input view `x`
/// (the node must pass check_index_map).
std::vector<StridedView> apply_index_map(const Graph& g, const Node& node, const StridedView& x);

}  // namespace tern::compiler::cpu_compile
