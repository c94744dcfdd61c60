// NF4 and FP8 weight formats (QUANT.md, docs/quantization.md): the NF4 codebook, FP8 decoding
// and dequantization of a range of a quantized tensor's elements into f32.
//
// Header-only and allocation-free. Shared by the portable kernels (dequantize then the f32 op),
// the compiler's quantizer (tools/compiler/nf4.cpp, fp8.cpp: the same codebook) and the
// backends' own kernels, so every layer decodes exactly the same numbers.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor_view.h"

namespace tern::quant {

/// The NF4 code values, index 0..15 (index 7 is exactly zero), as bitsandbytes stores them.
inline constexpr float kNf4Code[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

/// Largest finite magnitudes: E4M3FN 448, E5M2 57344.
inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kFp8E5M2Max = 57344.0f;

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// Decodes one float8 e4m3fn byte exactly: S.EEEE.MMM, bias 7, no infinity, NaN only S.1111.111.
inline float fp8_e4m3_to_float(uint8_t byte) {
  const uint32_t sign = static_cast<uint32_t>(byte & 0x80) << 24;
  const uint32_t exp = (byte >> 3) & 0xF;
  const uint32_t man = byte & 0x7;
  if (exp == 0xF && man == 0x7) return bits_to_float(sign | 0x7FC00000u);  // NaN
  if (exp == 0) {
    // Subnormal (or zero): man * 2^-9, exact in f32.
    const float v = static_cast<float>(man) * (1.0f / 512.0f);
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((exp - 7 + 127) << 23) | (man << 20));
}

/// Decodes one float8 e5m2 byte exactly: S.EEEEE.MM, bias 15, infinity S.11111.00, NaN
/// S.11111.{01,10,11}.
inline float fp8_e5m2_to_float(uint8_t byte) {
  const uint32_t sign = static_cast<uint32_t>(byte & 0x80) << 24;
  const uint32_t exp = (byte >> 2) & 0x1F;
  const uint32_t man = byte & 0x3;
  if (exp == 0x1F) return bits_to_float(sign | (man == 0 ? 0x7F800000u : 0x7FC00000u));
  if (exp == 0) {
    const float v = static_cast<float>(man) * (1.0f / 65536.0f);  // man * 2^-16
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((exp - 15 + 127) << 23) | (man << 21));
}

/// True for the weight-only quantized dtypes (nf4, fp8_e4m3, fp8_e5m2).
inline bool is_quantized(DType dtype) {
  return dtype == DType::NF4 || dtype == DType::FP8E4M3 || dtype == DType::FP8E5M2;
}

/// The f32 absmax of NF4 block `block`: stored directly, or with double quantization
/// table[code] * absmax2[block / dq_block_size] + offset (two f32 operations, in that order).
inline float nf4_block_absmax(const QuantView& q, uint64_t block) {
  if (q.scheme == QuantView::Scheme::NF4DoubleQuant) {
    const float scaled = q.dq_table[q.dq_codes[block]] * q.dq_absmax2[block / q.dq_block_size];
    return scaled + q.dq_offset;
  }
  return q.absmax[block];
}

/// Rows and columns of a quantized tensor as its scales see it: rows = sizes[0] (1 for rank 0),
/// cols = numel / rows.
inline void quant_rows_cols(const TensorView& t, uint64_t* rows, uint64_t* cols) {
  *rows = t.rank >= 1 ? static_cast<uint64_t>(t.sizes[0]) : 1;
  *cols = *rows == 0 ? 0 : t.numel() / *rows;
}

/// Writes elements [begin, begin + count) of the flattened (row-major) quantized tensor `t` as
/// f32 into `out`: NF4 code[q] * absmax[block], FP8 decode(byte) * scale, both in f32. `t` must
/// be a verified quantized tensor (dtype nf4/fp8 with its QuantView, as Method loading resolves
/// it) and the range inside it; nothing is checked here.
inline void dequantize(const TensorView& t, uint64_t begin, uint64_t count, float* out) {
  const QuantView& q = *t.quant;
  const uint8_t* data = static_cast<const uint8_t*>(t.data);
  const uint64_t end = begin + count;
  if (t.dtype == DType::NF4) {
    const uint64_t block_size = q.block_size;
    uint64_t e = begin;
    while (e < end) {
      const uint64_t block = e / block_size;
      const uint64_t stop = (block + 1) * block_size < end ? (block + 1) * block_size : end;
      const float absmax = nf4_block_absmax(q, block);
      for (; e < stop; ++e) {
        const uint8_t byte = data[e >> 1];
        const uint8_t code = (e & 1) ? (byte & 0xF) : (byte >> 4);  // first element: high nibble
        *out++ = kNf4Code[code] * absmax;
      }
    }
    return;
  }
  float table[256];
  const bool e4m3 = t.dtype == DType::FP8E4M3;
  for (int b = 0; b < 256; ++b) {
    table[b] = e4m3 ? fp8_e4m3_to_float(static_cast<uint8_t>(b))
                    : fp8_e5m2_to_float(static_cast<uint8_t>(b));
  }
  uint64_t rows = 0;
  uint64_t cols = 0;
  quant_rows_cols(t, &rows, &cols);
  const uint64_t tiles_per_row =
      q.granularity == QuantView::Granularity::Block2D
          ? (cols + q.block_cols - 1) / q.block_cols
          : 0;
  uint64_t e = begin;
  while (e < end) {
    const uint64_t r = e / cols;
    uint64_t c = e % cols;
    const uint64_t row_end = (r + 1) * cols < end ? (r + 1) * cols : end;
    switch (q.granularity) {
      case QuantView::Granularity::PerTensor:
      case QuantView::Granularity::PerChannel: {
        const float scale = q.scale[q.granularity == QuantView::Granularity::PerTensor ? 0 : r];
        for (; e < row_end; ++e) *out++ = table[data[e]] * scale;
        break;
      }
      case QuantView::Granularity::Block2D: {
        const float* tile_scales = q.scale + (r / q.block_rows) * tiles_per_row;
        while (e < row_end) {
          const uint64_t tile = c / q.block_cols;
          const uint64_t tile_end_col = (tile + 1) * q.block_cols;
          const uint64_t stop = r * cols + tile_end_col < row_end ? r * cols + tile_end_col
                                                                  : row_end;
          const float scale = tile_scales[tile];
          for (; e < stop; ++e) *out++ = table[data[e]] * scale;
          c = tile_end_col;
        }
        break;
      }
    }
  }
}

}  // namespace tern::quant
