// The serializer: ProgramGraph + memory plans -> .pte bytes (docs/format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"
#include "tools/compiler/memory_planner.h"

namespace tern::compiler {

struct SerializeOptions {
  /// Alignment of every segment (64 by default; 4096 for page-aligned mmap on request).
  uint32_t segment_alignment = 64;
};

/// Writes a program: file header, FlatBuffer, then one aligned, checksummed segment per
/// constant tensor, per delegate blob and per state initial value. `plans[i]` is the plan of
/// `program.methods[i]`. Throws std::invalid_argument on an inconsistent input.
std::vector<uint8_t> serialize_program(const ProgramGraph& program,
                                       const std::vector<MemoryPlan>& plans,
                                       const SerializeOptions& options = {});

/// Writes bytes to `path`; throws std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace tern::compiler
