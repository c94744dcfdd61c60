// Internal to the Winograd convolution (winograd_conv.cpp): the per-tile input and output
// transforms of F(2x2, 3x3) and F(4x4, 3x3) (winograd_f43.h), one set per ISA
// (winograd_transform_avx512.cpp, _avx2.cpp, _scalar.cpp), and the driver's blocking knobs. The transforms are adds and subtracts across
// channel vectors (NHWC: a pixel's channels are contiguous).
#pragma once

#include <cstdint>

namespace tern::cpu::winograd_detail {

/// V = Bᵀ d B of one t x t input tile (t = 4 for F(2x2, 3x3), 6 for F(4x4, 3x3)) for channels
/// [0, kc): src[t·i + j] is tile pixel (row i, column j) at its first channel (a zero row of at
/// least kc floats for taps outside x); reads exactly kc floats from each. Writes V[t·a + b] at
/// v + (t·a + b) * plane, whole vectors: up to kc rounded up to 16 floats per position (the
/// caller's rows have room; the lanes past kc hold zeros).
using InputTileFn = void (*)(const float* const* src, int64_t kc, float* v, int64_t plane);

/// The m x m outputs of one tile (m = t - 2) for oc channels: Y = Aᵀ M A with M[t·a + b] at
/// m + (t·a + b) * plane (readable up to oc rounded up to 16), plus residual[q] (when
/// `residual` is not null), clamped to [out_min, out_max] (NaN propagates), stored to dst[q] for
/// q = m·row + column; a null dst[q] (outside y) is skipped. Reads and writes exactly oc floats
/// at each.
using OutputTileFn = void (*)(const float* m, int64_t plane, int64_t oc, float* const* dst,
                              const float* const* residual, float out_min, float out_max);

struct TransformSet {
  InputTileFn input = nullptr;  ///< F(2x2, 3x3): 4x4 tiles
  OutputTileFn output = nullptr;
  InputTileFn input_f43 = nullptr;  ///< F(4x4, 3x3): 6x6 tiles
  OutputTileFn output_f43 = nullptr;
};

/// Each returns null when the build has no such code (e.g. AVX-512 on aarch64).
const TransformSet* avx512_transforms();
const TransformSet* avx2_transforms();
const TransformSet* scalar_transforms();

/// Blocking knobs of winograd_conv_nhwc; benchmarks and tests may change them between calls
/// (never while a convolution runs; winograd_scratch_floats depends on them).
struct WinogradBlocking {
  int64_t kc_max = 256;             ///< input channels per K block
  int64_t block_bytes = 512 << 10;  ///< a task's V + M for one block of tiles (L2)
  /// With F(4x4, 3x3), a task whose share of the packed weight U exceeds large_u_bytes (it
  /// streams that share once per block) takes blocks of large_u_block_bytes instead.
  int64_t large_u_bytes = 2 << 20;
  int64_t large_u_block_bytes = 2 << 20;
  int64_t min_tiles_per_part = 32;  ///< fewer tiles per thread: split out_c across threads
};
WinogradBlocking& winograd_blocking();

}  // namespace tern::cpu::winograd_detail
