#include "backends/cpu/kernels/cumsum_rows.h"

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Columns of one slice summed together (their double accumulators stay in registers / L1).
constexpr int64_t kColumns = 64;

void run_slice(const CumsumProblem& p, int64_t o) {
  const float* x = p.x + o * p.size * p.inner;
  float* y = p.y + o * p.size * p.inner;
  for (int64_t c0 = 0; c0 < p.inner; c0 += kColumns) {
    const int64_t n = p.inner - c0 < kColumns ? p.inner - c0 : kColumns;
    double acc[kColumns];
    for (int64_t i = 0; i < n; ++i) acc[i] = 0.0;
    for (int64_t k = 0; k < p.size; ++k) {
      const float* row = x + k * p.inner + c0;
      float* out = y + k * p.inner + c0;
      for (int64_t i = 0; i < n; ++i) {
        acc[i] += row[i];
        out[i] = static_cast<float>(acc[i]);
      }
    }
  }
}

void run_task(void* context, size_t o) {
  const CumsumProblem& p = *static_cast<const CumsumProblem*>(context);
  run_slice(p, static_cast<int64_t>(o));
}

}  // namespace

void cumsum_rows(const CumsumProblem& p, pthreadpool_t pool) {
  const int64_t work = p.outer * p.size * p.inner;
  if (pool == nullptr || p.outer <= 1 || work < 16384 ||
      pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t o = 0; o < p.outer; ++o) run_slice(p, o);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_task, const_cast<CumsumProblem*>(&p),
                             static_cast<size_t>(p.outer), kPoolFlags);
}

}  // namespace tern::cpu
