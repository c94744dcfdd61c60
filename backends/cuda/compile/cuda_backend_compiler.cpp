#include "backends/cuda/compile/cuda_backend_compiler.h"

#include <memory>
#include <set>
#include <string>
#include <stdexcept>

#include "backends/cuda/compile/node_lowering.h"
#include "backends/cuda/compile/quant_lowering.h"
#include "backends/cuda/compile/region_lowering.h"
#include "backends/cuda/compile/register_cuda_backend_compiler.h"

namespace tern::compiler {

using cuda_compile::Unsupported;

namespace {

/// The reason a node is refused (empty when it is taken). A cat's parts need no rule of their
/// own: the partitioner makes every element of a tensor list that the region does not produce
/// a boundary input of its own (docs/partitioning.md), so each part is a value of the blob.
std::string reason(const Graph& g, const Node& node, cuda::ComputeDType compute) {
  try {
    if (compute != cuda::ComputeDType::F32 && cuda_compile::reads_quantized_weight(g, node)) {
      return node.op + ": a quantized (nf4/fp8) weight in a 16-bit blob (cuda:f16 / cuda:bf16 "
                       "decode no quantized weights; they run in cuda or cuda:f32 blobs)";
    }
    (void)cuda_compile::lower_node(g, node);
  } catch (const Unsupported& e) {
    return node.op + ": " + e.what();
  }
  return "";
}

}  // namespace

std::string CudaBackendCompiler::unsupported_reason(const Graph& graph, const Node& node,
                                                    cuda::ComputeDType compute) {
  return reason(graph, node, compute);
}

bool CudaBackendCompiler::supports(const Graph& graph, const Node& node) const {
  try {
    return unsupported_reason(graph, node, compute_).empty();
  } catch (...) {  // supports() never throws (an allocation failure refuses the node)
    return false;
  }
}

bool CudaBackendCompiler::accepts_region(const Graph& graph, const std::vector<int>& nodes) const {
  static const std::set<std::string> kWorthIt = {
      "tern::linear", "tern::matmul", "tern::bmm", "tern::addmm", "tern::conv2d",
      "tern::scaled_dot_product_attention", "tern::layer_norm", "tern::batch_norm",
      "tern::softmax", "tern::log_softmax", "tern::max_pool2d", "tern::avg_pool2d",
      "tern::adaptive_avg_pool2d", "tern::mean", "tern::sum", "tern::embedding",
      "tern::group_norm", "tern::rms_norm", "tern::conv1d", "tern::conv_transpose2d",
      "tern::grouped_mm", "tern::grouped_linear"};
  for (int n : nodes) {
    if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) continue;
    if (kWorthIt.count(graph.nodes[static_cast<size_t>(n)].op) != 0) return true;
  }
  return false;
}

LoweredRegion CudaBackendCompiler::lower(const Graph& graph, const DelegateRegion& region) const {
  for (int n : region.nodes) {
    if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) {
      throw std::invalid_argument("cuda backend: region node " + std::to_string(n) +
                                  " out of range");
    }
    const Node& node = graph.nodes[static_cast<size_t>(n)];
    const std::string why = unsupported_reason(graph, node, compute_);
    if (!why.empty()) {
      throw std::invalid_argument("cuda backend: node " + std::to_string(n) + " ('" +
                                  node.debug_name + "'): " + why);
    }
  }
  LoweredRegion lowered;
  lowered.blob = cuda_compile::lower_region(graph, region, compute_);
  return lowered;
}

std::unique_ptr<BackendCompiler> CudaBackendCompiler::with_options(
    const std::string& options) const {
  cuda::ComputeDType compute = compute_;
  for (const std::string& option : split_backend_options(options)) {
    if (option == "f32") {
      compute = cuda::ComputeDType::F32;
    } else if (option == "f16") {
      compute = cuda::ComputeDType::F16;
    } else if (option == "bf16") {
      compute = cuda::ComputeDType::BF16;
    } else {
      throw std::invalid_argument("cuda: unknown option '" + option + "' in 'cuda:" + options +
                                  "' (options: f32, f16, bf16: the compute dtype)");
    }
  }
  if (compute == compute_) return nullptr;
  return std::make_unique<CudaBackendCompiler>(compute);
}

void register_cuda_backend_compiler() {
  register_backend_compiler(std::make_unique<CudaBackendCompiler>());
}

}  // namespace tern::compiler
