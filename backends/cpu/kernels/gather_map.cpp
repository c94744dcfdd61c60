#include "backends/cpu/kernels/gather_map.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

constexpr int64_t kChunk = 4096;  // elements a task copies when the block is split

/// Map entries a task copies when the block is split (at least one).
int64_t entries_per_chunk(const GatherMapProblem& p) { return std::max<int64_t>(1, kChunk / p.run); }

/// y[o, t, :] for t in [begin, end).
void copy_range(const GatherMapProblem& p, int64_t o, int64_t begin, int64_t end) {
  const float* x = p.x + o * p.step;
  float* y = p.y + o * p.block * p.run;
  if (p.run == 1) {
    for (int64_t t = begin; t < end; ++t) {
      int32_t offset;
      std::memcpy(&offset, p.map + 4 * t, 4);
      y[t] = x[offset];
    }
    return;
  }
  const size_t bytes = static_cast<size_t>(p.run) * sizeof(float);
  for (int64_t t = begin; t < end; ++t) {
    int32_t offset;
    std::memcpy(&offset, p.map + 4 * t, 4);
    std::memcpy(y + t * p.run, x + offset, bytes);
  }
}

void run_row(void* context, size_t o) {
  const GatherMapProblem& p = *static_cast<const GatherMapProblem*>(context);
  copy_range(p, static_cast<int64_t>(o), 0, p.block);
}

void run_chunk(void* context, size_t c) {
  const GatherMapProblem& p = *static_cast<const GatherMapProblem*>(context);
  const int64_t per = entries_per_chunk(p);
  const int64_t begin = static_cast<int64_t>(c) * per;
  copy_range(p, 0, begin, std::min(p.block, begin + per));
}

}  // namespace

void gather_map(const GatherMapProblem& p, pthreadpool_t pool) {
  const int64_t work = p.outer * p.block * p.run;
  if (pool == nullptr || work < 16384 || pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t o = 0; o < p.outer; ++o) copy_range(p, o, 0, p.block);
    return;
  }
  void* context = const_cast<GatherMapProblem*>(&p);
  if (p.outer > 1) {
    pthreadpool_parallelize_1d(pool, &run_row, context, static_cast<size_t>(p.outer),
                               kPoolFlags);
  } else {
    pthreadpool_parallelize_1d(pool, &run_chunk, context,
                               static_cast<size_t>((p.block + entries_per_chunk(p) - 1) /
                                                   entries_per_chunk(p)),
                               kPoolFlags);
  }
}

}  // namespace tern::cpu
