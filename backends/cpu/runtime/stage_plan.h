// How a validated cpu blob runs (internal to the cpu backend): its nodes grouped into stages
// and where each value lives between them.
//
// A stage is either a maximal run of consecutive XNNPACK nodes, which becomes one XNNPACK
// runtime, or one node that tern's own kernels run (cpu_blob_format.h is_own_kernel_op). A
// value made and read only inside one XNNPACK stage lives inside that runtime; every other
// non-constant value needs an address the stages share: a staging buffer or the argument's
// own memory for the delegate's inputs and outputs, and a workspace buffer (allocated at init)
// for an internal value that crosses stages or that nothing reads (XNNPACK drops unread
// values but keeps their nodes).
#pragma once

#include <cstdint>

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Where a value's bytes are while the delegate runs.
enum class ValueHome : uint8_t {
  Constant,     ///< the blob's data section, a weight buffer or a program constant in place
  XnnInternal,  ///< inside one XNNPACK runtime only
  Staged,       ///< an external argument copied (transposed when NHWC) via a staging buffer
  Bound,        ///< an external output written in place in the argument's memory
  Workspace,    ///< an internal value crossing stages: a delegate-owned buffer
  View,         ///< inside its base's bytes (a Workspace value: any base of a view is)
};

/// Nodes [first_node, end_node) of the blob, run by one XNNPACK runtime or (own_kernel) by
/// tern's kernel for the single node first_node.
struct Stage {
  uint32_t first_node = 0;
  uint32_t end_node = 0;
  bool own_kernel = false;
};

/// The stages in execution order, each value's home and the workspace layout. Heap arrays
/// owned by the plan.
struct StagePlan {
  Stage* stages = nullptr;
  uint32_t num_stages = 0;
  ValueHome* homes = nullptr;              ///< one per blob value
  uint64_t* workspace_offsets = nullptr;  ///< one per blob value (Workspace values only)
  uint64_t workspace_bytes = 0;           ///< bytes of the workspace the offsets index
};

/// Groups `blob`'s nodes into stages and gives every value its home. An external output is
/// Staged when it is NHWC or read by a node (XNNPACK reads past its inputs), else Bound;
/// external inputs are always Staged (a caller-bound input may move between executions).
/// Workspace values get offsets (multiples of `alignment`, a power of two) such that two
/// values whose stage lifetimes overlap never share bytes; each gets its f32 bytes plus
/// `slack` (XNNPACK reads up to XNN_EXTRA_BYTES past an input). A View value's readers read
/// its base: the base lives in the workspace until the last of them. MemoryAllocationFailed when
/// the arrays cannot be allocated or the workspace size overflows.
Error plan_stages(const BlobPlan& blob, uint64_t alignment, uint64_t slack, StagePlan* out);

/// Frees what plan_stages allocated; safe on a default plan.
void free_stage_plan(StagePlan* plan);

}  // namespace tern::cpu
