// tern::logical_and, logical_or (broadcasting) and logical_not → bool; any plain dtype, where
// nonzero (and NaN) is true, -0.0 false.
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

// When `o` is a scalar, stores its truth value (any nonzero Int/Double is true) in *storage
// and points `o` at it.
void bind_truth_value(Operand* o, bool* storage) {
  if (o->scalar == nullptr) return;
  const EValue& s = *o->scalar;
  *storage = s.is_bool() ? s.payload.b : s.is_int() ? s.payload.i != 0 : s.payload.d != 0.0;
  o->data = storage;
  o->dtype = DType::Bool;
}

template <typename F>
Error logical_binary(const char* op, Span<EValue*> args, F f) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kPredicateSpec, &p));
  bool scalars[2] = {false, false};
  bind_truth_value(&p.a, &scalars[0]);
  bind_truth_value(&p.b, &scalars[1]);
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
