// Broadcasting arithmetic: tern::add, sub, mul, div, pow, maximum, minimum (docs/ops.md).
// Operands promote as torch.result_type says; the loop computes in the promoted dtype.
#include <cmath>

#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

const DType kNumericBool[] = {DType::F32, DType::I32, DType::I64, DType::Bool};
const DType kFloat[] = {DType::F32};

// What each op takes, for binary_args: {most arguments, compute dtypes, int_to_float}; out
// has the compute dtype.
const BinaryOpSpec kAddSubSpec = {4, Span<const DType>(kNumericDtypes)};  // alpha? before out
const BinaryOpSpec kMulSpec = {3, Span<const DType>(kNumericBool)};
const BinaryOpSpec kTrueDivSpec = {4, Span<const DType>(kFloat), /*int_to_float=*/true};
const BinaryOpSpec kRoundingDivSpec = {4, Span<const DType>(kNumericDtypes)};
const BinaryOpSpec kPowSpec = {3, Span<const DType>(kFloat)};
const BinaryOpSpec kExtremumSpec = {3, Span<const DType>(kNumericDtypes)};

// Shared by add and sub (a, b, alpha?, out): out = a + sign * alpha * b.
Error add_sub(const char* op, Span<EValue*> args, bool subtract) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kAddSubSpec, &p));
  const EValue* alpha = nullptr;
  if (args.size() == 4) {
    TERN_ASSIGN_OR_RETURN(alpha, value_arg(op, args, 2, "alpha"));
  }
  return dispatch_compute(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    T scalars[2] = {};
    TERN_RETURN_IF_ERROR(bind_scalars(op, &p, scalars));
    T alpha_value = 1;
    if (alpha != nullptr) TERN_RETURN_IF_ERROR(scalar_arg<T>(op, "alpha", *alpha, &alpha_value));
    if constexpr (std::is_same<T, bool>::value) {
      return Error::Ok;  // not reached: bool is not in kNumericDtypes
    } else {
      T* out = p.out->data_as<T>();
      if (alpha_value == T(1)) {
        if (subtract) {
          binary_loop<T, T>(p.a, p.b, out, p.shape.span(), [](T x, T y) { return wrap_sub(x, y); });
        } else {
          binary_loop<T, T>(p.a, p.b, out, p.shape.span(), [](T x, T y) { return wrap_add(x, y); });
        }
      } else {
        const T scale = subtract ? wrap_neg(alpha_value) : alpha_value;
        binary_loop<T, T>(p.a, p.b, out, p.shape.span(),
                          [scale](T x, T y) { return wrap_add(x, wrap_mul(scale, y)); });
      }
      return Error::Ok;
    }
  });
}

// Python's float floor division (ATen div_floor for floating types).
float floor_divide(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div == 0.0f) return std::copysign(0.0f, a / b);
  float floored = std::floor(div);
  if (div - floored > 0.5f) floored += 1.0f;
  return floored;
}

// Integer division rounding toward zero (trunc) or toward -inf (floor); b == 0 sets *by_zero.
template <typename T>
T int_divide(T a, T b, bool floor_mode, bool* by_zero) {
  if (b == 0) {
    *by_zero = true;
    return 0;
  }
  if (b == T(-1)) return wrap_neg(a);  // MIN / -1 wraps instead of trapping
  T q = static_cast<T>(a / b);
  if (floor_mode && (a % b) != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

template <typename T, typename F>
Error simple_binary(const char* op, BinaryArgs& p, F f) {
  T scalars[2] = {};
  TERN_RETURN_IF_ERROR(bind_scalars(op, &p, scalars));
  binary_loop<T, T>(p.a, p.b, p.out->data_as<T>(), p.shape.span(), f);
  return Error::Ok;
}

// maximum (kMax) and minimum: a NaN operand gives NaN, as in ATen.
template <bool kMax>
Error extremum(const char* op, Span<EValue*> args) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kExtremumSpec, &p));
  return dispatch_compute(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    return simple_binary<T>(op, p, [](T x, T y) {
      if constexpr (std::is_floating_point<T>::value) {
        if (std::isnan(x)) return x;
        if (std::isnan(y)) return y;
      }
      if constexpr (kMax) {
        return x > y ? x : y;
      } else {
        return x < y ? x : y;
      }
    });
  });
}

}  // namespace

