#include "backends/cpu/kernels/index_rows.h"

#include <cstring>

namespace tern::cpu {

int64_t index_rows(const IndexRowsProblem& p) {
  for (int64_t k = 0; k < p.count; ++k) {  // every index checked before any copy
    if (p.index[k] < 0 || p.index[k] >= p.rows) return k;
  }
  const size_t bytes = static_cast<size_t>(p.inner) * sizeof(float);
  for (int64_t o = 0; o < p.outer; ++o) {
    const float* src = p.x + o * p.rows * p.inner;
    float* dst = p.out + o * p.count * p.inner;
    for (int64_t k = 0; k < p.count; ++k) {
      std::memcpy(dst + k * p.inner, src + p.index[k] * p.inner, bytes);
    }
  }
  return -1;
}

}  // namespace tern::cpu
