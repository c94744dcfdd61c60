// The compile half of the cpu (XNNPACK) backend: which nodes it takes and how a region
// becomes its blob (format: backends/cpu/README.md).
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/compile/cpu_options.h"
#include "tools/compiler/backend_compiler.h"

namespace tern::compiler {

/// The "cpu" backend compiler, with its options (cpu_options.h; defaults when registered).
/// Immutable; safe to share between threads.
class CpuBackendCompiler : public BackendCompiler {
 public:
  explicit CpuBackendCompiler(cpu_compile::CpuOptions options = {}) : options_(options) {}
  std::string name() const override { return "cpu"; }
  /// "cpu:winograd=f2|f4|off" (cpu_options.h); throws std::invalid_argument naming an
  /// unknown option or value.
  std::unique_ptr<BackendCompiler> with_options(const std::string& options) const override;
  /// True for f32 nodes XNNPACK runs with tern's semantics (the op list and the rules for
  /// each are in backends/cpu/README.md).
  bool supports(const Graph& graph, const Node& node) const override;
  /// True for a linear (f32, NF4 or FP8 weight) whose x (rank 2, 3, 5 or 6) and output vary in
  /// one dim before the last, the same symbol: it runs on tern's GEMM with the actual row count
  /// (backends/cpu/README.md "Bounded-dynamic rows"). Every other node on a dynamic value stays
  /// portable.
  bool supports_dynamic_shapes(const Graph& graph, const Node& node) const override;
  /// True when the region holds a compute-heavy node (conv2d, linear, a pooling); a region of
  /// only elementwise ops and views costs more in edge layout conversions than it saves.
  bool accepts_region(const Graph& graph, const std::vector<int>& nodes) const override;
  /// Lowers a region to a cpu blob (cpu_blob_format.h), weights re-laid out for its kernels. Throws
  /// std::invalid_argument naming the node (index, op, debug name) when a node is not
  /// supported or the region is malformed.
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override;

  std::string why_unsupported(const Graph& graph, const Node& node) const override {
    return unsupported_reason(graph, node);
  }
  /// unsupported_reason() of every node with the graph's layout plan made once (a plan per
  /// node made compiling a 21,764-node graph, timm's Sequencer, take six minutes).
  std::vector<std::string> why_unsupported_each(const Graph& graph) const override;
  /// Why `node` is not supported (empty when it is); what supports() decides on.
  static std::string unsupported_reason(const Graph& graph, const Node& node);

 private:
  cpu_compile::CpuOptions options_;
};

}  // namespace tern::compiler
