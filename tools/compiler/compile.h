// The compile driver: validate -> plan -> serialize, used by `tern compile` and tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"
#include "tools/compiler/memory_planner.h"
#include "tools/compiler/serializer.h"

namespace tern::compiler {

struct CompileOptions {
  PlannerOptions planner;
  SerializeOptions serializer;
};

struct MethodReport {
  std::string name;
  uint64_t arena_size = 0;
  uint64_t lower_bound = 0;
  uint64_t temp_size = 0;  ///< scratch bytes the kernels need (MethodMeta::temp_allocator_bytes)
  size_t num_nodes = 0;
};

struct CompileResult {
  std::vector<uint8_t> bytes;
  std::vector<MethodReport> methods;
};

/// Validates every method, plans its memory and serializes the program. Throws
/// std::invalid_argument naming the problem.
CompileResult compile_program(const ProgramGraph& program, const CompileOptions& options = {});

}  // namespace tern::compiler
