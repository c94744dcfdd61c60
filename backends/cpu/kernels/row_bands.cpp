#include "backends/cpu/kernels/row_bands.h"

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu::detail {
namespace {

/// Output floats per pool task, so that a split pays for its dispatch.
constexpr int64_t kFloatsPerTask = 16384;
/// Passes over fewer output floats run on the caller's thread (a dispatch waits for every
/// worker; below this the pass is cheaper than the wait).
constexpr int64_t kMinFloatsForPool = int64_t{1} << 17;

struct Bands {
  RowRangeFn fn = nullptr;
  const void* context = nullptr;
  int64_t rows = 0;
  int64_t rows_per_task = 1;
};

void run_band(void* bands, size_t i) {
  const Bands& b = *static_cast<const Bands*>(bands);
  const int64_t begin = static_cast<int64_t>(i) * b.rows_per_task;
  const int64_t end = begin + b.rows_per_task < b.rows ? begin + b.rows_per_task : b.rows;
  b.fn(b.context, begin, end);
}

}  // namespace

void run_row_bands(pthreadpool_t pool, int64_t rows, int64_t row_floats, RowRangeFn fn,
                   const void* context) {
  if (rows <= 0 || row_floats <= 0) return;
  Bands b;
  b.fn = fn;
  b.context = context;
  b.rows = rows;
  b.rows_per_task = row_floats >= kFloatsPerTask ? 1 : kFloatsPerTask / row_floats;
  const size_t tasks = static_cast<size_t>((rows + b.rows_per_task - 1) / b.rows_per_task);
  if (pool == nullptr || tasks <= 1 || rows * row_floats < kMinFloatsForPool ||
      pthreadpool_get_threads_count(pool) <= 1) {
    fn(context, 0, rows);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_band, &b, tasks, kPoolFlags);
}

}  // namespace tern::cpu::detail
