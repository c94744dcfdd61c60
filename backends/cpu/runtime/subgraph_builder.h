// Building the XNNPACK runtime of one stage of a validated cpu blob (internal to the cpu
// backend).
#pragma once

#include <xnnpack.h>

#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// One XNNPACK runtime and the blob values it reads or writes outside itself: external id e
/// of the runtime is blob value values[e]. externals[e] is filled (id e, data) at prepare.
struct XnnStage {
  xnn_runtime_t runtime = nullptr;
  uint32_t* values = nullptr;
  xnn_external_value* externals = nullptr;
  uint32_t num_externals = 0;
};

/// Defines the nodes of `stage` (not an own-kernel stage) and the values they use in an
/// XNNPACK subgraph — constants (ValueHome::Constant) at addr[value]: XNNPACK copies a conv's
/// or fully-connected node's weight and bias into its own packed buffers here, and reads the
/// other static operands in place at every invoke, so those must outlive the runtime; values
/// whose home is not inside the runtime become its externals — and creates a runtime on
/// `pool` (null: the caller's thread). On success *out owns it (free_xnn_stage).
/// InvalidProgram naming the node when XNNPACK refuses a definition;
/// DelegateMemoryAllocationFailed when it cannot create the runtime.
Error build_xnn_stage(const BlobPlan& plan, const StagePlan& stages, const Stage& stage,
                      float* const* addr, pthreadpool_t pool, XnnStage* out);

/// Frees what build_xnn_stage made; safe on a default stage.
void free_xnn_stage(XnnStage* stage);

}  // namespace tern::cpu
