// The shared driver of the elementwise kernels: operands (a tensor, or an Int/Double/Bool
// scalar standing for one), ATen type promotion, and loops over broadcast operands that read
// in place when an operand already has the compute dtype and convert small blocks otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/dtype_convert.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/type_promotion.h"

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
inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
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
template <typename T>
inline T wrap_neg(T a) {
  return wrap_sub(T(0), a);
}

/// A scalar argument (Int, Double or Bool EValue) converted to T. For integer T an Int must
/// fit and a Double is refused (ATen refuses a float alpha for integer tensors); for bool T
/// only Bool and Int 0/1 convert.
template <typename T>
Error scalar_arg(const char* op, const char* name, const EValue& v, T* out) {
  if (v.is_bool()) {
    *out = from_int<T>(v.payload.b ? 1 : 0);
    return Error::Ok;
  }
  if (v.is_int()) {
    if constexpr (std::is_integral<T>::value) {
      TERN_CHECK_OR_RETURN_ERROR(
          v.payload.i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
              v.payload.i <= static_cast<int64_t>(std::numeric_limits<T>::max()),
          InvalidArgument, "%s: %s: value %lld does not fit the tensor dtype", op, name,
          static_cast<long long>(v.payload.i));
    }
    *out = from_int<T>(v.payload.i);
    return Error::Ok;
  }
  if (v.is_double()) {
    if constexpr (std::is_integral<T>::value) {
      TERN_RETURN_ERROR(InvalidArgument,
                        "%s: %s: expected an int for an integer tensor, found double %g", op, name,
                        v.payload.d);
    } else {
      *out = from_float<T>(static_cast<float>(v.payload.d));
      return Error::Ok;
    }
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: %s: expected an int or double, found %s", op, name,
                    to_string(v.tag));
}

/// An optional Double attribute at args[index] (Int accepted): `fallback` when the argument
/// is absent (index is the out index) or None.
Error double_attr(const char* op, Span<EValue*> args, size_t index, size_t out_index,
                  const char* name, double fallback, double* out);

/// One operand of an elementwise op: a checked tensor, or a scalar standing for a 0-dim one.
struct Operand {
  const void* data = nullptr;      ///< the tensor's elements (after bind_scalar: the scalar)
  DType dtype = DType::F32;        ///< the elements' dtype
  Span<const int64_t> shape;       ///< empty for a scalar
  const EValue* scalar = nullptr;  ///< non-null for a scalar argument
  const char* name = "";
};

/// Reads args[index] as an operand: a tensor (checked by tensor_arg, any plain dtype) or, when
/// `allow_scalar`, an Int/Double/Bool scalar. InvalidArgument naming op, argument and kind.
Error operand_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                  bool allow_scalar, Operand* out);

/// Adds an operand to a ResultType.
inline void add_operand(ResultType* rt, const Operand& o) {
  if (o.scalar != nullptr) {
    rt->add_scalar(*o.scalar);
  } else {
    TensorView t;
    t.dtype = o.dtype;
    t.rank = static_cast<uint32_t>(o.shape.size());
    rt->add_tensor(t);
  }
}

/// The numeric compute dtypes of the arithmetic ops that compute in their operands' dtype
/// (add, sub, maximum, neg, abs, relu, clamp, ...).
inline constexpr DType kNumericDtypes[] = {DType::F32, DType::I32, DType::I64};

/// InvalidArgument unless `compute` (the dtype the operands promote to) is in `allowed`;
/// the message names the operands' dtypes.
Error check_compute_dtype(const char* op, const Operand* operands, size_t num_operands,
                          DType compute, Span<const DType> allowed);

/// What a broadcasting binary op (a, b[, attribute], out) accepts: binary_args checks its
/// arguments against this.
struct BinaryOpSpec {
  /// 3, or 4 when one optional attribute (alpha, rounding_mode) stands before out; the
  /// kernel reads that attribute itself.
  size_t max_args = 3;
  /// The dtypes the operands may promote to (the compute dtype); empty: any plain dtype.
  Span<const DType> compute;
  /// Integer and bool operands compute in f32 (true division, as in ATen).
  bool int_to_float = false;
  /// out is bool (comparisons, logical ops); otherwise out has the compute dtype.
  bool bool_out = false;
};

/// The comparisons and logical ops: (a, b, out), any compute dtype, out bool.
inline constexpr BinaryOpSpec kPredicateSpec = {3, Span<const DType>(), /*int_to_float=*/false,
                                                /*bool_out=*/true};

/// Calls fn(T{}) for the C++ type of compute dtype `d` (f32, i32, i64 or bool; binary_args has
/// checked it against the op's spec); Internal for another dtype.
template <typename Fn>
Error dispatch_compute(const char* op, DType d, Fn fn) {
  switch (d) {
    case DType::F32:
      return fn(float{});
    case DType::I32:
      return fn(int32_t{});
    case DType::I64:
      return fn(int64_t{});
    case DType::Bool:
      return fn(bool{});
    default:
      break;
  }
  TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(d));
}

/// The checked operands and output of a broadcasting binary op.
struct BinaryArgs {
  Operand a, b;
  TensorView* out = nullptr;
  FixedShape shape;            ///< the broadcast shape (out's shape was checked against it)
  DType compute = DType::F32;  ///< torch.result_type(a, b), or f32 per spec.int_to_float
};

