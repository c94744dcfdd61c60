// Scratch memory planning: how many temp-allocator bytes each node's kernel needs.
#pragma once

#include <cstdint>

#include "tools/compiler/graph.h"

namespace tern::compiler {

/// Temp-allocator bytes the portable kernel of `node` needs (0 for most ops), from
/// runtime/kernels/util/scratch_sizes.h, including alignment slack.
uint64_t node_scratch_bytes(const Graph& graph, const Node& node);

/// The largest node_scratch_bytes over every node of `graph` (the temp allocator is reset
/// after each instruction, so needs do not add up).
uint64_t method_scratch_bytes(const Graph& graph);

}  // namespace tern::compiler
