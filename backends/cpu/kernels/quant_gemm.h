// tern's fused dequantizing GEMV / GEMM over an NF4 or FP8 weight kept packed (op 23 of the cpu
// blob): C = clamp(A · Wᵀ + bias) where W [n, k] is decoded 16 elements at a time in registers
// (NF4: a 16-entry codebook in one register, looked up by vpermps; FP8: integer bit moves and
// one multiply; in the common layouts the NF4 codebook is pre-multiplied by each block's absmax
// and the FP8 factor broadcast once per run of columns, see quant_fast_path_ok) and never stored
// as f32. Each decoded element is code value × scale in f32 exactly as the portable reference
// dequantizes it; only the order of the K sum differs — except on AVX2's BytePlanes NF4 GEMV
// (Nf4Avx2Lookup), which multiplies code × a partial sums by the block's absmax, and AVX2's
// FP8 fast path (codes to f16 bits, vcvtph2ps), which multiplies each run's sum by its scale.
// Split over a pthreadpool by output columns; AVX-512F, AVX2+FMA and scalar (NEON on aarch64)
// code chosen at run time with the packed GEMM's dispatch (packed_gemm_isa()).
//
// Runtime code: no exceptions, no RTTI, and quant_gemm() never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/quant_weight.h"

namespace tern::cpu {

struct QuantGemmProblem {
  int64_t m = 0;             ///< rows of A and C (1: GEMV)
  const float* a = nullptr;  ///< A [m, k] row-major, row stride lda (>= k); k = w.desc.cols
  int64_t lda = 0;
  QuantWeightView w;            ///< W [n, k]; n = w.desc.rows. FP8 codes must be finite
  const float* bias = nullptr;  ///< [n] or null
  float* c = nullptr;           ///< C [m, n] row-major, row stride ldc (>= n)
  int64_t ldc = 0;
  float out_min = -std::numeric_limits<float>::infinity();
  float out_max = std::numeric_limits<float>::infinity();
};

/// Every kernel's epilogue: element (., col) of C from its dot product `sum`, plus the bias,
/// clamped to [out_min, out_max].
inline float quant_output(const QuantGemmProblem& p, int64_t col, float sum) {
  float y = sum + (p.bias != nullptr ? p.bias[col] : 0.0f);
  y = y < p.out_min ? p.out_min : y;
  return y > p.out_max ? p.out_max : y;
}

/// C = clamp(A · Wᵀ + bias) on `pool` (null: the caller's thread). Never reads A or writes C
/// outside [m x k] / [m x n]. Never allocates.
void quant_gemm(const QuantGemmProblem& p, pthreadpool_t pool);

/// From this many rows of A on (a prompt, not a token), quant_gemm decodes the weight into f32
/// panels of the packed GEMM's layout, a block of K at a time on each task's stack, and runs
/// the f32 GEMM's microkernels over them (quant_panel_gemm.cpp) — for weights that take the
/// run-based fast path (quant_fast_path_ok); fewer rows, or other layouts, take the fused
/// kernels, which decode each weight in registers once per one or two rows of A.
constexpr int64_t kQuantPanelMinRows = 16;

/// How the AVX2 kernel looks NF4 codes up in the 16-entry codebook. Permute: two vpermps of
/// the (block-scaled) codebook halves and a blend per 8 weights — few shuffle-port uops, the
/// better choice where vpermps is one fast uop (Intel). BytePlanes: four vpshufb and eight
/// unpacks per 32 weights, the block's absmax applied to partial sums
/// (quant_nf4_planes_avx2.cpp) — 2.2x the Permute path on AMD Zen 1, where vpermps is slow.
/// Dispatch picks BytePlanes on AMD processors and Permute elsewhere; AVX-512 and the other
/// ISAs are not affected.
enum class Nf4Avx2Lookup { Permute, BytePlanes };

/// What dispatch picked (or what quant_force_nf4_avx2_lookup set).
Nf4Avx2Lookup quant_nf4_avx2_lookup();
/// Tests and benchmarks: use `lookup` from now on.
void quant_force_nf4_avx2_lookup(Nf4Avx2Lookup lookup);

namespace quant_detail {

/// NF4 fast paths (GEMV tiles): how many chunks ahead of the one being decoded each weight
/// row's codes are prefetched, in the row's own stream (6 x 512 bytes for a tile of 8
/// interleaved rows; on Zen 4 ahead of 2 and 4 chunks and of the row-major layout's prefetch of
/// the next tile's rows at the same columns). The AVX-512 tile prefetches into L2 (T1 hint):
/// the NF4 linear stack (bench/quant_linear_stack.py, 2 threads, Zen 4) ran in 8.80 ms against
/// 9.47 with T0 (median of 14 alternating rounds); 4-24 chunks ahead, NTA, and prefetching the
/// next tile's absmax as well were no better.
constexpr uint64_t kNf4PrefetchChunks = 6;

/// Computes output columns [n0, n1) of every row of C (one ISA's kernel).
using QuantRowsFn = void (*)(const QuantGemmProblem& p, int64_t n0, int64_t n1);

/// The AVX2 BytePlanes NF4 kernel (x86-64 builds only) and its NEON twin (aarch64 builds
/// only, what the generic kernel runs there), for NF4 weights quant_fast_path_ok takes.
void nf4_planes_rows_avx2(const QuantGemmProblem& p, int64_t n0, int64_t n1);
void nf4_planes_rows_neon(const QuantGemmProblem& p, int64_t n0, int64_t n1);
/// NEON FP8 for weights quant_fast_path_ok takes (aarch64 builds only, quant_fp8_neon.cpp);
/// false when a folded scale factor overflows (the caller redoes [n0, n1) exactly).
bool fp8_rows_neon(const QuantGemmProblem& p, int64_t n0, int64_t n1);

/// The panel path of quant_gemm for p.m >= kQuantPanelMinRows and quant_fast_path_ok weights.
void panel_gemm(const QuantGemmProblem& p, pthreadpool_t pool);

/// Decodes weight rows [n0, n0 + cols) (cols <= 16; the panel's other columns are zeros),
/// columns [k0, k1) (k0 a multiple of 16) of a quant_fast_path_ok weight into packed-GEMM panel
/// rows: rows[(k - k0) * 16 + j] = W[n0 + j][k], the reference's code value × scale. Rows up to
/// the next multiple of 16 past k1 - k0 may be written too. `fp8` holds the 256 FP8 codes'
/// values (FP8 weights only).
using PanelDecodeFn = void (*)(const QuantWeightView& w, const float* fp8, uint64_t n0,
                               int64_t cols, uint64_t k0, uint64_t k1, float* rows);
/// The AVX2 + F16C decoder (quant_panel_avx2.cpp); null where the build or CPU lacks them.
PanelDecodeFn panel_decode_avx2();

/// Whether this x86-64 CPU has F16C (vcvtph2ps), read once from CPUID leaf 1 (clang 14's
/// __builtin_cpu_supports does not know "f16c"); false on other architectures.
bool cpu_has_f16c();

/// Null where this build has no such code.
QuantRowsFn quant_rows_avx512();
QuantRowsFn quant_rows_avx2();
/// Portable C++ (NEON on aarch64, with the NEON byte-plane kernel for NF4).
QuantRowsFn quant_rows_generic();

/// The 16 f32 weights of row `row`, columns [k0, k0 + 16) into out (exact; 0 past k): the
/// path for vectors whose lanes do not share one scale.
inline void quant_fill16(const QuantWeightView& w, uint64_t row, uint64_t k0, float* out) {
  for (uint64_t i = 0; i < 16; ++i) {
    out[i] = k0 + i < w.desc.cols ? quant_weight_at(w, row, k0 + i) : 0.0f;
  }
}

/// Whether a weight takes the kernels' run-based fast path, where every run of columns that
/// shares one scale starts at a multiple of 16 in each row and is the same for every row:
/// NF4 with cols a multiple of block_size (blocks never span rows; block_size >= 32, so K is a
/// multiple of 32) and, with double quantization, a power-of-two dq_block_size; FP8 per tensor
/// or per channel (any K: only the last vector of a row is partial), or 2-D blocks whose width
/// C is a multiple of 16 or covers the row. Anything else takes the per-vector exact path.
inline bool quant_fast_path_ok(const QuantWeightView& w) {
  const QuantWeightDesc& d = w.desc;
  switch (d.format) {
    case QuantWeightFormat::Nf4:
      return d.cols % d.block_size == 0;
    case QuantWeightFormat::Nf4DoubleQuant:
      return d.cols % d.block_size == 0 && (d.dq_block_size & (d.dq_block_size - 1)) == 0;
    case QuantWeightFormat::Fp8E4M3:
    case QuantWeightFormat::Fp8E5M2:
      return d.granularity != Fp8Granularity::Block || d.block_cols % 16 == 0 ||
             d.block_cols >= d.cols;
  }
  return false;
}

/// NF4 absmax lookup for the fast path: block (row * blocks_per_row + col / block_size).
struct Nf4Absmax {
  const float* absmax = nullptr;  ///< plain NF4
  const uint8_t* dq_codes = nullptr;
  const float* dq_absmax2 = nullptr;
  const float* dq_table = nullptr;
  float dq_offset = 0.0f;
  uint32_t dq_shift = 0;  ///< log2(dq_block_size)

