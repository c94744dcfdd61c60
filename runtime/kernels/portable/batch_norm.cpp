// tern::batch_norm(x [N, C, *], weight [C]?, bias [C]?, running_mean [C], running_var [C],
// eps, out), f32, inference: out = (x - mean) / sqrt(var + eps) * weight + bias per channel,
// applied as one scale and shift per channel (computed in double).
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {

Error batch_norm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::batch_norm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 7, 7));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * weight, reduction::optional_tensor_arg(op, args, 1, "weight"));
  TERN_ASSIGN_OR_RETURN(TensorView * bias, reduction::optional_tensor_arg(op, args, 2, "bias"));
  TERN_ASSIGN_OR_RETURN(TensorView * mean, tensor_arg(op, args, 3, "running_mean"));
  TERN_ASSIGN_OR_RETURN(TensorView * var, tensor_arg(op, args, 4, "running_var"));
  TERN_ASSIGN_OR_RETURN(const double eps, reduction::double_arg(op, args, 5, "eps"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 6, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  TERN_CHECK_OR_RETURN_ERROR(x->rank >= 2, InvalidArgument,
                             "%s: x: expected rank >= 2 [N, C, *], found rank %u", op, x->rank);
  const int64_t channels = x->sizes[1];
  const Span<const int64_t> param_shape(&x->sizes[1], 1);
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "weight", weight, param_shape));
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "bias", bias, param_shape));
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "running_mean", mean, param_shape));
  TERN_RETURN_IF_ERROR(reduction::check_optional_param(op, "running_var", var, param_shape));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  int64_t spatial = 1;
  for (uint32_t d = 2; d < x->rank; ++d) spatial *= x->sizes[d];
  const int64_t n = x->sizes[0];
  if (n == 0 || channels == 0 || spatial == 0) return Error::Ok;
  const float* w = weight ? weight->data_as<const float>() : nullptr;
  const float* b = bias ? bias->data_as<const float>() : nullptr;
  const float* rm = mean->data_as<const float>();
  const float* rv = var->data_as<const float>();
  const float* src = x->data_as<const float>();
  float* dst = out->data_as<float>();
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t c = 0; c < channels; ++c) {
      const double scale = (w ? w[c] : 1.0) / std::sqrt(static_cast<double>(rv[c]) + eps);
      const float fs = static_cast<float>(scale);
      const float shift = static_cast<float>((b ? b[c] : 0.0) - rm[c] * scale);
      const int64_t offset = (s * channels + c) * spatial;
      for (int64_t i = 0; i < spatial; ++i) dst[offset + i] = src[offset + i] * fs + shift;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
