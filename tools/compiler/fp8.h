// FP8 encoding (QUANT.md, docs/quantization.md): float8 e4m3fn / e5m2 from f32, round to
// nearest even after clamping to the largest finite value (saturation; NaN stays NaN), and the
// f32 scales of a weight (per tensor, per output channel = row, or 2-D tiles).
#pragma once

#include <cstdint>
#include <vector>

namespace tern::compiler {

enum class Fp8Format : uint8_t { E4M3, E5M2 };

/// Largest finite magnitude: 448 (e4m3fn) or 57344 (e5m2).
float fp8_max(Fp8Format format);

/// One f32 to float8 bits: NaN -> S.1111.111 (e4m3fn) / S.11111.10 (e5m2) with x's sign;
/// otherwise clamped to [-max, max] (infinities too) and rounded to nearest, ties to even
/// (subnormals included; magnitudes below half the smallest subnormal become signed zero).
uint8_t fp8_encode(float x, Fp8Format format);

/// float8 bits to f32 (exact).
float fp8_decode(uint8_t bits, Fp8Format format);

enum class Fp8Granularity : uint8_t { PerTensor = 0, PerChannel = 1, Block2D = 2 };

struct Fp8Encoded {
  std::vector<uint8_t> codes;  ///< one byte per element, row-major
  std::vector<float> scales;   ///< 1, rows, or ceil(rows/br) * ceil(cols/bc) (row-major tiles)
};

/// Quantizes a rows x cols row-major f32 weight (finite values; the caller checks): each group
/// (the tensor, a row, or a block_rows x block_cols tile) gets scale = amax / max (f32; 1.0 when
/// that is 0, i.e. an all-zero group) and each element becomes fp8_encode(x / scale).
Fp8Encoded fp8_quantize(const float* x, uint64_t rows, uint64_t cols, Fp8Format format,
                        Fp8Granularity granularity, uint32_t block_rows = 128,
                        uint32_t block_cols = 128);

}  // namespace tern::compiler