  explicit Nf4Absmax(const QuantWeightView& w) {
    if (w.desc.format == QuantWeightFormat::Nf4DoubleQuant) {
      dq_codes = w.dq_codes;
      dq_absmax2 = w.dq_absmax2;
      dq_table = w.dq_table;
      dq_offset = w.dq_offset;
      while ((uint64_t{1} << dq_shift) < w.desc.dq_block_size) ++dq_shift;
    } else {
      absmax = w.absmax;
    }
  }
  /// nf4_absmax_at(w, b): an f32 multiply then an f32 add, never fused.
  float at(uint64_t b) const {
    if (absmax != nullptr) return absmax[b];
    const float scaled = quant_no_contract(dq_table[dq_codes[b]] * dq_absmax2[b >> dq_shift]);
    return scaled + dq_offset;
  }
};

/// FP8 decode by bit moves: the code's sign and its 7 low bits placed at bit 31 and bits
/// 20..26 (e4m3) / 21..27 (e5m2) of an f32 give the value times 2^-120 / 2^-112 exactly
/// (subnormals too), so one multiply by scale · 2^120 / 2^112 gives decode(code) · scale.
constexpr int kE4m3Shift = 20;
constexpr uint32_t kE4m3Mask = 0x87F00000u;
constexpr float kE4m3Bias = 1.329227995784916e36f;  // 2^120
constexpr int kE5m2Shift = 21;
constexpr uint32_t kE5m2Mask = 0x8FE00000u;
constexpr float kE5m2Bias = 5.192296858534828e33f;  // 2^112

/// FP8 fast path (quant_fast_path_ok): *scales = the scales of weight row `row`, one per run of
/// columns sharing one (the tensor's, the row's, or its 2-D blocks' tiles_per_row); false when
/// some scale times `factor` (a kernel's folded 2^bias or 2^8) overflows while the scale is
/// finite — the kernel then takes the exact path for the tile.
inline bool fp8_row_scales(const QuantWeightView& w, uint64_t row, float factor,
                           const float** scales) {
  const QuantWeightDesc& d = w.desc;
  const float* s = d.granularity == Fp8Granularity::PerTensor ? w.scale
                   : d.granularity == Fp8Granularity::PerChannel
                       ? w.scale + row
                       : w.scale + (row / d.block_rows) * w.layout.tiles_per_row;
  const uint64_t runs = d.granularity == Fp8Granularity::Block ? w.layout.tiles_per_row : 1;
  for (uint64_t t = 0; t < runs; ++t) {
    const float f = s[t] * factor;
    if (f - f != 0.0f && s[t] - s[t] == 0.0f) return false;
  }
  *scales = s;
  return true;
}

/// The run of columns of one weight row that share a scale, walked left to right by a kernel:
/// vector() says whether the lanes [k0, k0 + 16) (clipped to the row) lie in one run and gives
/// the factor a decoded vector is multiplied by (NF4: the block's absmax; FP8: scale · 2^bias).
/// A vector spanning two runs, or an FP8 factor that overflows while the scale is finite, takes
/// quant_fill16 instead. Divisions happen once per run, not per vector.
struct ScaleCursor {
  uint64_t begin = 0, end = 0;  ///< columns [begin, end) share `factor`
  float factor = 0.0f;
  bool exact_only = false;

