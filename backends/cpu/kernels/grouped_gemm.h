// tern's grouped product for the cpu backend (the delegate's op 46): the rows of x are cut into
// E consecutive groups by running ends, and each group is multiplied by its own matrix, packed
// once at prepare (a mixture-of-experts layer whose tokens are sorted by expert:
// torch._grouped_mm, transformers' grouped experts). Rows after the last end are zeros.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct GroupedGemmProblem {
  int64_t rows = 0;    ///< S: x's rows
  int64_t k = 0;       ///< x's columns, each matrix's rows
  int64_t n = 0;       ///< each matrix's columns
  int64_t groups = 0;  ///< E
  const float* x = nullptr;  ///< [S, K] row-major
  /// E packed matrices one after another, each packed_weight_floats(n, k) floats
  /// (pack_kn_weight of a [K, N] matrix).
  const float* packed = nullptr;
  /// The running ends [E]: int32 (ends32) or int64 (ends64), exactly one of them set.
  const int32_t* ends32 = nullptr;
  const int64_t* ends64 = nullptr;
  float* out = nullptr;  ///< [S, N] row-major; must not overlap x
};

/// Checks every end before any product: returns -1 after computing out, or the first group
/// whose end goes backwards or past S (then out is untouched).
int64_t grouped_gemm(const GroupedGemmProblem& p, pthreadpool_t pool);

/// The end of group g (whichever of ends32 / ends64 is set).
int64_t grouped_gemm_end(const GroupedGemmProblem& p, int64_t g);

/// The first group whose end goes backwards or past p.rows, or -1 (reads the ends only; the
/// check grouped_gemm makes first, for the quantized grouped product too).
int64_t grouped_gemm_bad_end(const GroupedGemmProblem& p);

}  // namespace tern::cpu
