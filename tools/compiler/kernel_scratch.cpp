#include "tools/compiler/kernel_scratch.h"

#include <algorithm>
#include <string>

#include "runtime/kernels/portable/scratch_sizes.h"

namespace tern::compiler {

uint64_t node_scratch_bytes(const Graph& graph, const Node& node) {
  (void)graph;
  (void)node;
  // Ops with scratch needs add a branch here that calls their function in scratch_sizes.h
  // with the node's argument shapes (graph.values[node.args[i]].sizes).
  return 0;
}

uint64_t method_scratch_bytes(const Graph& graph) {
  uint64_t most = 0;
  for (const Node& node : graph.nodes) {
    most = std::max(most, node_scratch_bytes(graph, node));
  }
  return most;
}

}  // namespace tern::compiler
