// tern's Winograd convolutions over NHWC tensors, for 3x3 stride-1 convolutions (groups 1,
// dilation 1): each m x m block of outputs (m = 2: F(2x2, 3x3); m = 4: F(4x4, 3x3)) comes from a
// t x t input tile (t = m + 2) as Y = Aᵀ [Σ_c (G g Gᵀ) ⊙ (Bᵀ d B)] A, so the 9·m² multiplies of a
// block become t² (F(2x2): 36 → 16; F(4x4): 144 → 36), done as t² GEMMs (one per tile
// position) on the packed GEMM's microkernels. The weight is transformed and packed once
// (pack_winograd_weight); per block of tiles a task input-transforms the tiles into its scratch
// slot, runs the GEMMs into the slot and output-transforms them into y with the bias, the
// optional residual and the clamp. Design and figures: README.md next to this.
//
// Runtime code: no exceptions, no RTTI, and winograd_conv_nhwc() never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

/// Outputs per side of a tile: which Winograd transform a packed weight and a problem use.
enum class WinogradTile : int {
  F2x2 = 2,  ///< F(2x2, 3x3): 4x4 input tiles, 16 positions (Lavin & Gray's matrices)
  F4x4 = 4,  ///< F(4x4, 3x3): 6x6 input tiles, 36 positions (winograd_f43.h's matrices)
};

/// Tile positions (GEMMs, packed matrices) of a tile kind: 16 or 36.
int64_t winograd_positions(WinogradTile tile);

/// Floats of a Winograd-packed weight for out_c O, in_c C: winograd_positions(tile) matrices
/// of packed_weight_floats(O, C) floats each.
uint64_t winograd_weight_floats(int64_t out_c, int64_t in_c,
                                WinogradTile tile = WinogradTile::F2x2);

/// Packs a PyTorch conv weight w [O, C, 3, 3] (OIHW, row-major) and optional bias [O] (null:
/// zeros) into `out` (winograd_weight_floats(O, C, tile) floats). With t = m + 2 the tile's
/// side, matrix xi = t·a + b (a: tile row, b: tile column) holds U[xi][o][c] = (G g_oc Gᵀ)[a][b]
/// (computed in double, rounded once) in pack_fc_weight's layout for n = O, k = C (ceil(O/16)
/// panels of [16 bias floats][C rows of 16 columns]). The bias is stored once, in the bias
/// slots of the matrix at a = b = 1 (5 for F2x2, 7 for F4x4), the others' are zeros: Aᵀ's
/// column 1 is all ones, so the output transform gives every output of a tile exactly +1 times
/// that M, and the bias lands once in each output. Runs at compile time (or init); the
/// matrices start on 64-byte boundaries when `out` does.
void pack_winograd_weight(const float* w, const float* bias, int64_t out_c, int64_t in_c,
                          float* out, WinogradTile tile = WinogradTile::F2x2);
/// The part of pack_winograd_weight that makes panels [first_panel, end_panel) (output
/// channels 16 * first_panel up to 16 * end_panel or O) of every matrix: the floats of
/// different ranges never overlap, so ranges may be packed in any order or at once.
void pack_winograd_weight_panels(const float* w, const float* bias, int64_t out_c, int64_t in_c,
                                 float* out, WinogradTile tile, int64_t first_panel,
                                 int64_t end_panel);

/// One 3x3 stride-1 convolution (dilation 1, groups 1). All sizes >= 1 (else nothing happens);
/// pads >= 0 (bottom/right padding is whatever out_h/out_w imply); taps outside x read as zero.
struct WinogradProblem {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;  ///< x [batch, in_h, in_w, in_c], contiguous
  int64_t out_h = 0, out_w = 0, out_c = 0;          ///< y [batch, out_h, out_w, out_c], contiguous
  int64_t pad_top = 0, pad_left = 0;
  const float* x = nullptr;
  const float* packed = nullptr;  ///< pack_winograd_weight(out_c, in_c, tile)
  WinogradTile tile = WinogradTile::F2x2;  ///< the packed weight's
  float* y = nullptr;
  /// Optional (null: none): y's shape and layout, added before the clamp; read only inside
  /// y's shape; must not overlap y or x.
  const float* residual = nullptr;
  float out_min = -std::numeric_limits<float>::infinity();  ///< fused clamp; (-inf, +inf) for none
  float out_max = std::numeric_limits<float>::infinity();
  /// Applied after the clamp to each finished output tile's pixels (still in L1).
  GemmActivation activation = GemmActivation::None;
  float activation_alpha = 0.0f;  ///< its parameter (LeakyRelu's negative slope)
};

/// Scratch floats winograd_conv_nhwc needs for `p` with a pool of at most `threads` threads (a
/// null pool counts as 1). The caller allocates it once, 64-byte aligned (not required, but
/// slower without). Depends on p's sizes and the blocking knobs only (not on the ISA), so one
/// buffer serves every call with the same shapes. 0 for an empty problem.
uint64_t winograd_scratch_floats(const WinogradProblem& p, int64_t threads);

/// y = act(clamp(conv3x3(x, W) + bias + residual)) (no residual term when it is null). Splits the
/// work over `pool` (null: the caller's thread only); `scratch` holds
/// winograd_scratch_floats(p, t) floats for some t >= the pool's thread count. Never allocates;
/// reads x only inside its shape and the residual only inside y's, writes y only inside its shape
/// and scratch only inside its size. Uses the ISA packed_gemm_isa() names. Thread-safe for
/// distinct y and scratch.
void winograd_conv_nhwc(const WinogradProblem& p, float* scratch, pthreadpool_t pool);

}  // namespace tern::cpu
