// The compile driver: validate -> partition -> plan -> serialize, used by `tern compile` and tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"
#include "tools/compiler/memory_planner.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"
#include "tools/compiler/serializer.h"

namespace tern::compiler {

struct CompileOptions {
  PlannerOptions planner;
  SerializeOptions serializer;
  /// Backend compilers to partition every method for, highest priority first (partitioner.h);
  /// empty: portable kernels only. Each name must be registered (register_backend_compiler).
  std::vector<std::string> backends;
  /// Weight quantization (quantize.h), applied after validation and before partitioning;
  /// disabled by default.
  QuantizeOptions quantize;
};

struct MethodReport {
  std::string name;
  uint64_t arena_size = 0;
  uint64_t lower_bound = 0;
  uint64_t temp_size = 0;  ///< scratch bytes the kernels need (MethodMeta::temp_allocator_bytes)
  size_t num_nodes = 0;
  size_t num_delegates = 0;  ///< delegate regions after partitioning
  /// The nodes left on the portable kernels and why each backend did not take them (empty
  /// without backends).
  std::vector<PortableNode> portable_nodes;
};

struct CompileResult {
  std::vector<uint8_t> bytes;  ///< compile_program's file (empty from compile_program_to_file)
  uint64_t file_size = 0;      ///< the file's size in bytes
  std::vector<MethodReport> methods;
  /// What the quantization pass did (empty when it was disabled).
  QuantizeReport quantization;
};

/// Validates every method, quantizes weights when options.quantize asks (then validates again),
/// partitions it among options.backends (the planner then treats
/// each region as one position), plans its memory and serializes the program. `program` is
/// not modified (methods are partitioned on copies). Throws std::invalid_argument naming the
/// problem (an unknown backend name lists the registered ones).
CompileResult compile_program(const ProgramGraph& program, const CompileOptions& options = {});

/// compile_program, the file written to `path` as it is serialized (serialize_program_to_file:
/// the weights are never copied into one buffer with the rest of the file) instead of returned
/// in `bytes`. Throws as compile_program, and std::runtime_error when writing fails (`path`
/// then is left as it was).
CompileResult compile_program_to_file(const ProgramGraph& program, const std::string& path,
                                      const CompileOptions& options = {});

}  // namespace tern::compiler
