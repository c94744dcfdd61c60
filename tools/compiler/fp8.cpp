#include "tools/compiler/fp8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/util/quant_formats.h"

namespace tern::compiler {

float fp8_max(Fp8Format format) {
  return format == Fp8Format::E4M3 ? quant::kFp8E4M3Max : quant::kFp8E5M2Max;
}

uint8_t fp8_encode(float x, Fp8Format format) {
  const bool e4m3 = format == Fp8Format::E4M3;
  const int man_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return static_cast<uint8_t>(sign | (e4m3 ? 0x7F : 0x7E));
  const float max = fp8_max(format);
  float a = std::fabs(x);
  if (a > max) a = max;  // saturate (infinity too)
  if (a == 0.0f) return sign;
  int exp = 0;
  (void)std::frexp(a, &exp);  // a = f * 2^exp, f in [0.5, 1): unbiased exponent is exp - 1
  if (exp - 1 < min_exp) {
    // Subnormal range: a multiple of 2^(min_exp - man_bits), rounded to nearest even. The
    // scaling by a power of two is exact; a result of 2^man_bits is the smallest normal, whose
    // bits are exactly that integer.
    const float units = std::nearbyint(std::ldexp(a, man_bits - min_exp));
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(units));
  }
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const int shift = 23 - man_bits;
  const uint32_t lsb = (bits >> shift) & 1u;
  bits += ((1u << (shift - 1)) - 1u) + lsb;  // round to nearest, ties to even
  bits >>= shift;                            // f32 exponent and the kept mantissa bits
  const uint32_t man = bits & ((1u << man_bits) - 1u);
  const int exp32 = static_cast<int>(bits >> man_bits);  // biased f32 exponent
  const int exp8 = exp32 - 127 + bias;
  return static_cast<uint8_t>(sign | (static_cast<uint32_t>(exp8) << man_bits) | man);
}

float fp8_decode(uint8_t bits, Fp8Format format) {
  return format == Fp8Format::E4M3 ? quant::fp8_e4m3_to_float(bits)
                                   : quant::fp8_e5m2_to_float(bits);
}

Fp8Encoded fp8_quantize(const float* x, uint64_t rows, uint64_t cols, Fp8Format format,
                        Fp8Granularity granularity, uint32_t block_rows, uint32_t block_cols) {
  Fp8Encoded out;
  out.codes.resize(rows * cols);
  const float max = fp8_max(format);
  auto scale_of = [max](float amax) {
    const float s = amax / max;
    return s > 0.0f ? s : 1.0f;
  };
  auto encode_range = [&](uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1, float scale) {
    for (uint64_t r = r0; r < r1; ++r) {
      for (uint64_t c = c0; c < c1; ++c) {
        out.codes[r * cols + c] = fp8_encode(x[r * cols + c] / scale, format);
      }
    }
  };
  auto amax_of = [&](uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1) {
    float amax = 0.0f;
    for (uint64_t r = r0; r < r1; ++r) {
      for (uint64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
    }
    return amax;
  };
  switch (granularity) {
    case Fp8Granularity::PerTensor: {
      const float s = scale_of(amax_of(0, rows, 0, cols));
      out.scales = {s};
      encode_range(0, rows, 0, cols, s);
      break;
    }
    case Fp8Granularity::PerChannel:
      out.scales.resize(rows);
      for (uint64_t r = 0; r < rows; ++r) {
        out.scales[r] = scale_of(amax_of(r, r + 1, 0, cols));
        encode_range(r, r + 1, 0, cols, out.scales[r]);
      }
      break;
    case Fp8Granularity::Block2D: {
      const uint64_t tr = (rows + block_rows - 1) / block_rows;
      const uint64_t tc = (cols + block_cols - 1) / block_cols;
      out.scales.resize(tr * tc);
      for (uint64_t i = 0; i < tr; ++i) {
        for (uint64_t j = 0; j < tc; ++j) {
          const uint64_t r0 = i * block_rows, r1 = std::min<uint64_t>(r0 + block_rows, rows);
          const uint64_t c0 = j * block_cols, c1 = std::min<uint64_t>(c0 + block_cols, cols);
          const float s = scale_of(amax_of(r0, r1, c0, c1));
          out.scales[i * tc + j] = s;
          encode_range(r0, r1, c0, c1, s);
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace tern::compiler
