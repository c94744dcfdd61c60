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

/// The live range of a planned tensor over positions: [first, last] inclusive. Node i of the
/// graph is position i, the nodes of a delegated region included (the order its portable
/// fallback runs them). Method inputs live from -1 (bound before the first node) to the last
/// position (an input keeps its value across executions: executing again without set_input
/// sees the same input); method outputs and state tensors end at the last position (state:
/// alive across executions, never shared);
/// a delegated region's inputs end no earlier than the region's last node (the delegate may
/// read them until it returns).
struct Lifetime {
  int first = 0;
  int last = 0;
};

struct MemoryPlan {
  uint32_t alignment = 64;
  uint64_t arena_size = 0;   ///< bytes of arena 0
  uint64_t lower_bound = 0;  ///< largest total of simultaneously live (aligned) bytes
  /// Per value id: the byte offset in arena 0 of a planned tensor, or -1 (constants,
  /// caller-bound inputs, non-tensors, views of constants). An alias's entry is its root's
  /// offset plus its alias_offset.
  std::vector<int64_t> offsets;
  /// Per value id: the value (the root, never itself an alias) whose bytes this one shares (a
  /// view, see alias_offset), or -1. A view of a constant aliases the constant; its offset
  /// stays -1.
  std::vector<int> alias_of;
  /// Per value id: lifetime of planned tensors (meaningful where offsets >= 0 and the value
  /// is not an alias; an alias extends its root's lifetime).
  std::vector<Lifetime> lifetimes;
  /// Bytes of temp (scratch) memory the method's kernels need at most in one node; filled by
  /// compile_program (kernel_scratch.h), not by plan_memory.
  uint64_t temp_size = 0;
  /// Per value id: where an alias's bytes start inside its root (alias_of), in bytes; 0 for
  /// every other value. Non-zero for contiguous pieces (slice/select/split along a dim whose
  /// leading dims are all 1; see view_byte_offset) and views of them. An alias of a planned root lies at
  /// offsets[root] + alias_offset (that is also its `offsets` entry); an alias of a constant
  /// lies at alias_offset inside the constant's segment. May be empty (all 0).
  std::vector<uint64_t> alias_offset;
};

/// Where the output `output_index` of `node` lies inside the node's first argument, when that
/// output is a view of it: same dtype and one contiguous run of its bytes. True for view ops
/// (is_view_op) whose output has the argument's byte size (offset 0), and for tern::slice with
/// step 1 (or picking one index), tern::select and each output of tern::split along a dim whose leading dims all
/// have size 1, or that the piece covers entirely (docs/ops.md argument order; ATen's clamping
/// of slice bounds), when the output's dtype and declared sizes are exactly what the op
/// computes. Sets *byte_offset; false otherwise
/// (including malformed nodes: the kernel reports those).
bool view_byte_offset(const Graph& graph, const Node& node, size_t output_index,
                      uint64_t* byte_offset);

/// Plans `graph` (liveness over node order, greedy best-fit by size, views aliased: every
/// output for which view_byte_offset holds, unless the root is caller-bound or state, or the
/// output is state). The nodes of a delegated region keep their own positions, so its internal
/// values share bytes as they would on the portable kernels; its inputs (their roots, for
/// views) stay live to its last node, so neither an internal value nor a region output takes
/// their bytes while the delegate may still read them (see Lifetime). Throws
/// std::invalid_argument for an invalid graph.
MemoryPlan plan_memory(const Graph& graph, const PlannerOptions& options = {});

}  // namespace tern::compiler
