// Splitting a kernel's output rows over the pool in bands (internal to backends/cpu/kernels):
// the row concat and the group sum, memory-bound passes whose rows cost alike.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu::detail {

/// Rows [begin, end) of the kernel whose arguments `context` points to.
using RowRangeFn = void (*)(const void* context, int64_t begin, int64_t end);

/// Runs `fn` over rows [0, rows) of `row_floats` output floats each: in bands of about 16Ki
/// output floats over `pool` from 2^17 output floats on (a split pays for its dispatch there);
/// below that, with a null pool or a one-thread one, as one call on the caller's thread.
void run_row_bands(pthreadpool_t pool, int64_t rows, int64_t row_floats, RowRangeFn fn,
                   const void* context);

}  // namespace tern::cpu::detail
