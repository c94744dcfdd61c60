// The channel-group sum (group_sum.h): bands of pixels; per pixel the first group written, the
// others added, each an inner loop over the channels that the compiler vectorizes.
#include "backends/cpu/kernels/group_sum.h"

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Output floats per pool task, so that a split pays for its dispatch.
constexpr int64_t kFloatsPerTask = 16384;
/// Sums of fewer output floats run on the caller's thread.
constexpr int64_t kMinFloatsForPool = int64_t{1} << 17;

struct Band {
  const GroupSumProblem* p = nullptr;
  int64_t rows_per_task = 1;  ///< pixels over all samples
};

void sum_rows(const GroupSumProblem& p, int64_t begin, int64_t end) {
  const int64_t c_n = p.channels;
  int64_t total_groups = 0;
  for (int i = 0; i < p.parts; ++i) total_groups += p.groups[i];
  for (int64_t row = begin; row < end; ++row) {  // row = n * pixels + pixel
    const int64_t n = row / p.pixels;
    float* __restrict y = p.y + row * c_n;
    const float* w = p.weight != nullptr ? p.weight + n * total_groups * c_n : nullptr;
    bool first = true;
    for (int i = 0; i < p.parts; ++i) {
      const int64_t r_n = p.groups[i];
      const float* xi = p.x[i] + row * r_n * c_n;
      for (int64_t r = 0; r < r_n; ++r, xi += c_n) {
        const float* __restrict x = xi;
        if (w != nullptr) {
          const float* __restrict s = w;
          if (first) {
            for (int64_t c = 0; c < c_n; ++c) y[c] = x[c] * s[c];
          } else {
            for (int64_t c = 0; c < c_n; ++c) {
              const float t = x[c] * s[c];
              y[c] += t;
            }
          }
          w += c_n;
        } else if (first) {
          for (int64_t c = 0; c < c_n; ++c) y[c] = x[c];
        } else {
          for (int64_t c = 0; c < c_n; ++c) y[c] += x[c];
        }
        first = false;
      }
    }
  }
}

void sum_band(void* context, size_t i) {
  const Band& b = *static_cast<const Band*>(context);
  const int64_t rows = b.p->samples * b.p->pixels;
  const int64_t begin = static_cast<int64_t>(i) * b.rows_per_task;
  const int64_t end = begin + b.rows_per_task < rows ? begin + b.rows_per_task : rows;
  sum_rows(*b.p, begin, end);
}

}  // namespace

void group_sum(const GroupSumProblem& p, pthreadpool_t pool) {
  const int64_t rows = p.samples * p.pixels;
  if (rows <= 0 || p.channels <= 0 || p.parts <= 0) return;
  Band b;
  b.p = &p;
  b.rows_per_task = p.channels >= kFloatsPerTask ? 1 : kFloatsPerTask / p.channels;
  const size_t tasks = static_cast<size_t>((rows + b.rows_per_task - 1) / b.rows_per_task);
  if (pool == nullptr || tasks <= 1 || rows * p.channels < kMinFloatsForPool ||
      pthreadpool_get_threads_count(pool) <= 1) {
    sum_rows(p, 0, rows);
    return;
  }
  pthreadpool_parallelize_1d(pool, &sum_band, &b, tasks, kPoolFlags);
}

}  // namespace tern::cpu
