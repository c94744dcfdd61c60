// tern::rms_norm(x, normalized_shape, weight?, eps or None, out), f32:
// out = x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims; eps None
// is f32's machine epsilon (ATen's default). The mean of squares accumulates in double.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {

Error rms_norm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::rms_norm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(Span<const int64_t> shape,
                        reduction::int_list_arg(op, args, 1, "normalized_shape"));
  const double default_eps = FLT_EPSILON;
  reduction::NormArgs a;
  TERN_RETURN_IF_ERROR(
      reduction::norm_args(op, args, 2, /*with_bias=*/false, &default_eps, *x, &a));
  int64_t rows = 0;
  int64_t cols = 0;
  TERN_RETURN_IF_ERROR(reduction::check_row_norm(op, *x, shape, a, &rows, &cols));
  if (rows == 0 || cols == 0) return Error::Ok;
  const double eps = a.eps;
  TensorView* out = a.out;
  const float* w = a.weight ? a.weight->data_as<const float>() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x->data_as<const float>() + r * cols;
    float* dst = out->data_as<float>() + r * cols;
    double a0 = 0.0;
    double a1 = 0.0;
    int64_t i = 0;
    for (; i + 2 <= cols; i += 2) {
      a0 += static_cast<double>(src[i]) * src[i];
      a1 += static_cast<double>(src[i + 1]) * src[i + 1];
    }
    for (; i < cols; ++i) a0 += static_cast<double>(src[i]) * src[i];
    const double mean_sq = (a0 + a1) / static_cast<double>(cols);
    const float scale = static_cast<float>(1.0 / std::sqrt(mean_sq + eps));
    if (w != nullptr) {
      for (int64_t k = 0; k < cols; ++k) dst[k] = src[k] * scale * w[k];
    } else {
      for (int64_t k = 0; k < cols; ++k) dst[k] = src[k] * scale;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
