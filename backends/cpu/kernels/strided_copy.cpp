// The strided copy (strided_copy.h): the output's rows (all dims but the last) cut into bands,
// each row's input start found by unravelling its index once, then stepped like an odometer.
#include "backends/cpu/kernels/strided_copy.h"

#include <cstring>

namespace tern::cpu {
namespace {

/// Output floats per pool task, so that a split pays for its dispatch.
constexpr int64_t kFloatsPerTask = 16384;
/// Copies of fewer floats run on the caller's thread: a pool dispatch waits for every worker,
/// and on a loaded machine a descheduled one costs more than copying 2 MiB.
constexpr int64_t kMinFloatsForPool = int64_t{1} << 19;

struct Band {
  const StridedCopyProblem* p = nullptr;
  int64_t rows = 0;  ///< output rows (product of all extents but the last)
  int64_t rows_per_task = 1;
};

void copy_rows(const StridedCopyProblem& p, int64_t begin, int64_t end) {
  const int last = p.rank - 1;
  const int64_t width = p.extent[last];
  const int64_t inner = p.stride[last];
  // The index of row `begin` over dims 0..last-1, and its input offset.
  int64_t idx[kStridedCopyMaxDims] = {};
  int64_t at = p.offset;
  int64_t rest = begin;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = rest % p.extent[d];
    rest /= p.extent[d];
    at += idx[d] * p.stride[d];
  }
  float* dst = p.y + begin * width;
  for (int64_t r = begin; r < end; ++r, dst += width) {
    const float* src = p.x + at;
    if (inner == 1) {
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(width));
    } else {
      for (int64_t i = 0; i < width; ++i) dst[i] = src[i * inner];
    }
    for (int d = last - 1; d >= 0; --d) {  // next row: odometer step
      at += p.stride[d];
      if (++idx[d] < p.extent[d]) break;
      at -= idx[d] * p.stride[d];
      idx[d] = 0;
    }
  }
}

void copy_band(void* context, size_t i) {
  const Band& b = *static_cast<const Band*>(context);
  const int64_t begin = static_cast<int64_t>(i) * b.rows_per_task;
  const int64_t end = begin + b.rows_per_task < b.rows ? begin + b.rows_per_task : b.rows;
  copy_rows(*b.p, begin, end);
}

}  // namespace

void strided_copy(const StridedCopyProblem& p, pthreadpool_t pool) {
  Band b;
  b.p = &p;
  b.rows = 1;
  for (int d = 0; d + 1 < p.rank; ++d) b.rows *= p.extent[d];
  const int64_t width = p.extent[p.rank - 1];
  b.rows_per_task = width >= kFloatsPerTask ? 1 : kFloatsPerTask / width;
  const size_t tasks = static_cast<size_t>((b.rows + b.rows_per_task - 1) / b.rows_per_task);
  if (pool == nullptr || tasks <= 1 || b.rows * width < kMinFloatsForPool ||
      pthreadpool_get_threads_count(pool) <= 1) {
    copy_rows(p, 0, b.rows);
    return;
  }
  pthreadpool_parallelize_1d(pool, &copy_band, &b, tasks, 0);
}

}  // namespace tern::cpu
