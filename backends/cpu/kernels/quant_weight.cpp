// The quantized weight constant's layout, its view, the compile-time re-layout of the codes and
// the exact scalar dequantization (quant_weight.h).
#include "backends/cpu/kernels/quant_weight.h"

#include "backends/cpu/kernels/packed_gemm.h"

#include <cstring>

#include "runtime/kernels/util/quant_formats.h"

namespace tern::cpu {
namespace {

constexpr uint64_t kSectionAlign = 64;
constexpr uint64_t kMaxSide = uint64_t{1} << 30;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool is_nf4(QuantWeightFormat f) {
  return f == QuantWeightFormat::Nf4 || f == QuantWeightFormat::Nf4DoubleQuant;
}

}  // namespace

uint32_t quant_nf4_row_group() {
  static const uint32_t group = packed_gemm_isa_supported(GemmIsa::Avx512) ? 8 : 1;
  return group;
}

bool quant_weight_layout(const QuantWeightDesc& d, QuantWeightLayout* out,
                         uint32_t nf4_row_group) {
  if (d.rows < 1 || d.rows > kMaxSide || d.cols < 1 || d.cols > kMaxSide) return false;
  QuantWeightLayout l;
  const uint64_t numel = d.rows * d.cols;  // <= 2^60
  uint64_t at = 0;
  if (is_nf4(d.format)) {
    const uint32_t b = d.block_size;
    if (b < 32 || b > 4096 || (b & (b - 1)) != 0) return false;
    if (d.granularity != Fp8Granularity::PerTensor || d.block_rows != 0 || d.block_cols != 0) {
      return false;  // FP8 fields unused (PerTensor is 0)
    }
    const bool dq = d.format == QuantWeightFormat::Nf4DoubleQuant;
    if (dq ? (d.dq_block_size < 1 || d.dq_block_size > kMaxSide) : d.dq_block_size != 0) {
      return false;
    }
    l.row_bytes = ceil_div(d.cols, kNf4ChunkElems) * 64;
    l.nf4_row_group = nf4_row_group != 0 ? nf4_row_group : quant_nf4_row_group();
    if (l.nf4_row_group != 1 && l.nf4_row_group != 8) return false;
    while ((uint32_t{1} << l.block_shift) < b) ++l.block_shift;
    l.blocks = ceil_div(numel, b);
    at = align_up(d.rows * l.row_bytes, kSectionAlign);
    if (dq) {
      l.dq_groups = ceil_div(l.blocks, d.dq_block_size);
      l.dq_codes_at = at;
      at = align_up(at + l.blocks, kSectionAlign);
      l.dq_absmax2_at = at;
      at = align_up(at + 4 * l.dq_groups, kSectionAlign);
      l.dq_table_at = at;
      at += 4 * 256;
      l.dq_offset_at = at;
      at += 4;
    } else {
      l.absmax_at = at;
      at += 4 * l.blocks;
    }
  } else if (d.format == QuantWeightFormat::Fp8E4M3 || d.format == QuantWeightFormat::Fp8E5M2) {
    if (d.block_size != 0 || d.dq_block_size != 0) return false;
    l.row_bytes = align_up(d.cols, kFp8RowAlign);
    switch (d.granularity) {
      case Fp8Granularity::PerTensor:
        l.scales = 1;
        break;
      case Fp8Granularity::PerChannel:
        l.scales = d.rows;
        break;
      case Fp8Granularity::Block:
        if (d.block_rows < 1 || d.block_rows > kMaxSide || d.block_cols < 1 ||
            d.block_cols > kMaxSide) {
          return false;
        }
        l.tiles_per_row = ceil_div(d.cols, d.block_cols);
        l.scales = ceil_div(d.rows, d.block_rows) * l.tiles_per_row;
        break;
      default:
        return false;
    }
    if (d.granularity != Fp8Granularity::Block && (d.block_rows != 0 || d.block_cols != 0)) {
      return false;
    }
    at = align_up(d.rows * l.row_bytes, kSectionAlign);
    l.scale_at = at;
    at += 4 * l.scales;
  } else {
    return false;
  }
  l.total_bytes = align_up(at, 4);
  *out = l;
  return true;
}

QuantWeightView quant_weight_view(const QuantWeightDesc& d, const QuantWeightLayout& layout,
                                  const void* base) {
  const uint8_t* p = static_cast<const uint8_t*>(base);
  QuantWeightView w;
  w.desc = d;
  w.layout = layout;
  w.codes = p;
  if (d.format == QuantWeightFormat::Nf4) {
    w.absmax = reinterpret_cast<const float*>(p + layout.absmax_at);
  } else if (d.format == QuantWeightFormat::Nf4DoubleQuant) {
    w.dq_codes = p + layout.dq_codes_at;
    w.dq_absmax2 = reinterpret_cast<const float*>(p + layout.dq_absmax2_at);
    w.dq_table = reinterpret_cast<const float*>(p + layout.dq_table_at);
    std::memcpy(&w.dq_offset, p + layout.dq_offset_at, sizeof(float));
  } else {
    w.scale = reinterpret_cast<const float*>(p + layout.scale_at);
  }
  return w;
}

QuantWeightDesc quant_weight_desc(const uint32_t* q) {
  QuantWeightDesc d;
  d.format = static_cast<QuantWeightFormat>(q[kQuantFormat]);
  d.rows = q[kQuantRows];
  d.cols = q[kQuantCols];
  d.block_size = q[kQuantBlockSize];
  d.dq_block_size = q[kQuantDqBlockSize];
  d.granularity = static_cast<Fp8Granularity>(q[kQuantGranularity]);
  d.block_rows = q[kQuantBlockRows];
  d.block_cols = q[kQuantBlockCols];
  return d;
}

bool quant_rows_split_ok(const QuantWeightDesc& d, uint64_t part_rows) {
  if (part_rows == 0 || d.rows % part_rows != 0 || part_rows % 8 != 0) return false;
  const uint64_t elems = part_rows * d.cols;
  switch (d.format) {
    case QuantWeightFormat::Nf4:
      return elems % d.block_size == 0;
    case QuantWeightFormat::Nf4DoubleQuant:
      return elems % d.block_size == 0 && (elems / d.block_size) % d.dq_block_size == 0;
    case QuantWeightFormat::Fp8E4M3:
    case QuantWeightFormat::Fp8E5M2:
      return d.granularity != Fp8Granularity::Block || part_rows % d.block_rows == 0;
  }
  return false;
}

QuantWeightView quant_rows_view(const QuantWeightView& w, uint64_t r0, uint64_t rows) {
  QuantWeightView v = w;
  v.desc.rows = rows;
  (void)quant_weight_layout(v.desc, &v.layout, w.layout.nf4_row_group);
  v.codes = w.codes + r0 * w.layout.row_bytes;
  const uint64_t block0 = w.desc.block_size != 0 ? r0 * w.desc.cols / w.desc.block_size : 0;
  if (w.absmax != nullptr) v.absmax = w.absmax + block0;
  if (w.dq_codes != nullptr) {
    v.dq_codes = w.dq_codes + block0;
    v.dq_absmax2 = w.dq_absmax2 + block0 / w.desc.dq_block_size;
  }
  if (w.scale != nullptr) {
    if (w.desc.granularity == Fp8Granularity::PerChannel) {
      v.scale = w.scale + r0;
    } else if (w.desc.granularity == Fp8Granularity::Block) {
      v.scale = w.scale + r0 / w.desc.block_rows * w.layout.tiles_per_row;
    }
  }
  return v;
}

bool quant_weight_has_nonfinite_codes(const QuantWeightView& w) {
  const QuantWeightFormat f = w.desc.format;
  if (f != QuantWeightFormat::Fp8E4M3 && f != QuantWeightFormat::Fp8E5M2) return false;
  // e4m3fn: only S.1111.111 (0x7F) is special; e5m2: exponent 11111 (0x7C..0x7F).
  const uint8_t lo = f == QuantWeightFormat::Fp8E4M3 ? 0x7F : 0x7C;
  for (uint64_t r = 0; r < w.desc.rows; ++r) {
    const uint8_t* row = w.codes + r * w.layout.row_bytes;
    uint8_t bad = 0;
    for (uint64_t c = 0; c < w.desc.cols; ++c) bad |= static_cast<uint8_t>((row[c] & 0x7F) >= lo);
    if (bad) return true;
  }
  return false;
}

void pack_quant_weight(const QuantWeightDesc& d, const QuantWeightLayout& l, const uint8_t* packed,
                       const float* absmax, const uint8_t* dq_codes, const float* dq_absmax2,
                       const float* dq_table, float dq_offset, const float* scale, uint8_t* out) {
  if (is_nf4(d.format)) {
    for (uint64_t r = 0; r < d.rows; ++r) {
      const uint64_t padded = l.row_bytes * 2;
      uint8_t* row = out + nf4_row_offset(l, r);  // chunk c at row + c * stride
      const uint64_t stride = nf4_chunk_stride(d, l, r);
      for (uint64_t c = 0; c < padded; ++c) {
        uint32_t code = 7;  // padding: 0.0
        if (c < d.cols) {
          const uint64_t e = r * d.cols + c;
          const uint8_t byte = packed[e >> 1];
          code = (e & 1) ? byte & 15u : byte >> 4;  // first element in the high nibble
        }
        const uint64_t chunk = c / kNf4ChunkElems, i = c % kNf4ChunkElems;
        const uint64_t word = i % 16, nibble = i / 16;
        uint8_t& dst = row[chunk * stride + word * 4 + nibble / 2];
        dst = static_cast<uint8_t>((nibble & 1) ? (dst & 0x0F) | (code << 4)
                                                : (dst & 0xF0) | code);
      }
    }
    if (d.format == QuantWeightFormat::Nf4) {
      std::memcpy(out + l.absmax_at, absmax, 4 * l.blocks);
    } else {
      std::memcpy(out + l.dq_codes_at, dq_codes, l.blocks);
      std::memcpy(out + l.dq_absmax2_at, dq_absmax2, 4 * l.dq_groups);
      std::memcpy(out + l.dq_table_at, dq_table, 4 * 256);
      std::memcpy(out + l.dq_offset_at, &dq_offset, 4);
    }
    return;
  }
  for (uint64_t r = 0; r < d.rows; ++r) {
    std::memcpy(out + r * l.row_bytes, packed + r * d.cols, d.cols);
  }
  std::memcpy(out + l.scale_at, scale, 4 * l.scales);
}

float quant_weight_at(const QuantWeightView& w, uint64_t row, uint64_t col) {
  const uint32_t code = quant_code_at(w, row, col);
  const float s = quant_scale_at(w, row, col);
  switch (w.desc.format) {
    case QuantWeightFormat::Nf4:
    case QuantWeightFormat::Nf4DoubleQuant:
      return quant::kNf4Code[code] * s;
    case QuantWeightFormat::Fp8E4M3:
      return quant::fp8_e4m3_to_float(static_cast<uint8_t>(code)) * s;
    case QuantWeightFormat::Fp8E5M2:
      return quant::fp8_e5m2_to_float(static_cast<uint8_t>(code)) * s;
  }
  return 0.0f;
}

}  // namespace tern::cpu
