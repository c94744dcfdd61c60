#include "runtime/kernels/portable/elementwise_unary.h"

namespace tern {
namespace portable {

Error unary_args(const char* op, Span<EValue*> args, size_t min_args, size_t max_args, Operand* x,
                 TensorView** out) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, min_args, max_args));
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 0, "x", false, x));
  TERN_ASSIGN_OR_RETURN(*out, tensor_arg(op, args, args.size() - 1, "out"));
  return check_shape(op, "out", **out, x->shape);
}

Error check_float_unary(const char* op, const Operand& x, const TensorView& out, IntInputs ints) {
  static const DType kFloat[] = {DType::F32};
  const DType compute =
      ints == IntInputs::Promote && !is_float_dtype(x.dtype) ? DType::F32 : x.dtype;
  TERN_RETURN_IF_ERROR(check_compute_dtype(op, &x, 1, compute, Span<const DType>(kFloat)));
  return check_dtype(op, "out", out, DType::F32);
}

}  // namespace portable
}  // namespace tern
