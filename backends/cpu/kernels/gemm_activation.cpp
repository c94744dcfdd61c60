// The GEMM epilogue's activations: plain loops over the vector_math.h forms (the portable
// kernels' own, so a delegate and its portable fallback agree), compiled three times with
// target attributes and picked with the microkernels' ISA; SiLU and sigmoid in AVX-512 and AVX2
// intrinsics (the plain loops are their baseline).
#include "backends/cpu/kernels/gemm_activation.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/exp_poly.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "runtime/kernels/util/vector_math.h"

#if defined(TERN_SIMD_X86_DISPATCH)
#include <immintrin.h>
#endif

namespace tern::cpu {
namespace {

namespace vmath = portable::vmath;

// Elements per block: a constant trip count lets the loop vectorize; a tail goes through a
// local buffer.
constexpr int64_t kBlock = 16;

/// SiLU, x · sigmoid(x), as x / (1 + e) for x >= 0 and x · e / (1 + e) for x < 0 with
/// e = e^(-|x|), so the exponential never overflows (the form of vmath::gelu_tanh). Within 2 ulp
/// of the portable kernel's x / (1 + exp(-x)); results below 2^-126 in magnitude (x < -87)
/// flush to -0, where the portable kernel's are tiny negatives.
TERN_SIMD_INLINE float silu(float x) {
  const float e = vmath::exp_nonpositive(-std::fabs(x));
  const float num = vmath::select(x < 0.0f, e, 1.0f);
  return x * num / (1.0f + e);
}

/// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, e = e^(-|x|) (as silu).
TERN_SIMD_INLINE float sigmoid(float x) {
  const float e = vmath::exp_nonpositive(-std::fabs(x));
  const float num = vmath::select(x < 0.0f, e, 1.0f);
  return num / (1.0f + e);
}

template <GemmActivation kAct>
TERN_SIMD_INLINE float apply(float v, float alpha) {
  if (kAct == GemmActivation::LeakyRelu) return v > 0.0f ? v : v * alpha;  // the portable form
  if (kAct == GemmActivation::Hardswish) {
    const float r = v + 3.0f;
    const float c = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return v * c / 6.0f;
  }
  if (kAct == GemmActivation::GeluErf) return vmath::gelu_erf(v);
  if (kAct == GemmActivation::Silu) return silu(v);
  if (kAct == GemmActivation::Sigmoid) return sigmoid(v);
  if (kAct == GemmActivation::Square) return v * v;
  return vmath::gelu_tanh(v);
}

template <GemmActivation kAct>
TERN_SIMD_INLINE void loop(float* x, int64_t n, float alpha) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float* p = x + i;
    for (int64_t j = 0; j < kBlock; ++j) p[j] = apply<kAct>(p[j], alpha);
  }
  if (i < n) {
    alignas(64) float tail[kBlock] = {};
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(tail, x + i, bytes);
    for (int64_t j = 0; j < kBlock; ++j) tail[j] = apply<kAct>(tail[j], alpha);
    std::memcpy(x + i, tail, bytes);
  }
}

template <GemmActivation kAct>
void run_baseline(float* x, int64_t rows, int64_t cols, int64_t ld, float alpha) {
  for (int64_t r = 0; r < rows; ++r) loop<kAct>(x + r * ld, cols, alpha);
}

#if defined(TERN_SIMD_X86_DISPATCH)
template <GemmActivation kAct>
TERN_SIMD_TARGET_AVX2 void run_avx2(float* x, int64_t rows, int64_t cols, int64_t ld,
                                    float alpha) {
  for (int64_t r = 0; r < rows; ++r) loop<kAct>(x + r * ld, cols, alpha);
}

template <GemmActivation kAct>
TERN_SIMD_TARGET_AVX512 void run_avx512(float* x, int64_t rows, int64_t cols, int64_t ld,
                                        float alpha) {
  for (int64_t r = 0; r < rows; ++r) loop<kAct>(x + r * ld, cols, alpha);
}
#endif

