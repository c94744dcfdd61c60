// tern::group_norm(x [N, C, *], num_groups, weight [C]?, bias [C]?, eps, out), f32: the
// channels of each sample are split into num_groups groups; each group (contiguous in memory)
// is normalised by its mean and biased variance (double), then weight/bias apply per channel.
#include <cinttypes>
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {

Error group_norm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::group_norm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t groups, reduction::int_arg(op, args, 1, "num_groups"));
  reduction::NormArgs a;
  TERN_RETURN_IF_ERROR(reduction::norm_args(op, args, 2, /*with_bias=*/true, nullptr, *x, &a));
  TensorView* weight = a.weight;
  TensorView* bias = a.bias;
  TensorView* out = a.out;
  const double eps = a.eps;
  TERN_CHECK_OR_RETURN_ERROR(x->rank >= 2, InvalidArgument,
                             "%s: x: expected rank >= 2 [N, C, *], found rank %u", op, x->rank);
  const int64_t n = x->sizes[0];
  const int64_t channels = x->sizes[1];
  TERN_CHECK_OR_RETURN_ERROR(groups > 0 && channels % groups == 0, InvalidArgument,
                             "%s: num_groups: expected a positive divisor of the %" PRId64
                             " channels, found %" PRId64,
                             op, channels, groups);
  const int64_t param_shape[1] = {channels};
  TERN_RETURN_IF_ERROR(
      reduction::check_optional_param(op, "weight", weight, Span<const int64_t>(param_shape)));
  TERN_RETURN_IF_ERROR(
      reduction::check_optional_param(op, "bias", bias, Span<const int64_t>(param_shape)));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  int64_t spatial = 1;
  for (uint32_t d = 2; d < x->rank; ++d) spatial *= x->sizes[d];
  const int64_t per_group = channels / groups;
  const int64_t group_len = per_group * spatial;
  if (n == 0 || group_len == 0) return Error::Ok;
  const float* w = weight ? weight->data_as<const float>() : nullptr;
  const float* b = bias ? bias->data_as<const float>() : nullptr;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t offset = (s * groups + g) * group_len;
      const float* src = x->data_as<const float>() + offset;
      float* dst = out->data_as<float>() + offset;
      double mean = 0.0;
      double var = 0.0;
      reduction::mean_var_f64(src, group_len, &mean, &var);
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t c = 0; c < per_group; ++c) {
        const int64_t channel = g * per_group + c;
        const double scale = rstd * (w ? w[channel] : 1.0f);
        const float fs = static_cast<float>(scale);
        const float shift = static_cast<float>((b ? b[channel] : 0.0f) - mean * scale);
        const float* cs = src + c * spatial;
        float* cd = dst + c * spatial;
        for (int64_t i = 0; i < spatial; ++i) cd[i] = cs[i] * fs + shift;
      }
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
