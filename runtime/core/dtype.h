// Element types of tensors, mirroring tern.fb.DType (schema/program.fbs) value for value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/checked_math.h"

namespace tern {

enum class DType : uint8_t {
  F32 = 0,
  F16 = 1,
  BF16 = 2,
  I64 = 3,
  I32 = 4,
  I16 = 5,
  I8 = 6,
  U8 = 7,
  Bool = 8,
  NF4 = 9,
  FP8E4M3 = 10,
  FP8E5M2 = 11,
};

constexpr uint8_t kNumDTypes = 12;

/// True for the values above.
inline bool is_valid_dtype(uint8_t raw) { return raw < kNumDTypes; }

/// Lower-case name, e.g. "f32", "nf4", "fp8_e4m3"; "invalid" for an unknown value.
const char* to_string(DType dtype);

/// Bits per element: 4 for NF4, 1 byte types 8, and so on.
inline uint32_t bits_per_element(DType dtype) {
  switch (dtype) {
    case DType::F32: case DType::I32: return 32;
    case DType::F16: case DType::BF16: case DType::I16: return 16;
    case DType::I64: return 64;
    case DType::I8: case DType::U8: case DType::Bool:
    case DType::FP8E4M3: case DType::FP8E5M2: return 8;
    case DType::NF4: return 4;
  }
  return 0;
}

/// Bytes needed for `numel` elements (NF4 rounds up to whole bytes); false on overflow.
inline bool dtype_nbytes(DType dtype, uint64_t numel, uint64_t* out) {
  const uint32_t bits = bits_per_element(dtype);
  if (bits == 4) {
    uint64_t padded;
    if (!checked_add(numel, 1, &padded)) return false;
    *out = padded / 2;
    return true;
  }
  return checked_mul(numel, bits / 8, out);
}

}  // namespace tern