#if defined(TERN_SIMD_X86_DISPATCH)
// SiLU and sigmoid in intrinsics: sigmoid(x) = 1 / (1 + e) with e = e^(-x), the argument clamped
// to [-87, 87] (e stays a normal float), e by a scale of 2^n and a degree-5 polynomial on
// r in [-ln2/2, ln2/2] (a relative minimax fit of our own: 2.1e-7 in f32), 1 / (1 + e) by a
// reciprocal estimate and a Newton step in AVX-512, by a division in AVX2. Below x = -87 the
// sigmoid is 0 (as vmath's flush), so silu(x) = x · 0: -0, and NaN for -inf as in the portable
// kernel; NaN propagates (max(c, NaN) and min(c, NaN) are NaN). AVX-512: 18 vector operations
// per 16 floats, 11% faster than the plain loop (kernels/README.md). AVX2: four vectors at a
// time with their operations interleaved (below).
using namespace exp_poly;  // NOLINT(build/namespaces): the polynomial's constants

/// The maskz forms with a full mask: GCC 12's unmasked ones warn of an uninitialized
/// pass-through (as in depthwise_row_avx512.cpp).
constexpr __mmask16 kAll = 0xFFFF;

template <bool kSilu>
TERN_SIMD_TARGET_AVX512 inline __m512 sigmoid_or_silu_avx512(__m512 x) {
  const __m512 z = _mm512_maskz_min_ps(
      kAll, _mm512_set1_ps(87.0f),
      _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-87.0f), _mm512_sub_ps(_mm512_setzero_ps(), x)));
  const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), exp_clamped_avx512(z));
  __m512 sig = _mm512_maskz_rcp14_ps(kAll, den);
  sig = _mm512_mul_ps(sig, _mm512_fnmadd_ps(den, sig, _mm512_set1_ps(2.0f)));
  // x < -87: 0 (an unordered compare keeps NaN).
  sig = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ), sig);
  return kSilu ? _mm512_mul_ps(x, sig) : sig;
}

template <bool kSilu>
TERN_SIMD_TARGET_AVX512 void sigmoid_row_avx512(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(x + i, sigmoid_or_silu_avx512<kSilu>(_mm512_loadu_ps(x + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, m, sigmoid_or_silu_avx512<kSilu>(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <bool kSilu>
TERN_SIMD_TARGET_AVX512 void run_sigmoid_avx512(float* x, int64_t rows, int64_t cols, int64_t ld,
                                                float /*alpha*/) {
  for (int64_t r = 0; r < rows; ++r) sigmoid_row_avx512<kSilu>(x + r * ld, cols);
}

/// The sigmoid (or SiLU) of U vectors, each operation applied to all U before the next: one
/// vector's chain of dependent operations is about 80 cycles long, and an AVX2 core such as AMD
/// Zen 1 overlaps only about three independent ones, so U = 4 interleaved chains run faster
/// than a loop over single vectors (measured on Zen 1, in GEMM tiles of 6 x 16: 1.72 -> 1.26 ns
/// per float). The reciprocal is a division (faster there than the estimate and two Newton
/// steps, and correctly rounded).
template <bool kSilu, int U>
TERN_SIMD_TARGET_AVX2 inline void sigmoid_or_silu_avx2(__m256 (&x)[U]) {
  __m256 z[U], n[U], r[U], p[U];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    z[u] = _mm256_min_ps(
        _mm256_set1_ps(87.0f),
        _mm256_max_ps(_mm256_set1_ps(-87.0f), _mm256_sub_ps(_mm256_setzero_ps(), x[u])));
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    n[u] = _mm256_round_ps(_mm256_mul_ps(z[u], _mm256_set1_ps(kLog2e)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2Hi), z[u]);
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2Lo), r[u]);
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    p[u] = _mm256_fmadd_ps(_mm256_set1_ps(kC5), r[u], _mm256_set1_ps(kC4));
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kC3));
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kC2));
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kC1));
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kC0));
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    // 2^n for n in [-126, 126] (|z| <= 87): n + 127 into the exponent field; den = 1 + e.
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n[u]), _mm256_set1_epi32(127)), 23);
    r[u] = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(p[u], _mm256_castsi256_ps(bits)));
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) p[u] = _mm256_div_ps(_mm256_set1_ps(1.0f), r[u]);
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    // x < -87: 0 (an unordered compare keeps NaN).
    const __m256 sig =
        _mm256_and_ps(_mm256_cmp_ps(x[u], _mm256_set1_ps(-87.0f), _CMP_NLT_UQ), p[u]);
    x[u] = kSilu ? _mm256_mul_ps(x[u], sig) : sig;
  }
}

