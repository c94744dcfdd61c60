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

/// Calls fn(T{}) for the C++ type of integral dtype `d`.
template <typename Fn>
Error dispatch_integral(const char* op, DType d, Fn fn) {
  switch (d) {
    case DType::I32:
      return fn(int32_t{});
    case DType::I64:
      return fn(int64_t{});
    case DType::Bool:
      return fn(bool{});
    default:
      break;
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: expected integer or bool operands, found %s", op,
                    to_string(d));
}

enum class Bitwise { And, Or, Xor };

Error bitwise_binary(const char* op, Span<EValue*> args, Bitwise kind) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kBitwiseSpec, &p));
  return dispatch_integral(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    T scalars[2] = {};
    TERN_RETURN_IF_ERROR(bind_scalars(op, &p, scalars));
    T* out = p.out->data_as<T>();
    switch (kind) {
      case Bitwise::And:
        binary_loop<T, T>(p.a, p.b, out, p.shape.span(), [](T x, T y) { return T(x & y); });
        break;
      case Bitwise::Or:
        binary_loop<T, T>(p.a, p.b, out, p.shape.span(), [](T x, T y) { return T(x | y); });
        break;
      case Bitwise::Xor:
        binary_loop<T, T>(p.a, p.b, out, p.shape.span(), [](T x, T y) { return T(x ^ y); });
        break;
    }
    return Error::Ok;
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
  return dispatch_integral(op, x.dtype, [&](auto zero) -> Error {
    using T = decltype(zero);
    if constexpr (std::is_same<T, bool>::value) {
      unary_loop<bool, bool>(x, out->data_as<bool>(), out->numel(), [](bool v) { return !v; });
    } else {
      unary_loop<T, T>(x, out->data_as<T>(), out->numel(), [](T v) { return T(~v); });
    }
    return Error::Ok;
  });
}

}  // namespace portable
}  // namespace tern
