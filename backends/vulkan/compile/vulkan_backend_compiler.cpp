#include "backends/vulkan/compile/vulkan_backend_compiler.h"

#include <memory>
#include <stdexcept>

#include "backends/vulkan/compile/blob_writer.h"
#include "backends/vulkan/compile/node_lowering.h"
#include "backends/vulkan/compile/register_vulkan_backend_compiler.h"

namespace tern::compiler {

std::string VulkanBackendCompiler::unsupported_reason(const Graph& graph, const Node& node) {
  try {
    vulkan_compile::BlobBuilder b(graph, nullptr);
    vulkan_compile::lower_node(b, node);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

bool VulkanBackendCompiler::supports(const Graph& graph, const Node& node) const {
  return unsupported_reason(graph, node).empty();
}

bool VulkanBackendCompiler::accepts_region(const Graph& graph,
                                           const std::vector<int>& nodes) const {
  for (int n : nodes) {
    if (!vulkan_compile::is_data_movement(graph.nodes[static_cast<size_t>(n)].op)) return true;
  }
  return false;
}

LoweredRegion VulkanBackendCompiler::lower(const Graph& graph,
                                           const DelegateRegion& region) const {
  vulkan_compile::BlobBuilder b(graph, &region);
  for (int index : region.nodes) {
    const Node& node = graph.nodes.at(static_cast<size_t>(index));
    try {
      vulkan_compile::lower_node(b, node);
    } catch (const std::exception& e) {
      throw std::invalid_argument("vulkan: node " + std::to_string(index) + " (" + node.op +
                                  (node.debug_name.empty() ? "" : ", '" + node.debug_name + "'") +
                                  "): " + e.what());
    }
  }
  LoweredRegion out;
  out.blob = b.finish();
  return out;
}

void register_vulkan_backend_compiler() {
  register_backend_compiler(std::make_unique<VulkanBackendCompiler>());
}

}  // namespace tern::compiler
