// tern::histc(x f32, bins: Int, min: Double, max: Double, out f32 [bins]): ATen's histc. The
// range [min, max] (when min == max: x's own minimum and maximum, widened by 1 on each side if
// those are equal too) is cut into `bins` equal bins; element e falls into bin
// floor((e - min) * bins / (max - min)), computed in f32 in that order as ATen does (so an
// element on an inner edge may fall into the bin below it, as there), the last bin closed at
// max; elements outside the range and NaN are not counted. Mixture-of-experts routing counts the tokens per expert with
// it (Hugging Face's grouped experts).
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {

Error histc(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::histc";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t bins, int_arg(op, args, 1, "bins"));
  TERN_ASSIGN_OR_RETURN(const double min_arg, reduction::double_arg(op, args, 2, "min"));
  TERN_ASSIGN_OR_RETURN(const double max_arg, reduction::double_arg(op, args, 3, "max"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 4, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  TERN_CHECK_OR_RETURN_ERROR(bins >= 1, InvalidArgument, "%s: bins is %lld, expected >= 1", op,
                             static_cast<long long>(bins));
  TERN_CHECK_OR_RETURN_ERROR(std::isfinite(min_arg) && std::isfinite(max_arg) && min_arg <= max_arg,
                             InvalidArgument,
                             "%s: range [%g, %g], expected finite bounds with min <= max", op,
                             min_arg, max_arg);
  const int64_t shape[] = {bins};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(shape, 1)));
  const float* xs = x->data_as<const float>();
  const uint64_t n = x->numel();
  float lo = static_cast<float>(min_arg), hi = static_cast<float>(max_arg);
  if (lo == hi && n > 0) {  // the data's range
    bool any = false;
    for (uint64_t i = 0; i < n; ++i) {
      if (xs[i] != xs[i]) continue;
      lo = any && lo < xs[i] ? lo : xs[i];
      hi = any && hi > xs[i] ? hi : xs[i];
      any = true;
    }
    TERN_CHECK_OR_RETURN_ERROR(any || n == 0, InvalidArgument,
                               "%s: x holds only NaN, so the range is not defined", op);
  }
  if (lo == hi) {
    lo -= 1.0f;
    hi += 1.0f;
  }
  float* counts = out->data_as<float>();
  for (int64_t b = 0; b < bins; ++b) counts[b] = 0.0f;
  for (uint64_t i = 0; i < n; ++i) {
    const float e = xs[i];
    if (!(e >= lo && e <= hi)) continue;  // outside the range, or NaN
    const float offset = e - lo;
    const float scaled = offset * static_cast<float>(bins);
    int64_t pos = static_cast<int64_t>(scaled / (hi - lo));
    if (pos >= bins) pos = bins - 1;  // e == max
    if (pos < 0) pos = 0;
    counts[pos] += 1.0f;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
