// tern::layer_norm(x, normalized_shape, weight?, bias?, eps, out), f32: each row over the
// trailing normalized_shape dims is shifted by its mean and scaled by 1/sqrt(var + eps)
// (biased variance, two passes in double), then weight and bias apply per feature.
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {

Error layer_norm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::layer_norm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(Span<const int64_t> shape,
                        reduction::int_list_arg(op, args, 1, "normalized_shape"));
  TERN_ASSIGN_OR_RETURN(TensorView * weight, reduction::optional_tensor_arg(op, args, 2, "weight"));
  TERN_ASSIGN_OR_RETURN(TensorView * bias, reduction::optional_tensor_arg(op, args, 3, "bias"));
  TERN_ASSIGN_OR_RETURN(const double eps, reduction::double_arg(op, args, 4, "eps"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 5, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  int64_t rows = 0;
  int64_t cols = 0;
  TERN_RETURN_IF_ERROR(reduction::normalized_rows(op, *x, shape, &rows, &cols));
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "weight", weight, shape));
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "bias", bias, shape));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  if (rows == 0 || cols == 0) return Error::Ok;
  const float* w = weight ? weight->data_as<const float>() : nullptr;
  const float* b = bias ? bias->data_as<const float>() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x->data_as<const float>() + r * cols;
    float* dst = out->data_as<float>() + r * cols;
    double mean = 0.0;
    double var = 0.0;
    reduction::mean_var_f64(src, cols, &mean, &var);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    if (w != nullptr && b != nullptr) {
      for (int64_t i = 0; i < cols; ++i) dst[i] = (src[i] - m) * rstd * w[i] + b[i];
    } else if (w != nullptr) {
      for (int64_t i = 0; i < cols; ++i) dst[i] = (src[i] - m) * rstd * w[i];
    } else if (b != nullptr) {
      for (int64_t i = 0; i < cols; ++i) dst[i] = (src[i] - m) * rstd + b[i];
    } else {
      for (int64_t i = 0; i < cols; ++i) dst[i] = (src[i] - m) * rstd;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
