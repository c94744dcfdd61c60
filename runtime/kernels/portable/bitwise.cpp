// Broadcasting bitwise operators on integers and bools: tern::bitwise_and, bitwise_or,
// bitwise_xor (a, b, out) and bitwise_not (x, out), as ATen's (docs/ops.md). Operands promote
// as torch.result_type says among i32, i64 and bool; floating operands are refused, as PyTorch
// refuses them. CPM-Ant's attention mask ANDs integer masks.
#include <type_traits>

#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

const DType kIntegral[] = {DType::I32, DType::I64, DType::Bool};
const BinaryOpSpec kBitwiseSpec = {3, Span<const DType>(kIntegral)};

enum class Bitwise { And, Or, Xor };

template <typename T>
Error bitwise_loop(const char* op, BinaryArgs* p, Bitwise kind) {
  T scalars[2] = {};
  TERN_RETURN_IF_ERROR(bind_scalars(op, p, scalars));
  T* out = p->out->data_as<T>();
  switch (kind) {
    case Bitwise::And:
      binary_loop<T, T>(p->a, p->b, out, p->shape.span(), [](T x, T y) { return T(x & y); });
      break;
    case Bitwise::Or:
      binary_loop<T, T>(p->a, p->b, out, p->shape.span(), [](T x, T y) { return T(x | y); });
      break;
    case Bitwise::Xor:
      binary_loop<T, T>(p->a, p->b, out, p->shape.span(), [](T x, T y) { return T(x ^ y); });
      break;
  }
  return Error::Ok;
}

Error bitwise_binary(const char* op, Span<EValue*> args, Bitwise kind) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kBitwiseSpec, &p));  // compute: i32, i64 or bool
  return dispatch_compute(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    if constexpr (std::is_floating_point<T>::value) {
      return Error::Internal;  // not reached: kBitwiseSpec has no floating dtype
    } else {
      return bitwise_loop<T>(op, &p, kind);
    }
  });
}

}  // namespace

Error bitwise_and(KernelContext& /*context*/, Span<EValue*> args) {
  return bitwise_binary("tern::bitwise_and", args, Bitwise::And);
}

Error bitwise_or(KernelContext& /*context*/, Span<EValue*> args) {
  return bitwise_binary("tern::bitwise_or", args, Bitwise::Or);
}

Error bitwise_xor(KernelContext& /*context*/, Span<EValue*> args) {
  return bitwise_binary("tern::bitwise_xor", args, Bitwise::Xor);
}

Error bitwise_not(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::bitwise_not";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 2, 2));
  Operand x;
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 0, "x", false, &x));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 1, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x.dtype));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x.shape));
  TERN_CHECK_OR_RETURN_ERROR(x.dtype == DType::I32 || x.dtype == DType::I64 ||
                                 x.dtype == DType::Bool,
                             InvalidArgument, "%s: expected an integer or bool x, found %s", op,
                             to_string(x.dtype));
  return dispatch_compute(op, x.dtype, [&](auto zero) -> Error {
    using T = decltype(zero);
    if constexpr (std::is_floating_point<T>::value) {
      return Error::Internal;  // not reached: checked above
    } else if constexpr (std::is_same<T, bool>::value) {
      unary_loop<bool, bool>(x, out->data_as<bool>(), out->numel(), [](bool v) { return !v; });
    } else {
      unary_loop<T, T>(x, out->data_as<T>(), out->numel(), [](T v) { return T(~v); });
    }
    return Error::Ok;
  });
}

}  // namespace portable
}  // namespace tern