/// Every whole vector of every row, four at a time (taken across rows: a GEMM tile's rows are
/// two vectors wide; a last group of fewer is padded with a local vector), then each row's last
/// cols % 8 floats through a local buffer. The pointers advance by counters, not a gathered
/// array (a group helper called with an array of pointers cost a third more on Zen 1).
template <bool kSilu>
TERN_SIMD_TARGET_AVX2 void run_sigmoid_avx2(float* x, int64_t rows, int64_t cols, int64_t ld,
                                            float /*alpha*/) {
  const int64_t full = cols / 8 * 8;
  const int64_t total = rows * (full / 8);
  alignas(32) float spare[8] = {};
  int64_t r = 0, c = 0;  // the next whole vector: row r, column c
  for (int64_t v = 0; v < total; v += 4) {
    float* at[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      if (v + u < total) {
        at[u] = x + r * ld + c;
        c += 8;
        if (c == full) {
          c = 0;
          ++r;
        }
      } else {
        at[u] = spare;
      }
    }
    __m256 q[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) q[u] = _mm256_loadu_ps(at[u]);
    sigmoid_or_silu_avx2<kSilu, 4>(q);
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) _mm256_storeu_ps(at[u], q[u]);
  }
  if (full == cols) return;
  const size_t bytes = static_cast<size_t>(cols - full) * sizeof(float);
  for (int64_t row = 0; row < rows; ++row) {
    alignas(32) float tail[8] = {};
    std::memcpy(tail, x + row * ld + full, bytes);
    __m256 q[1] = {_mm256_load_ps(tail)};
    sigmoid_or_silu_avx2<kSilu, 1>(q);
    _mm256_store_ps(tail, q[0]);
    std::memcpy(x + row * ld + full, tail, bytes);
  }
}
#endif

/// c OP= m row by row: 16 floats at a time (a constant trip count the compiler vectorizes for
/// the target), then the tail.
template <bool kAdd>
TERN_SIMD_INLINE void operand_rows(float* c, const float* m, int64_t rows, int64_t cols,
                                   int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict cr = c + r * ld;
    const float* __restrict mr = m + r * ld;
    int64_t j = 0;
    for (; j + kBlock <= cols; j += kBlock) {
      for (int64_t t = 0; t < kBlock; ++t) {
        cr[j + t] = kAdd ? cr[j + t] + mr[j + t] : cr[j + t] * mr[j + t];
      }
    }
    for (; j < cols; ++j) cr[j] = kAdd ? cr[j] + mr[j] : cr[j] * mr[j];
  }
}

template <bool kAdd>
void operand_baseline(float* c, const float* m, int64_t rows, int64_t cols, int64_t ld) {
  operand_rows<kAdd>(c, m, rows, cols, ld);
}

#if defined(TERN_SIMD_X86_DISPATCH)
template <bool kAdd>
TERN_SIMD_TARGET_AVX2 void operand_avx2(float* c, const float* m, int64_t rows, int64_t cols,
                                        int64_t ld) {
  operand_rows<kAdd>(c, m, rows, cols, ld);
}

