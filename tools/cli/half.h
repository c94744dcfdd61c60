// IEEE half and bfloat16 conversions for CLI input generation and printing.
#pragma once

#include <cstdint>
#include <cstring>

namespace tern::cli {

/// IEEE 754 binary16 bits to float (exact).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: normalize.
    exp = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// float to binary16 bits, round to nearest even; overflow to infinity.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): value / 2^-24 rounded to nearest even.
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // 2^24
    uint32_t q = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t m = abs + 0xc8000000u;  // rebias exponent: -112 << 23
  m += 0xfff + ((m >> 13) & 1);
  return sign | static_cast<uint16_t>(m >> 13);
}

/// bfloat16 bits to float.
inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// float to bfloat16 bits, round to nearest even (NaN kept quiet).
inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace tern::cli
