// The attention softmax row (attention_softmax_row.h). Two passes over the row, which is in L1
// or L2: scale (+ mask) and the running maximum; then e^(x - max) and the sum. The exponential
// reduces x to r = x - n ln 2 (|r| <= ln 2 / 2) and takes e^r from the degree-5 polynomial of
// gemm_activation.cpp's sigmoid, times 2^n.
#include "backends/cpu/kernels/attention_softmax_row.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/exp_poly.h"  // simd_dispatch.h, <immintrin.h> on x86
#include "runtime/kernels/util/vector_math.h"

namespace tern::cpu {
namespace {

namespace vmath = portable::vmath;

using namespace exp_poly;  // NOLINT(build/namespaces): the polynomial's constants

/// Plain loops (aarch64 and builds without x86 dispatch): the maximum in 16 lanes.
float row_plain(float* s, int64_t lim, int64_t keys, float scale, const float* mask) {
  constexpr int kLanes = 16;
  for (int64_t j = 0; j < lim; ++j) s[j] = s[j] * scale + (mask != nullptr ? mask[j] : 0.0f);
  float mx[kLanes];
  for (float& m : mx) m = -INFINITY;
  int64_t j = 0;
  for (; j + kLanes <= lim; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) mx[l] = s[j + l] > mx[l] ? s[j + l] : mx[l];
  }
  for (; j < lim; ++j) mx[0] = s[j] > mx[0] ? s[j] : mx[0];
  float m = mx[0];
  for (int l = 1; l < kLanes; ++l) m = mx[l] > m ? mx[l] : m;
  bool nan = false;
  if (m == -INFINITY) {
    for (j = 0; j < lim; ++j) nan |= s[j] != s[j];
    if (!nan) {
      std::memset(s, 0, sizeof(float) * static_cast<size_t>(keys));
      return 0.0f;
    }
  }
  float sum[kLanes] = {};
  for (j = 0; j + kLanes <= lim; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      s[j + l] = vmath::exp_nonpositive(s[j + l] - m);
      sum[l] += s[j + l];
    }
  }
  for (; j < lim; ++j) {
    s[j] = vmath::exp_nonpositive(s[j] - m);
    sum[0] += s[j];
  }
  for (j = lim; j < keys; ++j) s[j] = 0.0f;
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) sum[l] += sum[l + w];
  }
  return 1.0f / sum[0];
}

#if defined(TERN_SIMD_X86_DISPATCH)

constexpr __mmask16 kAll = 0xFFFF;

/// The maximum and the sum of 16 lanes (GCC 12's _mm512_reduce_* warn of an uninitialized
/// pass-through).
TERN_SIMD_TARGET_AVX512 inline float hmax_avx512(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float m = t[0];
  for (int l = 1; l < 16; ++l) m = t[l] > m ? t[l] : m;
  return m;
}

TERN_SIMD_TARGET_AVX512 inline float hsum_avx512(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  for (int w = 8; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) t[l] += t[l + w];
  }
  return t[0];
}

TERN_SIMD_TARGET_AVX512 float row_avx512(float* s, int64_t lim, int64_t keys, float scale,
                                         const float* mask) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  __mmask16 nan = 0;
  for (int64_t j = 0; j < lim; j += 16) {
    const __mmask16 m = lim - j >= 16 ? kAll : static_cast<__mmask16>((1u << (lim - j)) - 1u);
    __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), vs);
    if (mask != nullptr) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, mask + j));
    _mm512_mask_storeu_ps(s + j, m, x);
    mx = _mm512_mask_max_ps(mx, m, x, mx);  // NaN x: keeps mx
    nan |= _mm512_mask_cmp_ps_mask(m, x, x, _CMP_UNORD_Q);
  }
  const float top = hmax_avx512(mx);
  if (top == -INFINITY && nan == 0) {
    std::memset(s, 0, sizeof(float) * static_cast<size_t>(keys));
    return 0.0f;
  }
  const __m512 vm = _mm512_set1_ps(top == -INFINITY ? 0.0f : top);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < lim; j += 16) {
    const __mmask16 m = lim - j >= 16 ? kAll : static_cast<__mmask16>((1u << (lim - j)) - 1u);
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), vm));
    _mm512_mask_storeu_ps(s + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  if (keys > lim) std::memset(s + lim, 0, sizeof(float) * static_cast<size_t>(keys - lim));
  return 1.0f / hsum_avx512(sum);
}

TERN_SIMD_TARGET_AVX2 inline float hmax_avx2(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

TERN_SIMD_TARGET_AVX2 inline float hsum_avx2(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

TERN_SIMD_TARGET_AVX2 float row_avx2(float* s, int64_t lim, int64_t keys, float scale,
                                     const float* mask) {
  const __m256 vs = _mm256_set1_ps(scale);
  __m256 mx = _mm256_set1_ps(-INFINITY);
  __m256 nan = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= lim; j += 8) {
    __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + j), vs);
    if (mask != nullptr) x = _mm256_add_ps(x, _mm256_loadu_ps(mask + j));
    _mm256_storeu_ps(s + j, x);
    mx = _mm256_max_ps(x, mx);  // NaN x: keeps mx
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
  float top = hmax_avx2(mx);
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  for (; j < lim; ++j) {
    s[j] = s[j] * scale + (mask != nullptr ? mask[j] : 0.0f);
    top = s[j] > top ? s[j] : top;
    any_nan |= s[j] != s[j];
  }
  if (top == -INFINITY && !any_nan) {
    std::memset(s, 0, sizeof(float) * static_cast<size_t>(keys));
    return 0.0f;
  }
  if (top == -INFINITY) top = 0.0f;
  const __m256 vm = _mm256_set1_ps(top);
  __m256 sum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= lim; j += 8) {
    const __m256 e = exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  float total = hsum_avx2(sum);
  for (; j < lim; ++j) {
    s[j] = vmath::exp_nonpositive(s[j] - top);
    total += s[j];
  }
  if (keys > lim) std::memset(s + lim, 0, sizeof(float) * static_cast<size_t>(keys - lim));
  return 1.0f / total;
}

#endif  // TERN_SIMD_X86_DISPATCH

}  // namespace

AttentionSoftmaxRowFn attention_softmax_row() {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (portable::simd_level()) {
    case portable::SimdLevel::Avx512:
      return &row_avx512;
    case portable::SimdLevel::Avx2:
      return &row_avx2;
    default:
      break;
  }
#endif
  return &row_plain;
}

}  // namespace tern::cpu
