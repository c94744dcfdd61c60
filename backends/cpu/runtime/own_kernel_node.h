// Running a node of tern's own kernels inside a cpu delegate (internal to the cpu backend):
// the ops XNNPACK does not run (cpu_blob_format.h is_own_kernel_op).
#pragma once

#include <pthreadpool.h>

#include <cstdint>

#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Scratch floats node `n` of `plan` (validated by parse_blob) needs on a pool of `threads`
/// threads: 0 for every op but the Winograd conv and the fused bottleneck.
uint64_t own_kernel_scratch_floats(const BlobPlan& plan, uint32_t n, int64_t threads);

/// Runs node `n` of `plan` (an own-kernel op, validated by parse_blob) reading and writing the
/// value addresses in `addr` (one per blob value), on `pool` (null: the caller's thread), with
/// `scratch` of at least own_kernel_scratch_floats(plan, n, pool's threads) floats (64-byte
/// aligned; may be null when that is 0). `numel`: null for a static plan; else each value's
/// element count at this execution (a dynamic value's actual count, dynamic_counts.h), from
/// which ops 17, 23 and 25 take their row count.
/// Never allocates.
Error run_own_kernel_node(const BlobPlan& plan, uint32_t n, float* const* addr,
                          pthreadpool_t pool, float* scratch, const uint64_t* numel = nullptr);

}  // namespace tern::cpu
