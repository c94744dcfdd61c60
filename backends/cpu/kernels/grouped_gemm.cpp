// The grouped product (grouped_gemm.h): one packed GEMM per non-empty group, each split over the
// pool by packed_gemm.
#include "backends/cpu/kernels/grouped_gemm.h"

#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu {

int64_t grouped_gemm_end(const GroupedGemmProblem& p, int64_t g) {
  return p.ends32 != nullptr ? static_cast<int64_t>(p.ends32[g]) : p.ends64[g];
}

int64_t grouped_gemm_bad_end(const GroupedGemmProblem& p) {
  int64_t start = 0;
  for (int64_t g = 0; g < p.groups; ++g) {
    const int64_t end = grouped_gemm_end(p, g);
    if (end < start || end > p.rows) return g;
    start = end;
  }
  return -1;
}

int64_t grouped_gemm(const GroupedGemmProblem& p, pthreadpool_t pool) {
  const int64_t bad = grouped_gemm_bad_end(p);
  if (bad >= 0) return bad;
  const uint64_t floats = packed_weight_floats(p.n, p.k);
  int64_t start = 0;
  for (int64_t g = 0; g < p.groups; ++g) {
    const int64_t end = grouped_gemm_end(p, g);
    if (end > start) {
      GemmProblem gp;
      gp.m = end - start;
      gp.n = p.n;
      gp.k = p.k;
      gp.a = p.x + start * p.k;
      gp.lda = p.k;
      gp.packed = p.packed + static_cast<uint64_t>(g) * floats;
      gp.c = p.out + start * p.n;
      gp.ldc = p.n;
      packed_gemm(gp, pool);
    }
    start = end;
  }
  if (start < p.rows) {
    std::memset(p.out + start * p.n, 0, sizeof(float) * static_cast<size_t>((p.rows - start) * p.n));
  }
  return -1;
}

}  // namespace tern::cpu
