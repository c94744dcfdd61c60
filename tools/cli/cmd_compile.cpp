// `tern compile`: graph.json (+ safetensors) -> .pte, partitioned for the --backend list.
#include <cinttypes>
#include <cstdio>

#include "runtime/core/checked_math.h"
#include "tools/cli/commands.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_json.h"

namespace tern::cli {

int cmd_compile(const CompileCommandOptions& options) {
  if (!is_power_of_two(options.segment_alignment)) {
    throw std::runtime_error("--segment-alignment must be a power of two, found " +
                             std::to_string(options.segment_alignment));
  }
  const compiler::ProgramGraph graph = compiler::read_graph_json(options.graph);
  compiler::CompileOptions compile_options;
  compile_options.serializer.segment_alignment = options.segment_alignment;
  for (const std::string& backend : options.backends) {
    if (backend != "portable") compile_options.backends.push_back(backend);
  }
  const compiler::CompileResult result = compiler::compile_program(graph, compile_options);
  compiler::write_file(options.output, result.bytes);
  std::printf("wrote %s (%zu bytes)\n", options.output.c_str(), result.bytes.size());
  for (const compiler::MethodReport& m : result.methods) {
    const double ratio = m.lower_bound ? static_cast<double>(m.arena_size) / m.lower_bound : 1.0;
    std::printf("  method '%s': %zu nodes, arena %" PRIu64 " bytes, lower bound %" PRIu64
                " (%.3fx), temp %" PRIu64 " bytes, %zu delegates\n",
                m.name.c_str(), m.num_nodes, m.arena_size, m.lower_bound, ratio, m.temp_size,
                m.num_delegates);
  }
  return 0;
}

}  // namespace tern::cli
