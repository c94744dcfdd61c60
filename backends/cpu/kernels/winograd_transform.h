// Internal to the Winograd convolution (winograd_conv.cpp): the per-tile input and output
// transforms of F(2x2, 3x3), one set per ISA (winograd_transform_avx512.cpp, _avx2.cpp,
// _scalar.cpp), and the driver's blocking knobs. The transforms are adds and subtracts across
// channel vectors (NHWC: a pixel's channels are contiguous).
#pragma once

#include <cstdint>

namespace tern::cpu::winograd_detail {

/// V = Bᵀ d B of one 4x4 input tile for channels [0, kc): src[4i + j] is tile pixel (row i,
/// column j) at its first channel (a zero row of at least kc floats for taps outside x); reads
/// exactly kc floats from each. Writes V[4a + b] at v + (4a + b) * plane, whole vectors: up to
/// kc rounded up to 16 floats per position (the caller's rows have room; the lanes past kc hold
/// zeros).
using InputTileFn = void (*)(const float* const src[16], int64_t kc, float* v, int64_t plane);

/// The 2x2 outputs of one tile for oc channels: Y = Aᵀ M A with M[4a + b] at m + (4a + b) *
/// plane (readable up to oc rounded up to 16), plus residual[q] (when `residual` is not null),
/// clamped to [out_min, out_max] (NaN propagates), stored to dst[q] for q = 2·row + column; a
/// null dst[q] (outside y) is skipped. Reads and writes exactly oc floats at each.
using OutputTileFn = void (*)(const float* m, int64_t plane, int64_t oc, float* const dst[4],
                              const float* const residual[4], float out_min, float out_max);

struct TransformSet {
  InputTileFn input = nullptr;
  OutputTileFn output = nullptr;
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
  int64_t min_tiles_per_part = 32;  ///< fewer tiles per thread: split out_c across threads
};
WinogradBlocking& winograd_blocking();

}  // namespace tern::cpu::winograd_detail