Error add(KernelContext& /*context*/, Span<EValue*> args) {
  return add_sub("tern::add", args, /*subtract=*/false);
}

Error sub(KernelContext& /*context*/, Span<EValue*> args) {
  return add_sub("tern::sub", args, /*subtract=*/true);
}

Error mul(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::mul";
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kMulSpec, &p));
  return dispatch_compute(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    if constexpr (std::is_same<T, bool>::value) {
      return simple_binary<T>(op, p, [](bool x, bool y) { return x && y; });
    } else {
      return simple_binary<T>(op, p, [](T x, T y) { return wrap_mul(x, y); });
    }
  });
}

Error div_kernel(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::div";
  // rounding_mode first: it decides the compute dtype that binary_args checks.
  enum class Mode { True, Trunc, Floor } mode = Mode::True;
  if (args.size() == 4) {
    TERN_ASSIGN_OR_RETURN(const EValue* m, value_arg(op, args, 2, "rounding_mode"));
    if (string_equals(*m, "trunc")) {
      mode = Mode::Trunc;
    } else if (string_equals(*m, "floor")) {
      mode = Mode::Floor;
    } else if (!m->is_none()) {
      if (m->is_string()) {
        TERN_RETURN_ERROR(
            InvalidArgument,
            "%s: rounding_mode: expected \"trunc\", \"floor\" or None, found "
            "\"%.*s\"",
            op, static_cast<int>(m->payload.string.size > 32 ? 32 : m->payload.string.size),
            m->payload.string.data);
      }
      TERN_RETURN_ERROR(InvalidArgument, "%s: rounding_mode: expected a string or None, found %s",
                        op, to_string(m->tag));
    }
  }
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(
      binary_args(op, args, mode == Mode::True ? kTrueDivSpec : kRoundingDivSpec, &p));
  if (mode == Mode::True) {
    return simple_binary<float>(op, p, [](float x, float y) { return x / y; });
  }
  const bool floor_mode = mode == Mode::Floor;
  return dispatch_compute(op, p.compute, [&](auto zero) -> Error {
    using T = decltype(zero);
    if constexpr (std::is_same<T, float>::value) {
      if (floor_mode) return simple_binary<T>(op, p, floor_divide);
      return simple_binary<T>(op, p, [](float x, float y) { return std::trunc(x / y); });
    } else if constexpr (std::is_same<T, bool>::value) {
      return Error::Ok;  // not reached: bool is not in kNumericDtypes
    } else {
      bool by_zero = false;
      TERN_RETURN_IF_ERROR(simple_binary<T>(op, p, [&by_zero, floor_mode](T x, T y) {
        return int_divide(x, y, floor_mode, &by_zero);
      }));
      TERN_CHECK_OR_RETURN_ERROR(!by_zero, InvalidArgument,
                                 "%s: integer division by zero (b holds a 0)", op);
      return Error::Ok;
    }
  });
}

Error pow_kernel(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::pow";
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kPowSpec, &p));
  if (p.b.scalar != nullptr) {
    // Common exponents exactly as ATen computes them.
    float e = 0.0f;
    TERN_RETURN_IF_ERROR(scalar_arg<float>(op, "b", *p.b.scalar, &e));
    float* out = p.out->data_as<float>();
    const uint64_t n = p.out->numel();
    if (e == 2.0f) {
      unary_loop<float, float>(p.a, out, n, [](float x) { return x * x; });
      return Error::Ok;
    }
    if (e == 0.5f) {
      unary_loop<float, float>(p.a, out, n, [](float x) { return std::sqrt(x); });
      return Error::Ok;
    }
    if (e == 1.0f) {
      unary_loop<float, float>(p.a, out, n, [](float x) { return x; });
      return Error::Ok;
    }
  }
  return simple_binary<float>(op, p, [](float x, float y) { return std::pow(x, y); });
}

Error maximum(KernelContext& /*context*/, Span<EValue*> args) {
  return extremum</*kMax=*/true>("tern::maximum", args);
}

Error minimum(KernelContext& /*context*/, Span<EValue*> args) {
  return extremum</*kMax=*/false>("tern::minimum", args);
}

}  // namespace portable
}  // namespace tern
