// Activations: tern::relu (f32, int), clamp (f32, int), hardtanh, leaky_relu, elu, gelu
// (erf and tanh forms), silu, hardswish, hardsigmoid, softplus (f32), as ATen defines them.
// Trailing attributes may be omitted (ATen defaults) since out is always the last argument.
// gelu runs gelu_array.h (the vectorizable forms of vector_math.h, built for AVX2 and AVX-512).
#include <cmath>
#include <cstring>

#include "runtime/kernels/util/softplus_value.h"
#include "runtime/kernels/portable/elementwise_unary.h"
#include "runtime/kernels/util/gelu_array.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/util/simd_dispatch.h"
#include "runtime/kernels/util/vector_math.h"

namespace tern {
namespace portable {
namespace {

// An activation computing in f32 from f32 input only, with nothing but doubles as attributes.
template <typename MakeF>
Error float_activation(const char* op, Span<EValue*> args, size_t num_attrs, MakeF make_f) {
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 2, 2 + num_attrs, &x, &out));
  TERN_RETURN_IF_ERROR(check_float_unary(op, x, *out, IntInputs::Refuse));
  return make_f(args.size() - 1, x, out);
}

}  // namespace

Error relu(KernelContext& /*context*/, Span<EValue*> args) {
  // NaN stays NaN, as in ATen (clamp_min propagates NaN).
  auto f = [](auto v) { return v < 0 ? decltype(v)(0) : v; };
  return numeric_unary("tern::relu", args, f, f);
}

Error clamp(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::clamp";
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 4, 4, &x, &out));
  const EValue* bounds[2] = {args[1], args[2]};
  const char* names[2] = {"min", "max"};
  ResultType rt;
  TensorView xt;
  xt.dtype = x.dtype;
  xt.rank = static_cast<uint32_t>(x.shape.size());
  rt.add_tensor(xt);
  for (int k = 0; k < 2; ++k) {
    TERN_CHECK_OR_RETURN_ERROR(bounds[k] != nullptr, InvalidArgument,
                               "%s: argument %d (%s) is a null EValue", op, k + 1, names[k]);
    TERN_CHECK_OR_RETURN_ERROR(
        bounds[k]->is_none() || bounds[k]->is_int() || bounds[k]->is_double(), InvalidArgument,
        "%s: argument %d (%s): expected an int, a double or None, found %s", op, k + 1, names[k],
        to_string(bounds[k]->tag));
    rt.add_scalar(*bounds[k]);
  }
  TERN_CHECK_OR_RETURN_ERROR(!bounds[0]->is_none() || !bounds[1]->is_none(), InvalidArgument,
                             "%s: expected min or max to be given, found both None", op);
  const DType compute = rt.result();
  TERN_RETURN_IF_ERROR(check_compute_dtype(op, &x, 1, compute, Span<const DType>(kNumericDtypes)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, compute));
  auto run = [&](auto zero) -> Error {
    using T = decltype(zero);
    const bool has_lo = !bounds[0]->is_none();
    const bool has_hi = !bounds[1]->is_none();
    T lo = 0, hi = 0;
    if (has_lo) TERN_RETURN_IF_ERROR(scalar_arg<T>(op, "min", *bounds[0], &lo));
    if (has_hi) TERN_RETURN_IF_ERROR(scalar_arg<T>(op, "max", *bounds[1], &hi));
    // min(max(x, lo), hi): NaN x stays NaN; lo > hi gives hi, as in ATen.
    unary_loop<T, T>(x, out->data_as<T>(), out->numel(), [=](T v) {
      T r = v;
      if (has_lo) r = r < lo ? lo : r;
      if (has_hi) r = r > hi ? hi : r;
      return r;
    });
    return Error::Ok;
  };
  switch (compute) {
    case DType::F32:
      return run(float{});
    case DType::I32:
      return run(int32_t{});
    default:
      return run(int64_t{});
  }
}

Error hardtanh(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::hardtanh";
  return float_activation(op, args, 2, [&](size_t out_index, const Operand& x, TensorView* out) {
    double lo = -1.0, hi = 1.0;
    TERN_RETURN_IF_ERROR(double_attr(op, args, 1, out_index, "min_val", -1.0, &lo));
    TERN_RETURN_IF_ERROR(double_attr(op, args, 2, out_index, "max_val", 1.0, &hi));
    const float l = static_cast<float>(lo), h = static_cast<float>(hi);
    run_float_unary(x, out, [l, h](float v) { return v <= l ? l : (v >= h ? h : v); });
    return Error::Ok;
  });
}

