// Unary math: tern::neg, abs (f32 and int), exp, log, expm1, log1p, acos, asin, atan, sqrt, rsqrt, reciprocal, sin, cos, tanh,
// sigmoid, erf (f32; int/bool inputs give f32 as in ATen), floor, ceil, round (f32; round is
// half to even; integers pass through unchanged).
#include <cmath>
#include <cstring>

#include "runtime/kernels/portable/elementwise_unary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

template <typename F>
Error float_unary(const char* op, Span<EValue*> args, F f) {
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 2, 2, &x, &out));
  TERN_RETURN_IF_ERROR(check_float_unary(op, x, *out, IntInputs::Promote));
  run_float_unary(x, out, f);
  return Error::Ok;
}

// floor, ceil, round: f32, or an integer/bool tensor copied unchanged into its own dtype.
template <typename F>
Error rounding_unary(const char* op, Span<EValue*> args, F f) {
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 2, 2, &x, &out));
  if (is_int_dtype(x.dtype) || x.dtype == DType::Bool) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x.dtype));
    uint64_t bytes = 0;
    (void)dtype_nbytes(x.dtype, out->numel(), &bytes);  // fits: tensor_arg checked nbytes
    if (bytes != 0 && out->data != x.data) memmove(out->data, x.data, bytes);
    return Error::Ok;
  }
  TERN_RETURN_IF_ERROR(check_float_unary(op, x, *out, IntInputs::Refuse));
  run_float_unary(x, out, f);
  return Error::Ok;
}

}  // namespace

Error neg(KernelContext&, Span<EValue*> args) {
  return numeric_unary(
      "tern::neg", args, [](float v) { return -v; }, [](auto v) { return wrap_neg(v); });
}

Error abs_kernel(KernelContext&, Span<EValue*> args) {
  return numeric_unary(
      "tern::abs", args, [](float v) { return std::fabs(v); },
      [](auto v) { return v < 0 ? wrap_neg(v) : v; });
}

Error exp_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::exp", args, [](float v) { return std::exp(v); });
}
Error log_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::log", args, [](float v) { return std::log(v); });
}
Error expm1_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::expm1", args, [](float v) { return std::expm1(v); });
}
Error log1p_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::log1p", args, [](float v) { return std::log1p(v); });
}
Error acos_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::acos", args, [](float v) { return std::acos(v); });
}
Error asin_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::asin", args, [](float v) { return std::asin(v); });
}
Error atan_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::atan", args, [](float v) { return std::atan(v); });
}
Error sqrt_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::sqrt", args, [](float v) { return std::sqrt(v); });
}
Error rsqrt(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::rsqrt", args, [](float v) { return 1.0f / std::sqrt(v); });
}
Error reciprocal(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::reciprocal", args, [](float v) { return 1.0f / v; });
}
Error sin_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::sin", args, [](float v) { return std::sin(v); });
}
Error cos_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::cos", args, [](float v) { return std::cos(v); });
}
Error tanh_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::tanh", args, [](float v) { return std::tanh(v); });
}
Error sigmoid(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::sigmoid", args, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}
Error erf_kernel(KernelContext&, Span<EValue*> args) {
  return float_unary("tern::erf", args, [](float v) { return std::erf(v); });
}
Error floor_kernel(KernelContext&, Span<EValue*> args) {
  return rounding_unary("tern::floor", args, [](float v) { return std::floor(v); });
}
Error ceil_kernel(KernelContext&, Span<EValue*> args) {
  return rounding_unary("tern::ceil", args, [](float v) { return std::ceil(v); });
}
Error round_kernel(KernelContext&, Span<EValue*> args) {
  // nearbyint rounds half to even in the default rounding mode, as torch.round does.
  return rounding_unary("tern::round", args, [](float v) { return std::nearbyint(v); });
}

}  // namespace portable
}  // namespace tern
