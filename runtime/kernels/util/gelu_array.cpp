// GELU over a float array: the vector_math.h forms compiled for the baseline, AVX2+FMA and
// AVX-512, picked at run time (simd_dispatch.h).
#include "runtime/kernels/util/gelu_array.h"

#include <cstring>

#include "runtime/kernels/util/simd_dispatch.h"
#include "runtime/kernels/util/vector_math.h"

namespace tern {
namespace portable {
namespace {

// y = gelu(x) over n floats, a block of kGeluBlock at a time through a local buffer: constant
// trip counts and no aliasing between x and y (they may be the same array), so the loop
// vectorizes at -O2 as well.
template <bool kTanh>
TERN_SIMD_INLINE void gelu_loop(const float* x, float* y, int64_t n) {
  constexpr int64_t kGeluBlock = 64;
  alignas(64) float in[kGeluBlock];
  alignas(64) float res[kGeluBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kGeluBlock) {
    const int64_t m = n - i0 < kGeluBlock ? n - i0 : kGeluBlock;
    const float* src = x + i0;
    if (m < kGeluBlock) {
      std::memcpy(in, src, static_cast<size_t>(m) * sizeof(float));
      for (int64_t j = m; j < kGeluBlock; ++j) in[j] = 0.0f;
      src = in;
    }
    for (int64_t j = 0; j < kGeluBlock; ++j) {
      res[j] = kTanh ? vmath::gelu_tanh(src[j]) : vmath::gelu_erf(src[j]);
    }
    std::memcpy(y + i0, res, static_cast<size_t>(m) * sizeof(float));
  }
}

void gelu_baseline(bool tanh_form, const float* x, float* y, int64_t n) {
  if (tanh_form) {
    gelu_loop<true>(x, y, n);
  } else {
    gelu_loop<false>(x, y, n);
  }
}

#if defined(TERN_SIMD_X86_DISPATCH)
TERN_SIMD_TARGET_AVX2 void gelu_avx2(bool tanh_form, const float* x, float* y, int64_t n) {
  if (tanh_form) {
    gelu_loop<true>(x, y, n);
  } else {
    gelu_loop<false>(x, y, n);
  }
}

TERN_SIMD_TARGET_AVX512 void gelu_avx512(bool tanh_form, const float* x, float* y, int64_t n) {
  if (tanh_form) {
    gelu_loop<true>(x, y, n);
  } else {
    gelu_loop<false>(x, y, n);
  }
}
#endif

}  // namespace

void gelu_f32(bool tanh_form, const float* x, float* y, int64_t n) {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (simd_level()) {
    case SimdLevel::Avx512:
      gelu_avx512(tanh_form, x, y, n);
      return;
    case SimdLevel::Avx2:
      gelu_avx2(tanh_form, x, y, n);
      return;
    default:
      break;
  }
#endif
  gelu_baseline(tanh_form, x, y, n);
}


}  // namespace portable
}  // namespace tern
