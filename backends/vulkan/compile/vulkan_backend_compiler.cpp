#include "backends/vulkan/compile/vulkan_backend_compiler.h"

#include <memory>
#include <stdexcept>

#include "backends/vulkan/compile/blob_writer.h"
#include "backends/vulkan/compile/node_lowering.h"
#include "backends/vulkan/compile/register_vulkan_backend_compiler.h"

namespace tern::compiler {

std::string VulkanBackendCompiler::unsupported_reason(const Graph& graph, const Node& node,
                                                      uint32_t storage) {
  try {
    vulkan_compile::BlobBuilder b(graph, nullptr, storage);
    vulkan_compile::lower_node(b, node);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

bool VulkanBackendCompiler::supports(const Graph& graph, const Node& node) const {
  return unsupported_reason(graph, node, storage_).empty();
}

bool VulkanBackendCompiler::accepts_region(const Graph& graph,
                                           const std::vector<int>& nodes) const {
  // A region of only data movement and casts (copies, or one compare) is not worth a delegate
  // call: the portable kernels do as much without the edge conversions.
  for (int n : nodes) {
    const std::string& op = graph.nodes[static_cast<size_t>(n)].op;
    if (!vulkan_compile::is_data_movement(op) && op != "tern::cast") return true;
  }
  return false;
}

LoweredRegion VulkanBackendCompiler::lower(const Graph& graph,
                                           const DelegateRegion& region) const {
  vulkan_compile::BlobBuilder b(graph, &region, storage_);
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
  if (storage_ == vulkan::kStorageF16) out.compile_specs.push_back({"storage", {'f', '1', '6'}});
  return out;
}

std::unique_ptr<BackendCompiler> VulkanBackendCompiler::with_options(
    const std::string& options) const {
  uint32_t storage = storage_;
  for (const std::string& option : split_backend_options(options)) {
    if (option == "f32") {
      storage = vulkan::kStorageF32;
    } else if (option == "f16") {
      storage = vulkan::kStorageF16;
    } else {
      throw std::invalid_argument("vulkan: unknown option '" + option + "' in 'vulkan:" + options +
                                  "' (options: f32, f16: the storage type of the delegate's "
                                  "values; f16 needs a device with shaderFloat16 and "
                                  "storageBuffer16BitAccess)");
    }
  }
  if (storage == storage_) return nullptr;
  return std::make_unique<VulkanBackendCompiler>(storage);
}

void register_vulkan_backend_compiler() {
  register_backend_compiler(std::make_unique<VulkanBackendCompiler>());
}

}  // namespace tern::compiler
