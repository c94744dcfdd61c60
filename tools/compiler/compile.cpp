// The compile driver: validate -> partition -> plan -> serialize.
#include "tools/compiler/compile.h"

#include "tools/compiler/kernel_scratch.h"
#include "tools/compiler/partitioner.h"

#include <stdexcept>

namespace tern::compiler {

namespace {

/// Validates, quantizes, partitions and plans; `serialize` then writes the program (the
/// partitioned copy or `program` itself) with its plans.
template <typename Serialize>
CompileResult compile_with(const ProgramGraph& program, const CompileOptions& options,
                           Serialize serialize) {
  if (program.methods.empty()) {
    throw std::invalid_argument("compile_program: the program has no methods");
  }
  CompileResult result;
  // Methods are quantized and partitioned on a copy; without either the caller's graphs are
  // used as is.
  ProgramGraph partitioned;
  const bool partitioning = !options.backends.empty();
  const bool quantizing = options.quantize.enabled();
  if (partitioning || quantizing) partitioned = program;
  const ProgramGraph& source = partitioning || quantizing ? partitioned : program;
  if (quantizing) {
    for (const Graph& method : program.methods) validate_graph(method);
    result.quantization = quantize_program(partitioned, options.quantize);
  }
  std::vector<MemoryPlan> plans;
  plans.reserve(program.methods.size());
  for (size_t i = 0; i < program.methods.size(); ++i) {
    const Graph& method = source.methods[i];
    for (size_t j = 0; j < i; ++j) {
      if (program.methods[j].name == method.name) {
        throw std::invalid_argument("compile_program: methods " + std::to_string(j) + " and " +
                                    std::to_string(i) + " are both named '" + method.name + "'");
      }
    }
    validate_graph(method);
    std::vector<PortableNode> portable;
    if (partitioning) partition(partitioned.methods[i], options.backends, &portable);
    plans.push_back(plan_memory(method, options.planner));
    plans.back().temp_size = method_scratch_bytes(method);
    MethodReport report;
    report.name = method.name;
    report.arena_size = plans.back().arena_size;
    report.lower_bound = plans.back().lower_bound;
    report.temp_size = plans.back().temp_size;
    report.num_nodes = method.nodes.size();
    report.num_delegates = method.delegates.size();
    report.portable_nodes = std::move(portable);
    result.methods.push_back(report);
  }
  serialize(source, plans, &result);
  return result;
}

}  // namespace

CompileResult compile_program(const ProgramGraph& program, const CompileOptions& options) {
  return compile_with(program, options,
                      [&](const ProgramGraph& source, const std::vector<MemoryPlan>& plans,
                          CompileResult* result) {
                        result->bytes = serialize_program(source, plans, options.serializer);
                        result->file_size = result->bytes.size();
                      });
}

CompileResult compile_program_to_file(const ProgramGraph& program, const std::string& path,
                                      const CompileOptions& options) {
  return compile_with(program, options,
                      [&](const ProgramGraph& source, const std::vector<MemoryPlan>& plans,
                          CompileResult* result) {
                        result->file_size =
                            serialize_program_to_file(source, plans, path, options.serializer);
                      });
}

}  // namespace tern::compiler
