// NF4 encoding (QUANT.md, docs/quantization.md): blockwise absmax, nearest code by the midpoint
// rule (ties to the lower index), two codes per byte with the first element in the high nibble,
// and the optional double quantization of the absmax values with the bitsandbytes signed
// dynamic map. Byte for byte what bitsandbytes' quantize_4bit(quant_type="nf4") writes on CPU.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tern::compiler {

/// The 15 f32 midpoints between consecutive NF4 codes, (code[i] + code[i + 1]) / 2 in f32.
const std::array<float, 15>& nf4_midpoints();

/// The NF4 code index of `scaled` (already divided by its block's absmax and clamped to
/// [-1, 1]): the number of midpoints strictly below it, so a value exactly on a midpoint takes
/// the lower index.
uint8_t nf4_code_index(float scaled);

/// The stored absmax of a block whose largest magnitude is `absmax`: at least 1e-38f (an
/// all-zero block gets 1e-38f, a subnormal f32).
float nf4_clamped_absmax(float absmax);

struct Nf4Encoded {
  std::vector<uint8_t> packed;  ///< ceil(n / 2) bytes: byte j = q[2j] << 4 | q[2j+1]
  std::vector<float> absmax;    ///< ceil(n / block_size) f32, each >= 1e-38f
};

/// Quantizes `n` f32 values (finite; the caller checks) in blocks of `block_size` elements
/// (a power of two in [32, 4096]; the trailing partial block gets its own absmax). A full block
/// scales by the f32 reciprocal of its absmax (x * (1 / absmax)), the trailing partial block
/// divides (x / absmax), both clamped to [-1, 1]: bitsandbytes' CPU arithmetic, so the codes
/// agree bit for bit.
Nf4Encoded nf4_quantize(const float* x, uint64_t n, uint32_t block_size);

/// The bitsandbytes signed dynamic map (create_dynamic_map(signed=True, max_exponent_bits=7,
/// total_bits=8)), 256 ascending f32: for i in 0..6, n = 2^i + 1 points on [0.1, 1] spaced as
/// torch.linspace does in f32 (start + step * j fused for the first half, end - step * (n-1-j)
/// fused for the rest), the 2^i f32 midpoints m of consecutive points, ±f32(10^(i-6)) * m; then
/// 0 and 1.0; sorted.
const std::array<float, 256>& bnb_dynamic_map();

/// The index into `table` (256 ascending f32) of the entry nearest `v` by the midpoint rule:
/// the number of f32 midpoints (table[i] + table[i + 1]) / 2 strictly below v.
uint8_t table_code_index(const std::array<float, 256>& table, float v);

struct Nf4DoubleQuant {
  float offset = 0.0f;             ///< mean of the absmax values (f32 of the exact mean)
  std::vector<uint8_t> codes;      ///< one per absmax value: index into the table
  std::vector<float> absmax2;      ///< ceil(count / dq_block_size): largest |absmax - offset|
  std::array<float, 256> table{};  ///< the code table (bnb_dynamic_map())
};

/// Double quantization of NF4 absmax values: offset = mean(absmax) (summed in double, rounded
/// to f32 once); c = absmax - offset (f32); blocks of `dq_block_size` get absmax2 = max |c|;
/// each c / absmax2 (f32 division) becomes a table index by the midpoint rule. A block whose
/// values all equal the offset (absmax2 == 0) stores absmax2 = 0 and the index of 0.0.
Nf4DoubleQuant nf4_double_quantize(const std::vector<float>& absmax, uint32_t dq_block_size = 256);

/// What a double-quantized absmax decodes to: table[code] * absmax2 + offset, in f32.
float nf4_dq_absmax(const Nf4DoubleQuant& dq, uint64_t index, uint32_t dq_block_size = 256);

}  // namespace tern::compiler
