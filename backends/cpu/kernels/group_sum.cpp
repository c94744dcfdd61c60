// The channel-group sum (group_sum.h): bands of pixels; per pixel the first group written, the
// others added, each an inner loop over the channels that the compiler vectorizes.
#include "backends/cpu/kernels/group_sum.h"

#include "backends/cpu/kernels/row_bands.h"

namespace tern::cpu {
namespace {

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

/// sum_rows over rows [begin, end) of the GroupSumProblem `context`.
void sum_range(const void* context, int64_t begin, int64_t end) {
  sum_rows(*static_cast<const GroupSumProblem*>(context), begin, end);
}

}  // namespace

void group_sum(const GroupSumProblem& p, pthreadpool_t pool) {
  if (p.parts <= 0) return;
  detail::run_row_bands(pool, p.samples * p.pixels, p.channels, &sum_range, &p);
}

}  // namespace tern::cpu
