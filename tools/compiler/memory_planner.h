// The memory planner: places every planned tensor of a method in one arena so that no two
// simultaneously live tensors overlap, and reports the arena size against the lower bound.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler {

struct PlannerOptions {
  uint32_t alignment = 64;  ///< every tensor offset is a multiple of this
};

/// The live range of a planned tensor over instruction positions: [first, last] inclusive.
/// Method inputs start at -1 (bound before the first instruction); method outputs and state
/// tensors end at the last position (state: alive across executions, never shared).
struct Lifetime {
  int first = 0;
  int last = 0;
};

struct MemoryPlan {
  uint32_t alignment = 64;
  uint64_t arena_size = 0;   ///< bytes of arena 0
  uint64_t lower_bound = 0;  ///< largest total of simultaneously live (aligned) bytes
  /// Per value id: the byte offset in arena 0 of a planned tensor, or -1 (constants,
  /// caller-bound inputs, non-tensors).
  std::vector<int64_t> offsets;
  /// Per value id: the value whose bytes this one shares (a view of a contiguous tensor),
  /// or -1. A view of a constant aliases the constant; its offset stays -1.
  std::vector<int> alias_of;
  /// Per value id: lifetime of planned tensors (meaningful where offsets >= 0 and the value
  /// is not an alias; an alias extends its root's lifetime).
  std::vector<Lifetime> lifetimes;
  /// Bytes of temp (scratch) memory the method's kernels need at most in one node; filled by
  /// compile_program (kernel_scratch.h), not by plan_memory.
  uint64_t temp_size = 0;
};

/// Plans `graph` (liveness over node order, greedy best-fit by size, views aliased). A
/// delegated region counts as one position spanning its nodes. Throws std::invalid_argument
/// for an invalid graph.
MemoryPlan plan_memory(const Graph& graph, const PlannerOptions& options = {});

}  // namespace tern::compiler
