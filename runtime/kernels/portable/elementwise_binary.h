// Shared driver of the broadcasting binary kernels (add, mul): argument checks, dtype
// dispatch, output shape check.
#pragma once

#include <cmath>
#include <limits>
#include <cstdint>
#include <type_traits>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern {
namespace portable {

/// Wrapping integer arithmetic (ATen semantics, no signed-overflow UB); plain for floats.
template <typename T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

/// A scalar argument (Int or Double EValue) converted to T. For integer T a Double must hold
/// an integral value that fits (ATen refuses float alpha for integer tensors).
template <typename T>
Error scalar_arg(const char* op, const char* name, const EValue& v, T* out) {
  if (v.is_int()) {
    if constexpr (std::is_integral<T>::value) {
      TERN_CHECK_OR_RETURN_ERROR(
          v.payload.i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
              v.payload.i <= static_cast<int64_t>(std::numeric_limits<T>::max()),
          InvalidArgument, "%s: %s: value %lld does not fit the tensor dtype", op, name,
          static_cast<long long>(v.payload.i));
    }
    *out = static_cast<T>(v.payload.i);
    return Error::Ok;
  }
  if (v.is_double()) {
    if constexpr (std::is_integral<T>::value) {
      TERN_RETURN_ERROR(InvalidArgument,
                        "%s: %s: expected an int for an integer tensor, found double %g", op,
                        name, v.payload.d);
    } else {
      *out = static_cast<T>(v.payload.d);
      return Error::Ok;
    }
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: %s: expected an int or double, found %s", op, name,
                    to_string(v.tag));
}

/// Runs out = f(a, b, alpha) with broadcasting. `args` is (a, b, out) or, when
/// `accepts_alpha`, also (a, b, alpha, out). `a` is a tensor; `b` a tensor or an Int/Double
/// scalar. a, b and out share one dtype among f32, i32, i64; out's shape must be the broadcast
/// shape. `F` is a functor template instantiated per dtype: F::template apply<T>(a, b, alpha).
template <typename F>
Error run_binary(const char* op, Span<EValue*> args, bool accepts_alpha) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, accepts_alpha ? 4 : 3));
  const size_t out_index = args.size() - 1;
  TERN_ASSIGN_OR_RETURN(TensorView* a, tensor_arg(op, args, 0, "a"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, out_index, "out"));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "a", *a, Span<const DType>(kAllowed)));
  TERN_CHECK_OR_RETURN_ERROR(args[1] != nullptr, InvalidArgument,
                             "%s: argument 1 (b) is a null EValue", op);
  TensorView* b = nullptr;
  if (args[1]->is_tensor()) {
    TERN_ASSIGN_OR_RETURN(b, tensor_arg(op, args, 1, "b"));
    TERN_RETURN_IF_ERROR(check_dtype(op, "b", *b, a->dtype));
  } else {
    TERN_CHECK_OR_RETURN_ERROR(args[1]->is_int() || args[1]->is_double(), InvalidArgument,
                               "%s: argument 1 (b): expected a tensor or a scalar, found %s", op,
                               to_string(args[1]->tag));
  }
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, a->dtype));
  FixedShape shape;
  const Span<const int64_t> b_shape = b ? b->shape() : Span<const int64_t>();
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, a->shape(), b_shape, &shape));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  if (accepts_alpha && args.size() == 4) {
    TERN_CHECK_OR_RETURN_ERROR(args[2] != nullptr, InvalidArgument,
                               "%s: argument 2 (alpha) is a null EValue", op);
  }
  const EValue* alpha = (accepts_alpha && args.size() == 4) ? args[2] : nullptr;

  auto run = [&](auto zero) -> Error {
    using T = decltype(zero);
    T alpha_value = 1;
    if (alpha != nullptr) TERN_RETURN_IF_ERROR(scalar_arg<T>(op, "alpha", *alpha, &alpha_value));
    T b_scalar = 0;
    const T* b_data = &b_scalar;
    if (b != nullptr) {
      b_data = b->data_as<const T>();
    } else {
      TERN_RETURN_IF_ERROR(scalar_arg<T>(op, "b", *args[1], &b_scalar));
    }
    broadcast_binary<T>(a->data_as<const T>(), a->shape(), b_data, b_shape, out->data_as<T>(),
                        out->shape(),
                        [alpha_value](T x, T y) { return F::template apply<T>(x, y, alpha_value); });
    return Error::Ok;
  };
  switch (a->dtype) {
    case DType::F32: return run(float{});
    case DType::I32: return run(int32_t{});
    case DType::I64: return run(int64_t{});
    default: break;
  }
  TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(a->dtype));
}

}  // namespace portable
}  // namespace tern
