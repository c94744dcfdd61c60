#include "backends/cpu/kernels/gather_map.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

constexpr int64_t kChunk = 4096;  // elements a task copies when the block is split

/// y[o, t] for t in [begin, end).
void copy_range(const GatherMapProblem& p, int64_t o, int64_t begin, int64_t end) {
  const float* x = p.x + o * p.step;
  float* y = p.y + o * p.block;
  for (int64_t t = begin; t < end; ++t) {
    int32_t offset;
    std::memcpy(&offset, p.map + 4 * t, 4);
    y[t] = x[offset];
  }
}

void run_row(void* context, size_t o) {
  const GatherMapProblem& p = *static_cast<const GatherMapProblem*>(context);
  copy_range(p, static_cast<int64_t>(o), 0, p.block);
}

void run_chunk(void* context, size_t c) {
  const GatherMapProblem& p = *static_cast<const GatherMapProblem*>(context);
  const int64_t begin = static_cast<int64_t>(c) * kChunk;
  copy_range(p, 0, begin, std::min(p.block, begin + kChunk));
}

}  // namespace

void gather_map(const GatherMapProblem& p, pthreadpool_t pool) {
  const int64_t work = p.outer * p.block;
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
                               static_cast<size_t>((p.block + kChunk - 1) / kChunk), kPoolFlags);
  }
}

}  // namespace tern::cpu
