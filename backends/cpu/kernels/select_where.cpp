#include "backends/cpu/kernels/select_where.h"

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Output rows per pool task: enough elements per task to pay for the dispatch.
constexpr int64_t kMinFloatsPerTask = 8192;

struct Task {
  const SelectProblem* p;
  int64_t rows_per_task;
  int64_t rows;
};

void run_row(const SelectProblem& p, int64_t row) {
  // The row's offsets in each operand: the leading dims' index, last dim first.
  int64_t c = 0, a = 0, b = 0, rest = row;
  for (int d = p.rank - 2; d >= 0; --d) {
    const int64_t i = rest % p.dims[d];
    rest /= p.dims[d];
    c += i * p.cond_stride[d];
    a += i * p.a_stride[d];
    b += i * p.b_stride[d];
  }
  const int last = p.rank - 1;
  const int64_t n = p.dims[last];
  const int64_t cs = p.cond_stride[last], as = p.a_stride[last], bs = p.b_stride[last];
  float* y = p.y + row * n;
  const float* pa = p.a + a;
  const float* pb = p.b + b;
  if (p.compare == 0) {
    const uint8_t* pc = p.cond + c;
    for (int64_t j = 0; j < n; ++j) y[j] = pc[j * cs] != 0 ? pa[j * as] : pb[j * bs];
    return;
  }
  const float* x = p.x + c;
  const float s = p.s;
  switch (p.compare) {  // one loop per comparison: no branch on the mode per element
    case 1:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] > s ? pa[j * as] : pb[j * bs];
      break;
    case 2:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] >= s ? pa[j * as] : pb[j * bs];
      break;
    case 3:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] < s ? pa[j * as] : pb[j * bs];
      break;
    case 4:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] <= s ? pa[j * as] : pb[j * bs];
      break;
    case 5:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] == s ? pa[j * as] : pb[j * bs];
      break;
    default:
      for (int64_t j = 0; j < n; ++j) y[j] = x[j * cs] != s ? pa[j * as] : pb[j * bs];
      break;
  }
}

void band(void* context, size_t index) {
  const Task& t = *static_cast<const Task*>(context);
  const int64_t first = static_cast<int64_t>(index) * t.rows_per_task;
  const int64_t last = first + t.rows_per_task < t.rows ? first + t.rows_per_task : t.rows;
  for (int64_t r = first; r < last; ++r) run_row(*t.p, r);
}

}  // namespace

void select_strides(const SelectProblem& p, int rank, const uint64_t* dims, int64_t* stride) {
  int64_t step = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int k = d - (p.rank - rank);  // the operand's dim facing output dim d, if any
    if (k < 0) {
      stride[d] = 0;
      continue;
    }
    stride[d] = dims[k] == 1 && p.dims[d] != 1 ? 0 : step;
    step *= static_cast<int64_t>(dims[k]);
  }
}

void select_where(const SelectProblem& p, pthreadpool_t pool) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < p.rank; ++d) rows *= p.dims[d];
  const int64_t n = p.dims[p.rank - 1];
  if (rows <= 0 || n <= 0) return;
  Task t{&p, (kMinFloatsPerTask + n - 1) / n, rows};
  const int64_t tasks = (rows + t.rows_per_task - 1) / t.rows_per_task;
  if (pool == nullptr || tasks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t i = 0; i < tasks; ++i) band(&t, static_cast<size_t>(i));
    return;
  }
  pthreadpool_parallelize_1d(pool, &band, &t, static_cast<size_t>(tasks), kPoolFlags);
}

}  // namespace tern::cpu
