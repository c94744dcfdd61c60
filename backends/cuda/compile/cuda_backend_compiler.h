// The compile half of the cuda backend: which nodes it takes and how a region becomes its
// blob (format: backends/cuda/README.md, cuda_blob_format.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_blob_format.h"
#include "tools/compiler/backend_compiler.h"

namespace tern::compiler {

/// The "cuda" backend compiler, computing in f32 (the default) or, configured by with_options,
/// with f16/bf16 storage and f32 accumulation. Immutable; safe to share between threads.
class CudaBackendCompiler : public BackendCompiler {
 public:
  explicit CudaBackendCompiler(cuda::ComputeDType compute = cuda::ComputeDType::F32)
      : compute_(compute) {}
  std::string name() const override { return "cuda"; }
  /// True for the nodes the cuda kernels run with tern's semantics (the op list and the
  /// conditions of each are in backends/cuda/README.md); never throws.
  bool supports(const Graph& graph, const Node& node) const override;
  /// True when the region holds a node worth a device round trip (a GEMM, convolution,
  /// attention, normalisation, pooling, softmax, reduction or embedding): a region of only
  /// elementwise ops and data movement costs more in host<->device copies than it saves.
  bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const override;
  /// Lowers a region to a cuda blob of the compiler's compute dtype. Throws std::invalid_argument naming the node
  /// (index, op, debug name) when a node is not supported or the region cannot be bound.
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override;
  /// Options of a `cuda:<options>` spec, ':'-separated: the compute dtype, "f32" (the default),
  /// "f16" or "bf16" (16-bit storage, f32 accumulation; the last one given wins). Returns a
  /// compiler of that dtype (null for f32 when this one is f32). Any other option throws
  /// std::invalid_argument naming it and the options there are.
  std::unique_ptr<BackendCompiler> with_options(const std::string& options) const override;

  std::string why_unsupported(const Graph& graph, const Node& node) const override {
    return unsupported_reason(graph, node, compute_);
  }
  /// Why `node` is not supported in a blob of `compute` (empty when it is); what supports()
  /// decides on.
  static std::string unsupported_reason(const Graph& graph, const Node& node,
                                        cuda::ComputeDType compute = cuda::ComputeDType::F32);

  /// The compute dtype of the blobs this compiler writes.
  cuda::ComputeDType compute() const { return compute_; }

 private:
  cuda::ComputeDType compute_;
};

}  // namespace tern::compiler
