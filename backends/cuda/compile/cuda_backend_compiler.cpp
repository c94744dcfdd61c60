#include "backends/cuda/compile/cuda_backend_compiler.h"

#include <memory>
#include <set>
#include <stdexcept>

#include "backends/cuda/compile/node_lowering.h"
#include "backends/cuda/compile/region_lowering.h"
#include "backends/cuda/compile/register_cuda_backend_compiler.h"

namespace tern::compiler {

using cuda_compile::Unsupported;

namespace {

/// The reason a node is refused, checking a concat's parts too: the partitioner passes a
/// tensor list partly made outside a region as one list argument, which the delegate cannot
/// bind. So a cat is taken only when every other node of the graph is taken (the graph is one
/// region) and each part is made by a node or is also a direct argument of another node.
std::string reason(const Graph& g, const Node& node) {
  try {
    const cuda_compile::NodeLowering l = cuda_compile::lower_node(g, node);
    if (l.list_parts.empty()) return "";
    std::set<int> reachable;
    for (const Node& other : g.nodes) {
      reachable.insert(other.outputs.begin(), other.outputs.end());
      if (&other == &node) continue;
      reachable.insert(other.args.begin(), other.args.end());
      try {
        (void)cuda_compile::lower_node(g, other);
      } catch (const Unsupported&) {
        throw Unsupported("cat: only when the whole graph runs in the delegate (" + other.op +
                          " does not)");
      }
    }
    for (int id : l.list_parts) {
      if (reachable.count(id) == 0) {
        throw Unsupported("cat: a part that reaches the region only through the tensor list");
      }
    }
  } catch (const Unsupported& e) {
    return node.op + ": " + e.what();
  }
  return "";
}

}  // namespace

std::string CudaBackendCompiler::unsupported_reason(const Graph& graph, const Node& node) {
  return reason(graph, node);
}

bool CudaBackendCompiler::supports(const Graph& graph, const Node& node) const {
  try {
    return unsupported_reason(graph, node).empty();
  } catch (...) {  // supports() never throws (an allocation failure refuses the node)
    return false;
  }
}

bool CudaBackendCompiler::accepts_region(const Graph& graph, const std::vector<int>& nodes) const {
  static const std::set<std::string> kWorthIt = {
      "tern::linear", "tern::matmul", "tern::bmm", "tern::addmm", "tern::conv2d",
      "tern::scaled_dot_product_attention", "tern::layer_norm", "tern::batch_norm",
      "tern::softmax", "tern::log_softmax", "tern::max_pool2d", "tern::avg_pool2d",
      "tern::adaptive_avg_pool2d", "tern::mean", "tern::sum", "tern::embedding"};
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
    const std::string why = unsupported_reason(graph, node);
    if (!why.empty()) {
      throw std::invalid_argument("cuda backend: node " + std::to_string(n) + " ('" +
                                  node.debug_name + "'): " + why);
    }
  }
  LoweredRegion lowered;
  lowered.blob = cuda_compile::lower_region(graph, region, cuda::ComputeDType::F32);
  return lowered;
}

std::unique_ptr<BackendCompiler> CudaBackendCompiler::with_options(
    const std::string& options) const {
  size_t begin = 0;
  while (true) {
    const size_t end = options.find(':', begin);
    const std::string option = options.substr(begin, end == std::string::npos ? end : end - begin);
    if (option == "f16" || option == "bf16") {
      throw std::invalid_argument("cuda: compute dtype " + option +
                                  " is not implemented yet; use cuda (f32)");
    }
    if (option != "f32") {
      throw std::invalid_argument("cuda: unknown option '" + option + "' in 'cuda:" + options +
                                  "' (options: f32, the compute dtype; f16 and bf16 are not "
                                  "implemented yet)");
    }
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return nullptr;  // f32: the registered compiler as it is
}

void register_cuda_backend_compiler() {
  register_backend_compiler(std::make_unique<CudaBackendCompiler>());
}

}  // namespace tern::compiler
