// tern::layer_norm(x, normalized_shape, weight?, bias?, eps, out), f32: each row over the
// trailing normalized_shape dims is shifted by its mean and scaled by 1/sqrt(var + eps)
// (biased variance, two passes in double), then weight and bias apply per feature.
// The passes are fixed-length lane loops the compiler vectorizes (double sums in kLanes
// partial sums, a fixed order), built for AVX2 and AVX-512 as well (simd_dispatch.h).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"
#include "runtime/kernels/util/simd_dispatch.h"

namespace tern {
namespace portable {
namespace {

constexpr int kLanes = 8;

// Sum of v[0..kLanes) as ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)).
TERN_SIMD_INLINE double fold(const double (&v)[kLanes]) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// Mean and biased variance of n > 0 floats, two passes in double.
TERN_SIMD_INLINE void row_mean_var(const float* x, int64_t n, double* mean, double* var) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(x[i + l]);
  }
  double tail = 0.0;
  for (; i < n; ++i) tail += static_cast<double>(x[i]);
  const double m = (fold(acc) + tail) / static_cast<double>(n);
  double sq[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double d = static_cast<double>(x[i + l]) - m;
      sq[l] += d * d;
    }
  }
  tail = 0.0;
  for (; i < n; ++i) tail += (static_cast<double>(x[i]) - m) * (static_cast<double>(x[i]) - m);
  *mean = m;
  *var = (fold(sq) + tail) / static_cast<double>(n);
}

// dst[i] = (src[i] - m) * rstd * w[i] + b[i] (w, b optional), 16 at a time through a local
// buffer (no aliasing to check: dst may be src), then the tail.
template <bool kW, bool kB>
TERN_SIMD_INLINE void affine_row(const float* src, float* dst, int64_t n, float m, float rstd,
                                 const float* w, const float* b) {
  auto f = [&](int64_t i) {
    float y = (src[i] - m) * rstd;
    if (kW) y *= w[i];
    if (kB) y += b[i];
    return y;
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float block[16];
    for (int j = 0; j < 16; ++j) block[j] = f(i + j);
    std::memcpy(dst + i, block, sizeof(block));
  }
  for (; i < n; ++i) dst[i] = f(i);
}

TERN_SIMD_INLINE void normalize_rows(const float* x, float* out, int64_t rows, int64_t cols,
                                     const float* w, const float* b, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * cols;
    float* dst = out + r * cols;
    double mean = 0.0;
    double var = 0.0;
    row_mean_var(src, cols, &mean, &var);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    if (w != nullptr && b != nullptr) {
      affine_row<true, true>(src, dst, cols, m, rstd, w, b);
    } else if (w != nullptr) {
      affine_row<true, false>(src, dst, cols, m, rstd, w, b);
    } else if (b != nullptr) {
      affine_row<false, true>(src, dst, cols, m, rstd, w, b);
    } else {
      affine_row<false, false>(src, dst, cols, m, rstd, w, b);
    }
  }
}

void normalize_baseline(const float* x, float* out, int64_t rows, int64_t cols, const float* w,
                        const float* b, double eps) {
  normalize_rows(x, out, rows, cols, w, b, eps);
}

#if defined(TERN_SIMD_X86_DISPATCH)
TERN_SIMD_TARGET_AVX2 void normalize_avx2(const float* x, float* out, int64_t rows, int64_t cols,
                                          const float* w, const float* b, double eps) {
  normalize_rows(x, out, rows, cols, w, b, eps);
}

TERN_SIMD_TARGET_AVX512 void normalize_avx512(const float* x, float* out, int64_t rows,
                                              int64_t cols, const float* w, const float* b,
                                              double eps) {
  normalize_rows(x, out, rows, cols, w, b, eps);
}
#endif

}  // namespace

Error layer_norm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::layer_norm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(Span<const int64_t> shape,
                        reduction::int_list_arg(op, args, 1, "normalized_shape"));
  reduction::NormArgs a;
  TERN_RETURN_IF_ERROR(reduction::norm_args(op, args, 2, /*with_bias=*/true, nullptr, *x, &a));
  int64_t rows = 0;
  int64_t cols = 0;
  TERN_RETURN_IF_ERROR(reduction::check_row_norm(op, *x, shape, a, &rows, &cols));
  if (rows == 0 || cols == 0) return Error::Ok;
  const double eps = a.eps;
  const float* w = a.weight ? a.weight->data_as<const float>() : nullptr;
  const float* b = a.bias ? a.bias->data_as<const float>() : nullptr;
  const float* src = x->data_as<const float>();
  float* dst = a.out->data_as<float>();
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (simd_level()) {
    case SimdLevel::Avx512:
      normalize_avx512(src, dst, rows, cols, w, b, eps);
      return Error::Ok;
    case SimdLevel::Avx2:
      normalize_avx2(src, dst, rows, cols, w, b, eps);
      return Error::Ok;
    default:
      break;
  }
#endif
  normalize_baseline(src, dst, rows, cols, w, b, eps);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
