// tern::logical_and, logical_or (broadcasting) and logical_not → bool; any plain dtype, where
// nonzero (and NaN) is true, -0.0 false.
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

template <typename F>
Error logical_binary(const char* op, Span<EValue*> args, F f) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, &p));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *p.out, DType::Bool));
  bool a_scalar = false, b_scalar = false;
  // Scalars as truth values: any nonzero Int/Double is true.
  if (p.a.scalar != nullptr) {
    const EValue& s = *p.a.scalar;
    a_scalar = s.is_bool() ? s.payload.b : s.is_int() ? s.payload.i != 0 : s.payload.d != 0.0;
    p.a.data = &a_scalar;
    p.a.dtype = DType::Bool;
  }
  if (p.b.scalar != nullptr) {
    const EValue& s = *p.b.scalar;
    b_scalar = s.is_bool() ? s.payload.b : s.is_int() ? s.payload.i != 0 : s.payload.d != 0.0;
    p.b.data = &b_scalar;
    p.b.dtype = DType::Bool;
  }
  binary_loop<bool, bool>(p.a, p.b, p.out->data_as<bool>(), p.shape.span(), f);
  return Error::Ok;
}

}  // namespace

Error logical_and(KernelContext& /*context*/, Span<EValue*> args) {
  return logical_binary("tern::logical_and", args, [](bool x, bool y) { return x && y; });
}

Error logical_or(KernelContext& /*context*/, Span<EValue*> args) {
  return logical_binary("tern::logical_or", args, [](bool x, bool y) { return x || y; });
}

Error logical_not(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::logical_not";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 2, 2));
  Operand x;
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 0, "x", false, &x));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 1, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::Bool));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x.shape));
  unary_loop<bool, bool>(x, out->data_as<bool>(), out->numel(), [](bool v) { return !v; });
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
