// Decoding one element of a quantized weight buffer (quant::QuantLayout: the packed codes, then
// the scheme's parameter arrays) into f32, for the cuda kernels (quant_linear.cu) and for a
// host test that checks it against the portable dequantization (tests/backends/cuda). Plain
// header: compiled by nvcc for the device and by the host compiler for the test, so it holds
// no CUDA types. The arithmetic is the reference's: NF4 code[q] * absmax, FP8 decode(byte) *
// scale, the double-quantized absmax table[c] * absmax2[g] + offset — each a separate f32
// operation (the device forms are the _rn intrinsics, so nvcc does not contract them into an
// FMA and the result is the portable kernels' bit for bit).
#pragma once

#include <cstdint>
#include <cstring>

#include "backends/cuda/cuda_blob_format.h"
#include "runtime/kernels/util/quant_buffer_layout.h"

#if defined(__CUDACC__)
#define TERN_QUANT_HD __host__ __device__ __forceinline__
#else
#define TERN_QUANT_HD inline
#endif

namespace tern::cuda {

/// A weight's scheme as the kernels read it (made on the host from a node's params by
/// make_quant_decode; byte offsets of the sections within the weight's buffer).
struct QuantDecode {
  int32_t format = 0;          ///< quant::QuantFormat: 0 nf4, 1 nf4 + double quant, 2 e4m3, 3 e5m2
  uint32_t block_shift = 0;    ///< NF4: log2(block size)
  uint32_t dq_block_size = 0;  ///< NF4 double quant: blocks per absmax2
  int32_t granularity = 0;     ///< FP8: quant::QuantGranularity
  uint32_t block_rows = 1, block_cols = 1;  ///< FP8 Block2D tile
  uint64_t cols = 1;           ///< the weight's columns (elements per row)
  uint64_t tiles_per_row = 0;  ///< FP8 Block2D: ceil(cols / block_cols)
  uint64_t scale_offset = 0;   ///< bytes: the absmax / scales / dq codes
  uint64_t absmax2_offset = 0; ///< bytes: double quant absmax2
  uint64_t table_offset = 0;   ///< bytes: double quant table of 256
  float dq_offset = 0.0f;      ///< double quant: added to every absmax
  /// Whether 8 elements starting at a multiple of 8, in a weight whose rows are a multiple of
  /// 8 long, share one scale (NF4: always, blocks are >= 32; FP8 per tensor / per row: always;
  /// Block2D: block_cols % 8 == 0).
  bool scale_shared_by_8 = true;
};

/// The NF4 code values (runtime/kernels/util/quant_formats.h kNf4Code; a host test checks
/// they are equal), as an initializer list for the host table below and the kernels'
/// __constant__ copy.
#define TERN_NF4_CODE_VALUES                                                               \
  -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,                \
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,           \
      0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,                    \
      0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, \
      1.0f

constexpr float kNf4CodeValues[16] = {TERN_NF4_CODE_VALUES};

TERN_QUANT_HD float quant_bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

TERN_QUANT_HD float quant_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

TERN_QUANT_HD float quant_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

TERN_QUANT_HD float quant_load_f32(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const float*>(p);  // sections start on 4-byte words
#else
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
#endif
}

/// An FP8 byte (e4m3fn when e4m3, else e5m2) as f32, exactly. NaN/inf codes decode as the
/// reference does (the compiler keeps such weights off the backend).
TERN_QUANT_HD float quant_fp8_value(uint32_t byte, bool e4m3) {
  const uint32_t sign = (byte & 0x80u) << 24;
  if (e4m3) {
    const uint32_t exp = (byte >> 3) & 0xFu, man = byte & 0x7u;
    if (exp == 0xFu && man == 0x7u) return quant_bits_to_float(sign | 0x7FC00000u);
    if (exp == 0) {
      const float v = static_cast<float>(man) * (1.0f / 512.0f);
      return sign ? -v : v;
    }
    return quant_bits_to_float(sign | ((exp - 7u + 127u) << 23) | (man << 20));
  }
  const uint32_t exp = (byte >> 2) & 0x1Fu, man = byte & 0x3u;
  if (exp == 0x1Fu) return quant_bits_to_float(sign | (man == 0 ? 0x7F800000u : 0x7FC00000u));
  if (exp == 0) {
    const float v = static_cast<float>(man) * (1.0f / 65536.0f);
    return sign ? -v : v;
  }
  return quant_bits_to_float(sign | ((exp - 15u + 127u) << 23) | (man << 21));
}

/// The scale of element `i` (flat, row-major) of weight buffer `w`.
TERN_QUANT_HD float quant_scale(const uint8_t* w, const QuantDecode& q, uint64_t i) {
  if (q.format <= 1) {
    const uint64_t block = i >> q.block_shift;
    if (q.format == 0) return quant_load_f32(w + q.scale_offset + 4 * block);
    const uint32_t code = w[q.scale_offset + block];
    const float table = quant_load_f32(w + q.table_offset + 4 * code);
    const float absmax2 = quant_load_f32(w + q.absmax2_offset + 4 * (block / q.dq_block_size));
    return quant_add(quant_mul(table, absmax2), q.dq_offset);
  }
  uint64_t s = 0;
  if (q.granularity == 1) {
    s = i / q.cols;
  } else if (q.granularity == 2) {
    const uint64_t r = i / q.cols, c = i - r * q.cols;
    s = (r / q.block_rows) * q.tiles_per_row + c / q.block_cols;
  }
  return quant_load_f32(w + q.scale_offset + 4 * s);
}

/// The code value (before scaling) of element `i`; `nf4_code` is the 16-entry codebook.
TERN_QUANT_HD float quant_code(const uint8_t* w, const QuantDecode& q, const float* nf4_code,
                               uint64_t i) {
  if (q.format <= 1) {
    const uint32_t byte = w[i >> 1];
    return nf4_code[(i & 1) ? (byte & 0xFu) : (byte >> 4)];
  }
  return quant_fp8_value(w[i], q.format == 2);
}

/// Element `i` of the weight as f32.
TERN_QUANT_HD float quant_element(const uint8_t* w, const QuantDecode& q, const float* nf4_code,
                                  uint64_t i) {
  return quant_mul(quant_code(w, q, nf4_code, i), quant_scale(w, q, i));
}

/// Elements i .. i + 7 into out[8] of a weight whose rows are a multiple of 8 long, i a
/// multiple of 8 (so the eight are in one row and, with Block2D tiles a multiple of 8 wide, in
/// one tile). NF4 reads one aligned 32-bit word of codes, FP8 two.
TERN_QUANT_HD void quant_element8(const uint8_t* w, const QuantDecode& q, const float* nf4_code,
                                  uint64_t i, float out[8]) {
  uint32_t words[2];
  if (q.format <= 1) {
#if defined(__CUDA_ARCH__)
    words[0] = *reinterpret_cast<const uint32_t*>(w + (i >> 1));
#else
    std::memcpy(&words[0], w + (i >> 1), 4);
#endif
  } else {
#if defined(__CUDA_ARCH__)
    const uint2 v = *reinterpret_cast<const uint2*>(w + i);
    words[0] = v.x;
    words[1] = v.y;
#else
    std::memcpy(words, w + i, 8);
#endif
  }
  const float shared = q.scale_shared_by_8 ? quant_scale(w, q, i) : 0.0f;
  for (int e = 0; e < 8; ++e) {
    float code;
    if (q.format <= 1) {
      // Bytes in memory order, the first element of each in its high nibble (little-endian word).
      const uint32_t byte = (words[0] >> (8 * (e >> 1))) & 0xFFu;
      code = nf4_code[(e & 1) ? (byte & 0xFu) : (byte >> 4)];
    } else {
      code = quant_fp8_value((words[e >> 2] >> (8 * (e & 3))) & 0xFFu, q.format == 2);
    }
    out[e] = quant_mul(code, q.scale_shared_by_8 ? shared : quant_scale(w, q, i + e));
  }
}

/// The layout and decode parameters of a [rows, cols] weight whose scheme is node params
/// `p`[kQFormat .. kQBlockCols] (fparams[0] `dq_offset`). False when quant::quant_layout refuses
/// the scheme (the blob reader's check; host code).
inline bool make_quant_decode(const int64_t* p, uint64_t rows, uint64_t cols, float dq_offset,
                              QuantDecode* out, quant::QuantLayout* layout) {
  if (p[kQFormat] < 0 || p[kQFormat] > quant::kLastQuantFormat || p[kQGranularity] < 0 ||
      p[kQGranularity] > 2) {
    return false;
  }
  quant::QuantLayout l;
  if (!quant::quant_layout(static_cast<int32_t>(p[kQFormat]), rows, cols, p[kQBlockSize],
                           p[kQDqBlockSize], static_cast<int32_t>(p[kQGranularity]),
                           p[kQBlockRows], p[kQBlockCols], &l)) {
    return false;
  }
  QuantDecode q;
  q.format = static_cast<int32_t>(p[kQFormat]);
  q.cols = cols;
  q.scale_offset = 4 * l.scale_word;
  if (q.format <= 1) {
    while ((int64_t{1} << q.block_shift) < p[kQBlockSize]) ++q.block_shift;
    if (q.format == 1) {
      q.dq_block_size = static_cast<uint32_t>(p[kQDqBlockSize]);
      q.absmax2_offset = 4 * l.absmax2_word;
      q.table_offset = 4 * l.table_word;
      q.dq_offset = dq_offset;
    }
  } else {
    q.granularity = static_cast<int32_t>(p[kQGranularity]);
    if (q.granularity == 2) {
      q.block_rows = static_cast<uint32_t>(p[kQBlockRows]);
      q.block_cols = static_cast<uint32_t>(p[kQBlockCols]);
      q.tiles_per_row = (cols + q.block_cols - 1) / q.block_cols;
      q.scale_shared_by_8 = q.block_cols % 8 == 0;
    }
  }
  *out = q;
  if (layout != nullptr) *layout = l;
  return true;
}

}  // namespace tern::cuda
