// Shared argument handling of the unary elementwise kernels (unary math, activations).
#pragma once

#include "runtime/kernels/portable/elementwise_binary.h"

namespace tern {
namespace portable {

/// Parses (x, attributes..., out) with `min_args`..`max_args` arguments: x a tensor of a
/// plain dtype, out the last argument, a tensor of x's shape. The caller checks dtypes.
Error unary_args(const char* op, Span<EValue*> args, size_t min_args, size_t max_args, Operand* x,
                 TensorView** out);

/// Checks and runs an op computing in x's own dtype, (x, out): x f32, i32 or i64 (the
/// compute dtype, kNumericDtypes), out of x's dtype and shape; out = ff(x) for f32 and
/// fi(x) for the integers.
template <typename FloatF, typename IntF>
Error numeric_unary(const char* op, Span<EValue*> args, FloatF ff, IntF fi) {
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 2, 2, &x, &out));
  TERN_RETURN_IF_ERROR(check_compute_dtype(op, &x, 1, x.dtype, Span<const DType>(kNumericDtypes)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x.dtype));
  const uint64_t n = out->numel();
  switch (x.dtype) {
    case DType::F32:
      unary_loop<float, float>(x, out->data_as<float>(), n, ff);
      break;
    case DType::I32:
      unary_loop<int32_t, int32_t>(x, out->data_as<int32_t>(), n, fi);
      break;
    default:
      unary_loop<int64_t, int64_t>(x, out->data_as<int64_t>(), n, fi);
      break;
  }
  return Error::Ok;
}

/// How a float op treats non-float inputs.
enum class IntInputs {
  Promote,  ///< ints and bool are read as f32 (exp(int) gives f32, as in ATen)
  Refuse,   ///< only f32 (ATen has no integer version of the op)
};

/// Checks that x (as `ints` says) and out suit a float op computing in f32: out must be f32.
Error check_float_unary(const char* op, const Operand& x, const TensorView& out, IntInputs ints);

/// out = f(x) in f32 after check_float_unary; x read in place or converted.
template <typename F>
void run_float_unary(const Operand& x, TensorView* out, F f) {
  unary_loop<float, float>(x, out->data_as<float>(), out->numel(), f);
}

}  // namespace portable
}  // namespace tern
