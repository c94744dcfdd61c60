// tern's inclusive running sum along one dim (the cpu delegate's op 39): x seen as
// [outer, size, inner] row-major, y[o, k, i] = Σ_{j <= k} x[o, j, i]: the portable kernel's
// loop (runtime/kernels/util/cumsum_array.h, double accumulators in order, as ATen), so the
// results are equal bit for bit, its outer slices split over the pool. Mamba2's chunked scan.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct CumsumProblem {
  const float* x = nullptr;
  float* y = nullptr;  ///< never aliases x
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

/// Runs the sums, the outer slices split over `pool` (null: the caller's thread).
void cumsum_rows(const CumsumProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