  void seek(const QuantWeightView& w, uint64_t row, uint64_t k) {
    const QuantWeightDesc& d = w.desc;
    float scale = 0.0f;
    float bias = 1.0f;
    switch (d.format) {
      case QuantWeightFormat::Nf4:
      case QuantWeightFormat::Nf4DoubleQuant: {
        const uint64_t b = (row * d.cols + k) >> w.layout.block_shift;
        const uint64_t stop = (b + 1) * d.block_size - row * d.cols;
        const uint64_t start = b * d.block_size;
        begin = start > row * d.cols ? start - row * d.cols : 0;
        end = stop < d.cols ? stop : d.cols;
        factor = nf4_absmax_at(w, b);
        exact_only = false;
        return;
      }
      case QuantWeightFormat::Fp8E4M3:
        bias = kE4m3Bias;
        break;
      case QuantWeightFormat::Fp8E5M2:
        bias = kE5m2Bias;
        break;
    }
    if (d.granularity == Fp8Granularity::Block) {
      const uint64_t stop = (k / d.block_cols + 1) * d.block_cols;
      begin = stop - d.block_cols;
      end = stop < d.cols ? stop : d.cols;
    } else {
      begin = 0;
      end = d.cols;
    }
    scale = quant_scale_at(w, row, k);
    factor = scale * bias;
    exact_only = factor - factor != 0.0f && scale - scale == 0.0f;
  }

  bool vector(const QuantWeightView& w, uint64_t row, uint64_t k0, float* s) {
    if (k0 >= end || k0 < begin) seek(w, row, k0);
    const uint64_t stop = k0 + 16 < w.desc.cols ? k0 + 16 : w.desc.cols;
    if (stop > end || exact_only) return false;
    *s = factor;
    return true;
  }
};

}  // namespace quant_detail
}  // namespace tern::cpu
