#include "runtime/kernels/util/cumsum_array.h"

namespace tern {
namespace portable {

void cumsum_f32(const float* x, float* y, int64_t outer, int64_t size, int64_t inner) {
  constexpr int64_t kChunk = 256;  // columns summed together (their accumulators in L1)
  for (int64_t o = 0; o < outer; ++o) {
    const float* src = x + o * size * inner;
    float* dst = y + o * size * inner;
    for (int64_t c0 = 0; c0 < inner; c0 += kChunk) {
      const int64_t n = inner - c0 < kChunk ? inner - c0 : kChunk;
      double acc[kChunk];
      for (int64_t i = 0; i < n; ++i) acc[i] = 0.0;
      for (int64_t k = 0; k < size; ++k) {
        const float* row = src + k * inner + c0;
        float* out = dst + k * inner + c0;
        for (int64_t i = 0; i < n; ++i) {
          acc[i] += row[i];
          out[i] = static_cast<float>(acc[i]);
        }
      }
    }
  }
}

}  // namespace portable
}  // namespace tern
