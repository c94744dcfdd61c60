// tern's own f32 GEMM for the cpu backend: C = clamp(A · Wᵀ + bias) with W packed once into
// 16-column panels, computed by a register-tiled microkernel chosen at run time (AVX-512F,
// AVX2+FMA or portable scalar) and split over a pthreadpool. Used for fully-connected layers and
// for convolutions lowered to im2col GEMMs. Layout, tiling and blocking: README.md next to this.
//
// Runtime code: no exceptions, no RTTI, and packed_gemm() never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

/// Columns per packed panel (the same for every ISA, so a packed blob works everywhere).
constexpr int64_t kPanelWidth = 16;

/// Suggested alignment in bytes of a packed weight buffer (panels then start on cache lines).
constexpr int64_t kPackedWeightAlignment = 64;

/// Floats of a packed weight for out features n, in features k: ceil(n/16) panels, each
/// [bias 16][k rows of 16] (panel j holds output columns 16j..16j+15, zero-padded).
uint64_t packed_weight_floats(int64_t n, int64_t k);

/// Packs an FC weight w [n, k] (row-major, PyTorch Linear layout) and optional bias [n]
/// (null: zeros) into `out` (packed_weight_floats(n, k) floats). Also packs a conv weight
/// already flattened to [O, KH*KW*C] (k in (kh, kw, c) order): the layouts are the same.
void pack_fc_weight(const float* w, const float* bias, int64_t n, int64_t k, float* out);

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  ///< A [m, k] row-major with row stride lda (>= k)
  int64_t lda = 0;
  const float* packed = nullptr;  ///< from pack_fc_weight(n, k), or (n, packed_k)
  /// K rows the packing holds (0: k). A larger packed_k multiplies by B's first k rows only
  /// (attention's causal blocks: the keys before the block's last row).
  int64_t packed_k = 0;
  float* c = nullptr;             ///< C [m, n] row-major with row stride ldc (>= n)
  int64_t ldc = 0;
  /// Optional (null: none): R [m, n] with C's row stride ldc, added after the bias and before
  /// the clamp, in the microkernel's final store (read once per element, never past [m x n]).
  /// Must not overlap C or A.
  const float* residual = nullptr;
  /// Applied after the clamp to each finished output tile (while it is in L1).
  GemmActivation activation = GemmActivation::None;
  float activation_alpha = 0.0f;  ///< the activation's parameter (LeakyRelu's negative slope)
  /// Optional (null: none): M [m, n] with C's row stride ldc; each finished tile is multiplied
  /// by it elementwise after the activation (a gated product: StarNet's relu6(f1(x)) · f2(x),
  /// a SwiGLU MLP's silu(gate(x)) · up(x)). Read once per element, never past [m x n]. Must not
  /// overlap C.
  const float* multiplier = nullptr;
  /// Optional (both null: none): [n] each; every finished tile's column j becomes
  /// c · post_scale[j] + post_shift[j] after the activation and the multiplier (a batch norm
  /// after the activation: ConvMixer's 1x1 conv → ReLU → batch norm).
  const float* post_scale = nullptr;
  const float* post_shift = nullptr;
  float out_min = -std::numeric_limits<float>::infinity();  ///< fused clamp; (-inf, +inf) for none
  float out_max = std::numeric_limits<float>::infinity();
};

/// C = act(clamp(A · Wᵀ + bias + R)) ⊙ M · S + T (no R term when residual is null, no act for
/// None, no M when multiplier is null, no S and T when post_scale is null).
/// Splits the work over `pool` (null: the caller's thread only).
/// Never allocates; never reads A or writes C outside [m x k] / [m x n] (A and C may be
/// exact-size buffers). Thread-safe for distinct C. m, n or k of 0: nothing is read (k = 0
/// gives C = clamp(bias)). NaN propagates through the clamp.
void packed_gemm(const GemmProblem& p, pthreadpool_t pool);

enum class GemmIsa : uint8_t { Scalar, Avx2, Avx512 };

/// What dispatch picked (or what packed_gemm_force_isa set).
GemmIsa packed_gemm_isa();

/// Tests and benchmarks only: use `isa` from now on, for every caller in the process. Returns
/// false (and changes nothing) when this build or this CPU cannot run it.
bool packed_gemm_force_isa(GemmIsa isa);

/// True when this build and this CPU can run `isa`.
bool packed_gemm_isa_supported(GemmIsa isa);

/// "scalar", "avx2" or "avx512".
const char* gemm_isa_name(GemmIsa isa);

}  // namespace tern::cpu
