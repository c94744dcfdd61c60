// Building an XNNPACK runtime from a validated cpu blob (internal to the cpu backend).
#pragma once

#include <xnnpack.h>

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Defines every value and node of `plan` in an XNNPACK subgraph (value i gets id i;
/// constants point into plan.data, which must outlive the runtime) and creates a runtime on
/// `pool` (null: the caller's thread). On success *out owns the runtime (xnn_delete_runtime).
/// InvalidProgram naming the node when XNNPACK refuses a definition;
/// DelegateMemoryAllocationFailed when it cannot create the runtime.
Error build_xnn_runtime(const BlobPlan& plan, pthreadpool_t pool, xnn_runtime_t* out);

}  // namespace tern::cpu
