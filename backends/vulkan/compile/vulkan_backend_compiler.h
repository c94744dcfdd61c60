// The compile half of the vulkan backend: which nodes it takes and how a region becomes its
// blob (format: backends/vulkan/README.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_blob_format.h"
#include "tools/compiler/backend_compiler.h"

namespace tern::compiler {

/// The "vulkan" backend compiler, writing blobs of f32 storage (the default) or, configured by
/// with_options ("vulkan:f16"), f16 storage (f32 arithmetic in the shaders; quantized weights
/// not taken). Immutable; safe to share between threads.
class VulkanBackendCompiler : public BackendCompiler {
 public:
  /// `storage`: vulkan::kStorageF32 or kStorageF16.
  explicit VulkanBackendCompiler(uint32_t storage = vulkan::kStorageF32) : storage_(storage) {}
  std::string name() const override { return "vulkan"; }
  /// "f32" or "f16" (the storage type; the last one given wins): a compiler of that storage,
  /// or null when it is this one's. Throws std::invalid_argument listing the accepted options
  /// for anything else.
  std::unique_ptr<BackendCompiler> with_options(const std::string& options) const override;
  /// True for the f32 nodes the shaders run with tern's semantics (the op table:
  /// backends/vulkan/README.md).
  bool supports(const Graph& graph, const Node& node) const override;
  /// True unless the region only moves data (views, permutes, slices, cat).
  bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const override;
  /// Lowers a region to a vulkan blob (constants copied into it) and, for f16 storage, the
  /// compile spec storage=f16. Throws std::invalid_argument naming the node when a node is not
  /// supported.
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override;

  std::string why_unsupported(const Graph& graph, const Node& node) const override {
    return unsupported_reason(graph, node, storage_);
  }
  /// Why `node` is not supported (empty when it is); what supports() decides on.
  static std::string unsupported_reason(const Graph& graph, const Node& node,
                                        uint32_t storage = vulkan::kStorageF32);

 private:
  uint32_t storage_;
};

}  // namespace tern::compiler