template <bool kAdd>
TERN_SIMD_TARGET_AVX512 void operand_avx512(float* c, const float* m, int64_t rows,
                                            int64_t cols, int64_t ld) {
  operand_rows<kAdd>(c, m, rows, cols, ld);
}
#endif

template <bool kAdd>
OperandFn pick_operand() {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      return &operand_avx512<kAdd>;
    case GemmIsa::Avx2:
      return &operand_avx2<kAdd>;
    case GemmIsa::Scalar:
      break;
  }
#endif
  return &operand_baseline<kAdd>;
}

/// c = c · scale + shift per column, row by row: 16 floats at a time, then the tail (each
/// product rounded before the add, as PyTorch's batch norm does in float).
TERN_SIMD_INLINE void affine_rows(float* c, const float* scale, const float* shift, int64_t rows,
                                  int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict cr = c + r * ld;
    const float* __restrict s = scale;
    const float* __restrict t = shift;
    int64_t j = 0;
    for (; j + kBlock <= cols; j += kBlock) {
      for (int64_t i = 0; i < kBlock; ++i) {
        const float prod = cr[j + i] * s[j + i];
        cr[j + i] = prod + t[j + i];
      }
    }
    for (; j < cols; ++j) {
      const float prod = cr[j] * s[j];
      cr[j] = prod + t[j];
    }
  }
}

void affine_baseline(float* c, const float* scale, const float* shift, int64_t rows, int64_t cols,
                     int64_t ld) {
  affine_rows(c, scale, shift, rows, cols, ld);
}

#if defined(TERN_SIMD_X86_DISPATCH)
TERN_SIMD_TARGET_AVX2 void affine_avx2(float* c, const float* scale, const float* shift,
                                       int64_t rows, int64_t cols, int64_t ld) {
  affine_rows(c, scale, shift, rows, cols, ld);
}

TERN_SIMD_TARGET_AVX512 void affine_avx512(float* c, const float* scale, const float* shift,
                                           int64_t rows, int64_t cols, int64_t ld) {
  affine_rows(c, scale, shift, rows, cols, ld);
}
#endif

template <GemmActivation kAct>
ActivationFn pick() {
#if defined(TERN_SIMD_X86_DISPATCH)
  constexpr bool kSigmoidForm = kAct == GemmActivation::Silu || kAct == GemmActivation::Sigmoid;
  constexpr bool kSilu = kAct == GemmActivation::Silu;
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      return kSigmoidForm ? &run_sigmoid_avx512<kSilu> : &run_avx512<kAct>;
    case GemmIsa::Avx2:
      return kSigmoidForm ? &run_sigmoid_avx2<kSilu> : &run_avx2<kAct>;
    case GemmIsa::Scalar:
      break;
  }
#endif
  return &run_baseline<kAct>;
}

}  // namespace

OperandFn gemm_multiply_fn() { return pick_operand<false>(); }

OperandFn gemm_add_fn() { return pick_operand<true>(); }

AffineFn gemm_affine_fn() {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      return &affine_avx512;
    case GemmIsa::Avx2:
      return &affine_avx2;
    case GemmIsa::Scalar:
      break;
  }
#endif
  return &affine_baseline;
}

ActivationFn gemm_activation_fn(GemmActivation act) {
  switch (act) {
    case GemmActivation::None:
      return nullptr;
    case GemmActivation::Hardswish:
      return pick<GemmActivation::Hardswish>();
    case GemmActivation::GeluErf:
      return pick<GemmActivation::GeluErf>();
    case GemmActivation::GeluTanh:
      return pick<GemmActivation::GeluTanh>();
    case GemmActivation::Silu:
      return pick<GemmActivation::Silu>();
    case GemmActivation::Sigmoid:
      return pick<GemmActivation::Sigmoid>();
    case GemmActivation::Square:
      return pick<GemmActivation::Square>();
    case GemmActivation::LeakyRelu:
      return pick<GemmActivation::LeakyRelu>();
  }
  return nullptr;
}

}  // namespace tern::cpu
