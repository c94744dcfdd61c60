// The compile half of the vulkan backend: which nodes it takes and how a region becomes its
// blob (format: backends/vulkan/README.md).
#pragma once

#include <string>
#include <vector>

#include "tools/compiler/backend_compiler.h"

namespace tern::compiler {

/// The "vulkan" backend compiler. Stateless; safe to share between threads.
class VulkanBackendCompiler : public BackendCompiler {
 public:
  std::string name() const override { return "vulkan"; }
  /// True for the f32 nodes the shaders run with tern's semantics (the op table:
  /// backends/vulkan/README.md).
  bool supports(const Graph& graph, const Node& node) const override;
  /// True unless the region only moves data (views, permutes, slices, cat).
  bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const override;
  /// Lowers a region to a vulkan blob (constants copied into it). Throws
  /// std::invalid_argument naming the node when a node is not supported.
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override;

  /// Why `node` is not supported (empty when it is); what supports() decides on.
  static std::string unsupported_reason(const Graph& graph, const Node& node);
};

}  // namespace tern::compiler