Error leaky_relu(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::leaky_relu";
  return float_activation(op, args, 1, [&](size_t out_index, const Operand& x, TensorView* out) {
    double slope = 0.01;
    TERN_RETURN_IF_ERROR(double_attr(op, args, 1, out_index, "negative_slope", 0.01, &slope));
    const float s = static_cast<float>(slope);
    run_float_unary(x, out, [s](float v) { return v > 0.0f ? v : v * s; });
    return Error::Ok;
  });
}

Error elu(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::elu";
  return float_activation(op, args, 3, [&](size_t out_index, const Operand& x, TensorView* out) {
    double alpha = 1.0, scale = 1.0, input_scale = 1.0;
    TERN_RETURN_IF_ERROR(double_attr(op, args, 1, out_index, "alpha", 1.0, &alpha));
    TERN_RETURN_IF_ERROR(double_attr(op, args, 2, out_index, "scale", 1.0, &scale));
    TERN_RETURN_IF_ERROR(double_attr(op, args, 3, out_index, "input_scale", 1.0, &input_scale));
    const float neg = static_cast<float>(alpha * scale);
    const float pos = static_cast<float>(scale);
    const float in = static_cast<float>(input_scale);
    run_float_unary(x, out,
                    [=](float v) { return v <= 0.0f ? std::expm1(v * in) * neg : v * pos; });
    return Error::Ok;
  });
}

Error gelu(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::gelu";
  return float_activation(op, args, 1, [&](size_t out_index, const Operand& x, TensorView* out) {
    bool tanh_form = false;
    if (out_index > 1) {
      const EValue* a = args[1];
      TERN_CHECK_OR_RETURN_ERROR(a != nullptr, InvalidArgument,
                                 "%s: argument 1 (approximate) is a null EValue", op);
      const bool is_none = a->is_string() && a->payload.string.size == 4 &&
                           memcmp(a->payload.string.data, "none", 4) == 0;
      tanh_form = a->is_string() && a->payload.string.size == 4 &&
                  memcmp(a->payload.string.data, "tanh", 4) == 0;
      TERN_CHECK_OR_RETURN_ERROR(
          is_none || tanh_form || a->is_none(), InvalidArgument,
          "%s: approximate: expected \"none\" or \"tanh\", found %s%.*s%s", op,
          a->is_string() ? "\"" : to_string(a->tag),
          a->is_string()
              ? static_cast<int>(a->payload.string.size > 32 ? 32 : a->payload.string.size)
              : 0,
          a->is_string() ? a->payload.string.data : "", a->is_string() ? "\"" : "");
    }
    // x is f32 (check_float_unary refuses other dtypes), read in place.
    gelu_f32(tanh_form, static_cast<const float*>(x.data), out->data_as<float>(),
             static_cast<int64_t>(out->numel()));
    return Error::Ok;
  });
}

Error silu(KernelContext& /*context*/, Span<EValue*> args) {
  return float_activation("tern::silu", args, 0, [](size_t, const Operand& x, TensorView* out) {
    run_float_unary(x, out, [](float v) { return v / (1.0f + std::exp(-v)); });
    return Error::Ok;
  });
}

Error hardswish(KernelContext& /*context*/, Span<EValue*> args) {
  return float_activation(
      "tern::hardswish", args, 0, [](size_t, const Operand& x, TensorView* out) {
        run_float_unary(
            x, out, [](float v) { return v * std::fmin(std::fmax(v + 3.0f, 0.0f), 6.0f) / 6.0f; });
        return Error::Ok;
      });
}

Error hardsigmoid(KernelContext& /*context*/, Span<EValue*> args) {
  return float_activation(
      "tern::hardsigmoid", args, 0, [](size_t, const Operand& x, TensorView* out) {
        run_float_unary(x, out,
                        [](float v) { return std::fmin(std::fmax(v + 3.0f, 0.0f), 6.0f) / 6.0f; });
        return Error::Ok;
      });
}

Error softplus(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::softplus";
  return float_activation(op, args, 2, [&](size_t out_index, const Operand& x, TensorView* out) {
    double beta = 1.0, threshold = 20.0;
    TERN_RETURN_IF_ERROR(double_attr(op, args, 1, out_index, "beta", 1.0, &beta));
    TERN_RETURN_IF_ERROR(double_attr(op, args, 2, out_index, "threshold", 20.0, &threshold));
    const float b = static_cast<float>(beta), t = static_cast<float>(threshold);
    run_float_unary(x, out,
                    [=](float v) { return softplus_value(v, b, t); });
    return Error::Ok;
  });
}

}  // namespace portable
}  // namespace tern
