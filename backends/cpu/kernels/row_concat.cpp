// The row concat (row_concat.h): bands of output rows; in each row the inputs' rows copied one
// after another, or interleaved unit by unit (units of one float through detail::interleave).
#include "backends/cpu/kernels/row_concat.h"

#include "backends/cpu/kernels/interleave.h"
#include "backends/cpu/kernels/row_bands.h"

namespace tern::cpu {
namespace {

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

/// concat_rows over rows [begin, end) of the RowConcatProblem `context`.
void concat_range(const void* context, int64_t begin, int64_t end) {
  const RowConcatProblem& p = *static_cast<const RowConcatProblem*>(context);
  int64_t out_width = 0;
  for (int i = 0; i < p.inputs; ++i) out_width += p.width[i];
  concat_rows(p, out_width, begin, end);
}

}  // namespace

void row_concat(const RowConcatProblem& p, pthreadpool_t pool) {
  int64_t out_width = 0;
  for (int i = 0; i < p.inputs; ++i) out_width += p.width[i];
  detail::run_row_bands(pool, p.rows, out_width, &concat_range, &p);
}

}  // namespace tern::cpu
