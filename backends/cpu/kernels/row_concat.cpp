// The row concat (row_concat.h): bands of output rows; in each row the inputs' rows copied one
// after another, or interleaved unit by unit (units of one float through detail::interleave).
#include "backends/cpu/kernels/row_concat.h"

#include "backends/cpu/kernels/interleave.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Output floats per pool task, so that a split pays for its dispatch.
constexpr int64_t kFloatsPerTask = 16384;
/// Concats of fewer output floats run on the caller's thread (a dispatch waits for every
/// worker; below this the copy is cheaper than the wait).
constexpr int64_t kMinFloatsForPool = int64_t{1} << 17;

struct Band {
  const RowConcatProblem* p = nullptr;
  int64_t out_width = 0;
  int64_t rows_per_task = 1;
};

void concat_rows(const RowConcatProblem& p, int64_t out_width, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    float* dst = p.y + r * out_width;
    const float* src[kRowConcatMaxInputs];
    for (int i = 0; i < p.inputs; ++i) src[i] = p.x[i] + r * p.stride[i];
    if (p.unit == 0) {
      for (int i = 0; i < p.inputs; ++i) {
        detail::copy_floats(dst, src[i], p.width[i]);
        dst += p.width[i];
      }
    } else if (p.unit == 1) {
      detail::interleave(dst, src, p.inputs, p.width[0]);
    } else {
      for (int64_t k = 0; k < p.width[0]; k += p.unit) {
        for (int i = 0; i < p.inputs; ++i) {
          detail::copy_floats(dst, src[i] + k, p.unit);
          dst += p.unit;
        }
      }
    }
  }
}

void concat_band(void* context, size_t i) {
  const Band& b = *static_cast<const Band*>(context);
  const int64_t begin = static_cast<int64_t>(i) * b.rows_per_task;
  const int64_t end = begin + b.rows_per_task < b.p->rows ? begin + b.rows_per_task : b.p->rows;
  concat_rows(*b.p, b.out_width, begin, end);
}

}  // namespace

void row_concat(const RowConcatProblem& p, pthreadpool_t pool) {
  Band b;
  b.p = &p;
  for (int i = 0; i < p.inputs; ++i) b.out_width += p.width[i];
  if (p.rows <= 0 || b.out_width <= 0) return;
  b.rows_per_task = b.out_width >= kFloatsPerTask ? 1 : kFloatsPerTask / b.out_width;
  const size_t tasks = static_cast<size_t>((p.rows + b.rows_per_task - 1) / b.rows_per_task);
  if (pool == nullptr || tasks <= 1 || p.rows * b.out_width < kMinFloatsForPool ||
      pthreadpool_get_threads_count(pool) <= 1) {
    concat_rows(p, b.out_width, 0, p.rows);
    return;
  }
  pthreadpool_parallelize_1d(pool, &concat_band, &b, tasks, kPoolFlags);
}

}  // namespace tern::cpu
