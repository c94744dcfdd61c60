// A quantized weight matrix as the cpu backend's fused kernels read it (ops 23 and 24 of the
// cpu blob): NF4 (optionally double-quantized) or FP8 codes of a [rows, cols] matrix (a linear
// weight [out, in] or an embedding table [vocab, dim]) re-laid out once at compile time so a
// SIMD register decodes 16 elements with one shift and one lookup, plus the format's scale
// parameters exactly as the program stores them (QUANT.md, docs/quantization.md).
//
// Layout of the weight constant (every section starts at a multiple of 64 bytes):
//   codes   rows x row_bytes. NF4: row_bytes = ceil(cols / 128) * 64; each 64-byte chunk holds
//           128 elements of a row as 16 little-endian 32-bit words: element 16 * j + i of the
//           chunk is nibble j (bits 4j..4j+3) of word i, so vector j of 16 lanes is
//           (words >> 4j) & 15. Padding codes are 7 (0.0). The chunks of nf4_row_group
//           consecutive rows are interleaved (the last group may have fewer rows, g): chunk c of
//           row r of a group starting at row r0 is at r0 * row_bytes + (c * g + r - r0) * 64, so
//           a GEMV tile of a group's rows reads one sequential stream (nf4_chunk_offset). The
//           group is the AVX-512 GEMV tile's 8 rows where this CPU runs AVX-512 and 1 (rows one
//           after the other) elsewhere: the AVX2 and NEON tiles are 2 or 4 rows high and read
//           a group of 8 as several strided streams, measured slower than rows in order.
//           FP8: row_bytes = ceil(cols / 64) * 64, the bytes of each row in order, padding 0
//           (+0.0).
//   NF4      absmax f32 [blocks]                  blocks = ceil(rows * cols / block_size)
//   NF4 dq   dq_codes u8 [blocks], dq_absmax2 f32 [ceil(blocks / dq_block_size)],
//            dq_table f32 [256], dq_offset f32 [1]
//   FP8      scale f32 [1 | rows | ceil(rows / R) * ceil(cols / C)]
// The blocks and tiles are those of the original flattened row-major tensor (a block may span
// two rows), so the numbers are the program's bit for bit: only the codes move.
//
// Runtime code: no exceptions, no RTTI, no allocation.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"

