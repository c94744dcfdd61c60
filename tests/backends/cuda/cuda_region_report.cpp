// cuda_region_report GRAPH.json [BACKEND]: what the cuda compile half takes of an exported graph
// (a development aid and the partition-count test's helper, tests/backends/cuda/
// cuda_model_partitions.py). Prints the node count, every op it refuses with the reason and how
// often, and the number of regions the partitioner makes for BACKEND (default "cuda"; e.g.
// "cuda:f16"), as "regions N"; every region's blob is then checked by the runtime half's blob
// reader. Host only: needs no GPU. Exit status 1 when the graph cannot be read or partitioned
// or a blob is refused.
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/compile/cuda_backend_compiler.h"
#include "backends/cuda/compile/register_cuda_backend_compiler.h"
#include "backends/cuda/runtime/blob_reader.h"
#include "tools/compiler/graph_json.h"
#include "tools/compiler/partitioner.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: cuda_region_report GRAPH.json [BACKEND]\n");
    return 2;
  }
  const std::string backend = argc == 3 ? argv[2] : "cuda";
  try {
    tern::compiler::register_cuda_backend_compiler();
    tern::compiler::ProgramGraph program = tern::compiler::read_graph_json(argv[1]);
    for (tern::compiler::Graph& g : program.methods) {
      std::map<std::string, int> refused;
      for (const tern::compiler::Node& node : g.nodes) {
        const std::string why = tern::compiler::CudaBackendCompiler::unsupported_reason(g, node);
        if (!why.empty()) ++refused[why];
      }
      std::printf("method %s: %zu nodes, %zu refused\n", g.name.c_str(), g.nodes.size(),
                  [&] {
                    size_t n = 0;
                    for (const auto& r : refused) n += static_cast<size_t>(r.second);
                    return n;
                  }());
      for (const auto& r : refused) std::printf("  %4d x %s\n", r.second, r.first.c_str());
      tern::compiler::partition(g, {backend});
      size_t taken = 0;
      for (const auto& d : g.delegates) taken += d.nodes.size();
      std::printf("regions %zu (%zu of %zu nodes delegated)\n", g.delegates.size(), taken,
                  g.nodes.size());
      for (size_t i = 0; i < g.delegates.size(); ++i) {
        const std::vector<uint8_t>& blob = g.delegates[i].blob;
        tern::cuda::BlobPlan plan;
        if (tern::cuda::parse_blob(tern::Span<const uint8_t>(blob.data(), blob.size()), &plan) !=
            tern::Error::Ok) {
          std::fprintf(stderr, "cuda_region_report: region %zu: blob refused: %s\n", i,
                       tern::last_error_message());
          return 1;
        }
        std::printf("region %zu: %zu bytes, %u blob nodes, arena %llu, weights %llu\n", i,
                    blob.size(), plan.header.num_nodes,
                    static_cast<unsigned long long>(plan.header.arena_bytes),
                    static_cast<unsigned long long>(plan.header.weights_bytes));
        tern::cuda::free_blob_plan(&plan);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_region_report: %s\n", e.what());
    return 1;
  }
  return 0;
}
