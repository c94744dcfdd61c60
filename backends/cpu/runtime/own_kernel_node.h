// Running a node of tern's own kernels inside a cpu delegate (internal to the cpu backend):
// the ops XNNPACK does not run (cpu_blob_format.h is_own_kernel_op).
#pragma once

#include <pthreadpool.h>

#include <cstdint>

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Runs node `n` of `plan` (an own-kernel op, validated by parse_blob) reading and writing the
/// value addresses in `addr` (one per blob value), on `pool` (null: the caller's thread).
/// Never allocates.
Error run_own_kernel_node(const BlobPlan& plan, uint32_t n, float* const* addr,
                          pthreadpool_t pool);

}  // namespace tern::cpu
