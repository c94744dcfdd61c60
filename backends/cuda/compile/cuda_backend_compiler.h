// The compile half of the cuda backend: which nodes it takes and how a region becomes its
// blob (format: backends/cuda/README.md, cuda_blob_format.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/compiler/backend_compiler.h"

namespace tern::compiler {

/// The "cuda" backend compiler (f32 compute). Stateless; safe to share between threads.
class CudaBackendCompiler : public BackendCompiler {
 public:
  std::string name() const override { return "cuda"; }
  /// True for the nodes the cuda kernels run with tern's semantics (the op list and the
  /// conditions of each are in backends/cuda/README.md); never throws.
  bool supports(const Graph& graph, const Node& node) const override;
  /// True when the region holds a node worth a device round trip (a GEMM, convolution,
  /// attention, normalisation, pooling, softmax, reduction or embedding): a region of only
  /// elementwise ops and data movement costs more in host<->device copies than it saves.
  bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const override;
  /// Lowers a region to a version-1 cuda blob. Throws std::invalid_argument naming the node
  /// (index, op, debug name) when a node is not supported or the region cannot be bound.
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override;
  /// Options of a `cuda:<options>` spec, ':'-separated: "f32" (the compute dtype, the default)
  /// returns null (this compiler). "f16" and "bf16" throw std::invalid_argument ("cuda: compute
  /// dtype f16 is not implemented yet; use cuda (f32)"), and so does any other option, named.
  std::unique_ptr<BackendCompiler> with_options(const std::string& options) const override;

  /// Why `node` is not supported (empty when it is); what supports() decides on.
  static std::string unsupported_reason(const Graph& graph, const Node& node);
};

}  // namespace tern::compiler