/// The argument prologue of every broadcasting binary op (arithmetic, comparisons, logical):
/// checks the argument count (3 to spec.max_args), a (a tensor of a plain dtype), b (such a
/// tensor or an Int/Double/Bool scalar), out (the last argument, a tensor of the broadcast
/// shape of a and b), the compute dtype (torch.result_type, one of spec.compute) and out's
/// dtype (the compute dtype, or bool with spec.bool_out). InvalidArgument naming op, the
/// argument, expected and found. The pointers in *out are owned by the Method.
Error binary_args(const char* op, Span<EValue*> args, const BinaryOpSpec& spec, BinaryArgs* out);

/// When `o` is a scalar, stores it as T in `*storage` and points `o` at it (Int range checked
/// for integer T; Double refused for integer T).
template <typename T>
Error bind_scalar(const char* op, Operand* o, T* storage) {
  if (o->scalar == nullptr) return Error::Ok;
  TERN_RETURN_IF_ERROR(scalar_arg<T>(op, o->name, *o->scalar, storage));
  o->data = storage;
  o->dtype = dtype_of<T>();
  return Error::Ok;
}

/// bind_scalar for both operands of `p`; `storage` must outlive the loops that read p.
template <typename T>
Error bind_scalars(const char* op, BinaryArgs* p, T (&storage)[2]) {
  TERN_RETURN_IF_ERROR(bind_scalar<T>(op, &p->a, &storage[0]));
  return bind_scalar<T>(op, &p->b, &storage[1]);
}

/// Elements per block when an operand is converted to the compute dtype on the fly.
constexpr int64_t kConvertBlock = 256;

/// True when `o`'s elements can be read in place as T (bool is always converted, so that
/// bytes other than 0 and 1 read as true instead of being undefined).
template <typename T>
inline bool reads_in_place(const Operand& o) {
  return o.dtype == dtype_of<T>() && !std::is_same<T, bool>::value;
}

/// Elements [offset, offset + n * stride) of `o` as T: in place, or converted into `buf`
/// (kConvertBlock entries). *step is the stride to read the result with (0 or 1).
template <typename T>
inline const T* read_run(const Operand& o, int64_t offset, int64_t stride, int64_t n, T* buf,
                         int64_t* step) {
  if (reads_in_place<T>(o)) {
    *step = stride;
    return static_cast<const T*>(o.data) + offset;
  }
  const int64_t count = stride == 0 ? 1 : n;
  convert_run<T>(o.data, o.dtype, offset, stride, count, buf);
  *step = stride == 0 ? 0 : 1;
  return buf;
}

/// dst[i] = f(a[i * sa], b[i * sb]) for strides 0 or 1, each case a simple loop.
template <typename TI, typename TO, typename F>
inline void binary_run(const TI* a, int64_t sa, const TI* b, int64_t sb, TO* dst, int64_t n, F& f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
  } else if (sa == 1) {
    const TI bv = b[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], bv);
  } else if (sb == 1) {
    const TI av = a[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = f(av, b[i]);
  } else {
    const TO v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  }
}

/// out = f(a, b) over the broadcast `out_shape`, reading both operands as TI (converted
/// blockwise when their dtype differs; scalars bound first with bind_scalar). `out` may
/// alias an operand of the full output shape and dtype TO == TI.
template <typename TI, typename TO, typename F>
void binary_loop(const Operand& a, const Operand& b, TO* out, Span<const int64_t> out_shape, F f) {
  const Span<const int64_t> shapes[2] = {a.shape, b.shape};
  BroadcastPlan plan;
  make_broadcast_plan(out_shape, shapes, 2, &plan);
  const bool in_place = reads_in_place<TI>(a) && reads_in_place<TI>(b);
  for_each_run(plan, [&](const int64_t* off, int64_t out_off, int64_t n, const int64_t* st) {
    TO* dst = out + out_off;
    if (in_place) {
      binary_run(static_cast<const TI*>(a.data) + off[0], st[0],
                 static_cast<const TI*>(b.data) + off[1], st[1], dst, n, f);
      return;
    }
    TI buf_a[kConvertBlock];
    TI buf_b[kConvertBlock];
    for (int64_t start = 0; start < n; start += kConvertBlock) {
      const int64_t m = n - start < kConvertBlock ? n - start : kConvertBlock;
      int64_t sa = 0;
      int64_t sb = 0;
      const TI* pa = read_run<TI>(a, off[0] + start * st[0], st[0], m, buf_a, &sa);
      const TI* pb = read_run<TI>(b, off[1] + start * st[1], st[1], m, buf_b, &sb);
      binary_run(pa, sa, pb, sb, dst + start, m, f);
    }
  });
}

/// out[i] = f(x[i]) over n elements, reading x as TI (converted blockwise when x's dtype
/// differs). `out` may alias x when TO == TI and x has dtype TI.
template <typename TI, typename TO, typename F>
void unary_loop(const Operand& x, TO* out, uint64_t n, F f) {
  if (reads_in_place<TI>(x)) {
    const TI* src = static_cast<const TI*>(x.data);
    for (uint64_t i = 0; i < n; ++i) out[i] = f(src[i]);
    return;
  }
  TI buf[kConvertBlock];
  for (uint64_t start = 0; start < n; start += kConvertBlock) {
    const int64_t m = static_cast<int64_t>(n - start < static_cast<uint64_t>(kConvertBlock)
                                               ? n - start
                                               : static_cast<uint64_t>(kConvertBlock));
    convert_run<TI>(x.data, x.dtype, static_cast<int64_t>(start), 1, m, buf);
    for (int64_t i = 0; i < m; ++i) out[start + i] = f(buf[i]);
  }
}

}  // namespace portable
}  // namespace tern