namespace tern::cpu {

/// What a quantized weight is: the format, its shape and its scheme's parameters (the blob
/// node's params, cpu_blob_format.h QuantParam).
struct QuantWeightDesc {
  QuantWeightFormat format = QuantWeightFormat::Nf4;
  uint64_t rows = 0;  ///< out features (linear) or vocabulary (embedding)
  uint64_t cols = 0;  ///< in features (linear) or embedding dim
  uint32_t block_size = 0;      ///< NF4: power of two in [32, 4096]; FP8: 0
  uint32_t dq_block_size = 0;   ///< NF4 double quantization: >= 1 (256 as tern writes it)
  Fp8Granularity granularity = Fp8Granularity::PerTensor;  ///< FP8 (NF4: PerTensor, i.e. 0)
  uint32_t block_rows = 0;      ///< FP8 Block: R >= 1 (else 0)
  uint32_t block_cols = 0;      ///< FP8 Block: C >= 1 (else 0)
};

/// The description a node's (or a QuantWeight recipe's) QuantParam values give
/// (params[kQuantRows .. kQuantBlockCols]); quant_weight_layout says whether it is legal.
QuantWeightDesc quant_weight_desc(const uint32_t* params);

/// Byte offsets of the sections of a weight constant (0 for sections the format lacks).
struct QuantWeightLayout {
  uint64_t row_bytes = 0;
  uint32_t nf4_row_group = 1; ///< NF4: rows whose chunks are interleaved (1 or 8)
  uint32_t block_shift = 0;   ///< NF4: log2(block_size)
  uint64_t blocks = 0;        ///< NF4 absmax count
  uint64_t dq_groups = 0;     ///< NF4 double quantization: absmax2 count
  uint64_t scales = 0;        ///< FP8 scale count
  uint64_t tiles_per_row = 0; ///< FP8 Block: ceil(cols / C)
  uint64_t absmax_at = 0, dq_codes_at = 0, dq_absmax2_at = 0, dq_table_at = 0, dq_offset_at = 0;
  uint64_t scale_at = 0;
  uint64_t total_bytes = 0;   ///< multiple of 4
};

/// Whether `d` is a legal weight (each parameter in range, unused ones 0, rows and cols in
/// 1..2^30) and, when it is, its layout in *out.
/// `nf4_row_group` 0: this CPU's (quant_nf4_row_group()); else 1 or 8 (tests).
bool quant_weight_layout(const QuantWeightDesc& d, QuantWeightLayout* out,
                         uint32_t nf4_row_group = 0);

/// The NF4 row group of weights packed on this CPU: 8 where it runs the AVX-512 kernels
/// (whatever a test forces later: the layout is the hardware's), else 1. Read once.
uint32_t quant_nf4_row_group();

/// Elements of one NF4 chunk (64 bytes of codes).
constexpr uint64_t kNf4ChunkElems = 128;
/// FP8 rows are padded to this many bytes.
constexpr uint64_t kFp8RowAlign = 64;

/// A weight in memory (pointers into its constant).
struct QuantWeightView {
  QuantWeightDesc desc;
  QuantWeightLayout layout;
  const uint8_t* codes = nullptr;
  const float* absmax = nullptr;
  const uint8_t* dq_codes = nullptr;
  const float* dq_absmax2 = nullptr;
  const float* dq_table = nullptr;
  float dq_offset = 0.0f;
  const float* scale = nullptr;
};

/// The view of a weight constant at `base` (64-byte aligned, layout.total_bytes long).
QuantWeightView quant_weight_view(const QuantWeightDesc& d, const QuantWeightLayout& layout,
                                  const void* base);

/// Whether the weight `d` splits into parts of `part_rows` rows (its rows a multiple of them)
/// that are weights of their own in the same layout: each part's codes start a row group
/// (part_rows a multiple of 8, the widest NF4 row group, whatever this CPU packs), its NF4
/// blocks (and double quantization's groups of blocks) and FP8 tiles start with it. A mixture
/// of experts' [E N, K] weight cut into its E experts (op 47).
bool quant_rows_split_ok(const QuantWeightDesc& d, uint64_t part_rows);

/// Rows [r0, r0 + rows) of `w` as a weight of their own (the same codes and scales in place);
/// `r0` and `rows` multiples of a part_rows that quant_rows_split_ok accepted.
QuantWeightView quant_rows_view(const QuantWeightView& w, uint64_t r0, uint64_t rows);

/// Whether any FP8 code of `w` is a NaN or infinity encoding (the fused kernels decode every
/// code as a finite number; the blob reader refuses such weights). False for NF4.
bool quant_weight_has_nonfinite_codes(const QuantWeightView& w);

/// Compile time: writes the weight constant (layout.total_bytes, zero-initialized by the
/// caller) from the program's tensors: `packed` the program's codes (NF4: two per byte, first
/// element in the high nibble; FP8: one byte each), and the parameter arrays of the scheme
/// (null where the format has none). Lengths as QuantWeightLayout says.
void pack_quant_weight(const QuantWeightDesc& d, const QuantWeightLayout& layout,
                       const uint8_t* packed, const float* absmax, const uint8_t* dq_codes,
                       const float* dq_absmax2, const float* dq_table, float dq_offset,
                       const float* scale, uint8_t* out);

/// NF4: bytes from one 64-byte chunk of row `row` to its next (64 x the rows of its group).
inline uint64_t nf4_chunk_stride(const QuantWeightDesc& d, const QuantWeightLayout& l,
                                 uint64_t row) {
  const uint64_t group = l.nf4_row_group;
  const uint64_t r0 = row / group * group;
  const uint64_t g = d.rows - r0 < group ? d.rows - r0 : group;
  return 64 * g;
}

/// NF4: byte offset of chunk 0 of row `row` in the codes section; chunk c is
/// nf4_chunk_stride(d, row) * c bytes further.
inline uint64_t nf4_row_offset(const QuantWeightLayout& l, uint64_t row) {
  const uint64_t r0 = row / l.nf4_row_group * l.nf4_row_group;
  return r0 * l.row_bytes + (row - r0) * 64;
}

/// NF4: byte offset of chunk `chunk` (columns [128 chunk, 128 chunk + 128)) of row `row`.
inline uint64_t nf4_chunk_offset(const QuantWeightDesc& d, const QuantWeightLayout& l,
                                 uint64_t row, uint64_t chunk) {
  return nf4_row_offset(l, row) + chunk * nf4_chunk_stride(d, l, row);
}

/// The 4-bit code / byte of element (row, col) in the re-laid-out codes.
inline uint32_t quant_code_at(const QuantWeightView& w, uint64_t row, uint64_t col) {
  if (w.desc.format == QuantWeightFormat::Nf4 ||
      w.desc.format == QuantWeightFormat::Nf4DoubleQuant) {
    const uint64_t chunk = col / kNf4ChunkElems, e = col % kNf4ChunkElems;
    const uint64_t word = e % 16, nibble = e / 16;
    const uint8_t byte =
        w.codes[nf4_chunk_offset(w.desc, w.layout, row, chunk) + word * 4 + nibble / 2];
    return (nibble & 1) ? byte >> 4 : byte & 15u;
  }
  return w.codes[row * w.layout.row_bytes + col];
}

/// `v` unchanged, opaque to the optimizer: keeps a product from being contracted into a fused
/// multiply-add (GCC contracts by default in C++, and the kernels are compiled with FMA on).
inline float quant_no_contract(float v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(v));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(v));
#endif
  return v;
}

/// The absmax of NF4 block `b`: stored, or table[code] * absmax2[b / dq_block_size] + offset
/// (an f32 multiply then an f32 add, as quant_formats.h computes it).
inline float nf4_absmax_at(const QuantWeightView& w, uint64_t b) {
  if (w.desc.format == QuantWeightFormat::Nf4DoubleQuant) {
    const float scaled =
        quant_no_contract(w.dq_table[w.dq_codes[b]] * w.dq_absmax2[b / w.desc.dq_block_size]);
    return scaled + w.dq_offset;
  }
  return w.absmax[b];
}

/// The f32 scale of element (row, col): NF4 its block's absmax, FP8 its scale group's scale.
inline float quant_scale_at(const QuantWeightView& w, uint64_t row, uint64_t col) {
  switch (w.desc.format) {
    case QuantWeightFormat::Nf4:
    case QuantWeightFormat::Nf4DoubleQuant:
      return nf4_absmax_at(w, (row * w.desc.cols + col) >> w.layout.block_shift);
    default:
      break;
  }
  switch (w.desc.granularity) {
    case Fp8Granularity::PerTensor:
      return w.scale[0];
    case Fp8Granularity::PerChannel:
      return w.scale[row];
    case Fp8Granularity::Block:
      break;
  }
  return w.scale[(row / w.desc.block_rows) * w.layout.tiles_per_row + col / w.desc.block_cols];
}

/// Element (row, col) in f32 exactly as the portable reference dequantizes it.
float quant_weight_at(const QuantWeightView& w, uint64_t row, uint64_t col);

}  // namespace tern::cpu
