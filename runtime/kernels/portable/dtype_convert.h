// Element types of the portable kernels and conversions between every byte-addressable dtype
// (all but nf4/fp8), with ATen's semantics: float -> int truncates toward zero, -> bool is
// `!= 0` (NaN is true), bool reads any nonzero byte as true, f16/bf16 round to nearest even.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/core/dtype.h"
#include "runtime/kernels/util/float16_bits.h"

namespace tern {
namespace portable {

/// IEEE binary16 storage (bits only; arithmetic goes through float).
struct Half {
  uint16_t bits;
};
/// bfloat16 storage (bits only; arithmetic goes through float).
struct BFloat16 {
  uint16_t bits;
};

static_assert(sizeof(bool) == 1, "bool tensors are stored one byte per element");

/// The dtype whose elements are stored as T (bool: Bool; uint8_t: U8).
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<Half>() {
  return DType::F16;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::BF16;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return DType::I16;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::I8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::U8;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}

/// True for the dtypes convert_run handles (everything but nf4 and fp8).
inline bool is_plain_dtype(DType d) {
  return d != DType::NF4 && d != DType::FP8E4M3 && d != DType::FP8E5M2;
}
/// True for f32, f16, bf16.
inline bool is_float_dtype(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}
/// True for i64, i32, i16, i8, u8.
inline bool is_int_dtype(DType d) {
  return d == DType::I64 || d == DType::I32 || d == DType::I16 || d == DType::I8 || d == DType::U8;
}

/// Truncates toward zero. NaN and values outside int64 give INT64_MIN (what x86 gives), so
/// the conversion is defined for every input.
inline int64_t float_to_i64(float f) {
  if (f >= -9223372036854775808.0f && f < 9223372036854775808.0f) return static_cast<int64_t>(f);
  return std::numeric_limits<int64_t>::min();
}

/// `value` in the integer type D, wrapping modulo 2^bits (as a C++20 / ATen cast does).
template <typename D>
inline D wrap_int(int64_t value) {
  using U = typename std::make_unsigned<D>::type;
  return static_cast<D>(static_cast<U>(static_cast<uint64_t>(value)));
}

/// A float-class value converted to D.
template <typename D>
inline D from_float(float f) {
  if constexpr (std::is_same<D, float>::value) {
    return f;
  } else if constexpr (std::is_same<D, Half>::value) {
    return Half{float_to_half(f)};
  } else if constexpr (std::is_same<D, BFloat16>::value) {
    return BFloat16{float_to_bf16(f)};
  } else if constexpr (std::is_same<D, bool>::value) {
    return f != 0.0f;
  } else {
    // Through int64 so that e.g. -1.5 -> u8 wraps to 255 as in ATen.
    return wrap_int<D>(float_to_i64(f));
  }
}

/// An integer-class value converted to D.
template <typename D>
inline D from_int(int64_t i) {
  if constexpr (std::is_same<D, float>::value) {
    return static_cast<float>(i);
  } else if constexpr (std::is_same<D, Half>::value) {
    return Half{float_to_half(static_cast<float>(i))};
  } else if constexpr (std::is_same<D, BFloat16>::value) {
    return BFloat16{float_to_bf16(static_cast<float>(i))};
  } else if constexpr (std::is_same<D, bool>::value) {
    return i != 0;
  } else {
    return wrap_int<D>(i);
  }
}

/// One element of storage type S converted to D.
template <typename D, typename S>
inline D convert(S s) {
  if constexpr (std::is_same<D, S>::value) {
    return s;
  } else if constexpr (std::is_same<S, float>::value) {
    return from_float<D>(s);
  } else if constexpr (std::is_same<S, Half>::value) {
    return from_float<D>(half_to_float(s.bits));
  } else if constexpr (std::is_same<S, BFloat16>::value) {
    return from_float<D>(bf16_to_float(s.bits));
  } else {
    return from_int<D>(static_cast<int64_t>(s));
  }
}

/// dst[i] = src element (offset + i * stride) converted to D, for i in [0, n). `src` holds
/// elements of `src_dtype` (a plain dtype; bool elements are read as bytes, nonzero = true).
/// Returns false (writing nothing) for nf4/fp8 or an invalid dtype.
template <typename D>
bool convert_run(const void* src, DType src_dtype, int64_t offset, int64_t stride, int64_t n,
                 D* dst);

}  // namespace portable
}  // namespace tern
