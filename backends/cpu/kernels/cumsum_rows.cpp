#include "backends/cpu/kernels/cumsum_rows.h"

#include "backends/cpu/kernels/pool_flags.h"
#include "runtime/kernels/util/cumsum_array.h"

namespace tern::cpu {
namespace {

void run_slice(const CumsumProblem& p, int64_t o) {
  const int64_t stride = p.size * p.inner;
  portable::cumsum_f32(p.x + o * stride, p.y + o * stride, 1, p.size, p.inner);
}

void run_task(void* context, size_t o) {
  run_slice(*static_cast<const CumsumProblem*>(context), static_cast<int64_t>(o));
}

}  // namespace

void cumsum_rows(const CumsumProblem& p, pthreadpool_t pool) {
  const int64_t work = p.outer * p.size * p.inner;
  if (pool == nullptr || p.outer <= 1 || work < 16384 ||
      pthreadpool_get_threads_count(pool) <= 1) {
    portable::cumsum_f32(p.x, p.y, p.outer, p.size, p.inner);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_task, const_cast<CumsumProblem*>(&p),
                             static_cast<size_t>(p.outer), kPoolFlags);
}

}  // namespace tern::cpu
