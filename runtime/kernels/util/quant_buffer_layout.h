// One buffer per quantized (nf4 / fp8) weight, as the GPU backends keep it on the device: the
// program's packed codes unchanged, then the scheme's parameter arrays, in 32-bit words from
// the buffer's start. Shared by the vulkan and cuda backends (both halves: the compiler writes
// the scheme into node params, the reader recomputes the layout from them and checks the
// weight's size, the runtime fills the buffer). QUANT.md and docs/quantization.md give the
// formats; runtime/kernels/util/quant_formats.h decodes them.
#pragma once

#include <cstdint>

namespace tern::quant {

/// Formats of a quantized weight buffer.
enum class QuantFormat : int32_t {
  Nf4 = 0,            ///< NF4, an f32 absmax per block
  Nf4DoubleQuant = 1, ///< NF4, absmax = table[dq_code] * absmax2[block / dq_block] + offset
  Fp8E4M3 = 2,
  Fp8E5M2 = 3,
};
constexpr int32_t kLastQuantFormat = 3;
/// FP8 scale granularity.
enum class QuantGranularity : int32_t { PerTensor = 0, PerChannel = 1, Block2D = 2 };

/// Most elements (and most rows or columns) of one quantized weight buffer.
constexpr uint64_t kMaxQuantElements = 1ull << 30;

/// The words of a [rows, cols] weight's buffer: the packed codes exactly as in the program
/// (NF4: two per byte, the first element in the high nibble; FP8: one byte each), zero-padded
/// to a word; then NF4: the f32 absmax per block, or with double quantization the u8 codes per
/// block (padded to a word), the f32 absmax2 per group of dq_block_size blocks and the f32
/// table of 256; FP8: the f32 scales (1, rows, or ceil(rows / block_rows) *
/// ceil(cols / block_cols) tiles row-major).
struct QuantLayout {
  uint64_t blocks = 0;       ///< NF4 blocks, FP8 scales
  uint64_t scale_word = 0;   ///< absmax / scales / dq codes
  uint64_t absmax2_word = 0; ///< double quantization only
  uint64_t table_word = 0;   ///< double quantization only
  uint64_t total_words = 0;
};

/// The layout of a [rows, cols] weight of `format` (rows, cols in 1..2^30 with rows * cols <=
/// 2^30). NF4: block_size a power of two in [32, 4096], dq_block_size >= 1 with double
/// quantization (else 0), granularity and tile 0. FP8: block sizes 0, granularity 0..2, a
/// tile (each side 1..2^30) only for Block2D. False when a parameter is out of range.
inline bool quant_layout(int32_t format, uint64_t rows, uint64_t cols, int64_t block_size,
                         int64_t dq_block_size, int32_t granularity, int64_t block_rows,
                         int64_t block_cols, QuantLayout* out) {
  constexpr uint64_t kMax = kMaxQuantElements;
  if (rows < 1 || cols < 1 || rows > kMax || cols > kMax || rows * cols > kMax || format < 0 ||
      format > kLastQuantFormat) {
    return false;
  }
  const uint64_t n = rows * cols;
  QuantLayout l;
  if (format <= static_cast<int32_t>(QuantFormat::Nf4DoubleQuant)) {
    if (block_size < 32 || block_size > 4096 || (block_size & (block_size - 1)) != 0 ||
        granularity != 0 || block_rows != 0 || block_cols != 0) {
      return false;
    }
    l.scale_word = ((n + 1) / 2 + 3) / 4;
    l.blocks = (n + static_cast<uint64_t>(block_size) - 1) / static_cast<uint64_t>(block_size);
    if (format == static_cast<int32_t>(QuantFormat::Nf4)) {
      if (dq_block_size != 0) return false;
      l.total_words = l.scale_word + l.blocks;
    } else {
      if (dq_block_size < 1 || dq_block_size > static_cast<int64_t>(kMax)) return false;
      const uint64_t groups = (l.blocks + static_cast<uint64_t>(dq_block_size) - 1) /
                              static_cast<uint64_t>(dq_block_size);
      l.absmax2_word = l.scale_word + (l.blocks + 3) / 4;
      l.table_word = l.absmax2_word + groups;
      l.total_words = l.table_word + 256;
    }
  } else {
    if (block_size != 0 || dq_block_size != 0 || granularity < 0 || granularity > 2) return false;
    l.scale_word = (n + 3) / 4;
    if (granularity == static_cast<int32_t>(QuantGranularity::Block2D)) {
      if (block_rows < 1 || block_cols < 1 || block_rows > static_cast<int64_t>(kMax) ||
          block_cols > static_cast<int64_t>(kMax)) {
        return false;
      }
      l.blocks = ((rows + static_cast<uint64_t>(block_rows) - 1) / static_cast<uint64_t>(block_rows)) *
                 ((cols + static_cast<uint64_t>(block_cols) - 1) / static_cast<uint64_t>(block_cols));
    } else {
      if (block_rows != 0 || block_cols != 0) return false;
      l.blocks = granularity == static_cast<int32_t>(QuantGranularity::PerTensor) ? 1 : rows;
    }
    l.total_words = l.scale_word + l.blocks;
  }
  *out = l;
  return true;
}

}  // namespace tern::quant
