// tern's fused inverted bottleneck over NHWC tensors (MobileNetV2/V3's block): an optional 1x1
// expand GEMM, a depthwise KHxKW conv and an optional 1x1 project GEMM, and an optional residual
// in one pass per band of output rows, so the expanded tensors (the block's largest) live only
// in a task's L2-sized scratch and never travel through memory. Each task owns a contiguous range
// of output rows: per band it expands the input rows the band's depthwise window needs (keeping
// the rows it shares with the previous band), runs the depthwise conv into a band buffer and the
// project GEMM from it into y. The GEMMs are the packed GEMM's microkernels (packed_gemm.h).
//
// Runtime code: no exceptions, no RTTI, and bottleneck_nhwc() never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

/// The tallest depthwise window bottleneck_nhwc runs.
constexpr int64_t kMaxBottleneckKernel = 16;

/// What follows a stage's bias: a clamp to [lo, hi] (NaN propagates), then `act`.
struct StageEpilogue {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  GemmActivation act = GemmActivation::None;
};

/// One inverted bottleneck, batch images of x [batch, in_h, in_w, in_c] (contiguous NHWC):
///   e = expand ? epi_e(x · Weᵀ + be) : x                    [in_h, in_w, exp_c]
///   d = epi_d(depthwise(e, Wd, stride, pads) + bd)           [out_h, out_w, exp_c]
///   with squeeze-excitation (only with a project), per image:
///     m = mean of d over its out_h x out_w pixels            [exp_c]
///     g = epi_g(epi_s(m · Wsᵀ + bs) · Wgᵀ + bg)              [se_c], then [exp_c]
///     d = d · g (channel c of every pixel scaled by g[c])
///   y = project ? clamp(d · Wpᵀ + bp + residual) : d · S + T + residual   [out_h, out_w, out_c]
/// (EfficientNet's MBConv and MobileNetV3's blocks with their squeeze-excitation: the whole
/// expanded tensor d is then kept in the scratch, its channel sums taken while each row is in
/// L1, and the gate g is applied to the project's weight rows, or to d when that is smaller.)
/// All sizes >= 1 (else nothing happens); kernel_h <= kMaxBottleneckKernel (else nothing
/// happens); pads >= 0 (bottom/right padding is whatever out_h / out_w imply); taps outside e
/// read as zero. Dilation 1.
struct BottleneckProblem {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t exp_c = 0;  ///< channels of e and d: == in_c when there is no expand
  int64_t out_h = 0, out_w = 0;
  int64_t out_c = 0;  ///< == exp_c when there is no project
  int64_t kernel_h = 3, kernel_w = 3, stride_h = 1, stride_w = 1, pad_top = 1, pad_left = 1;
  const float* x = nullptr;
  /// pack_fc_weight(exp_c, in_c) (bias included), or null: no expand.
  const float* expand_packed = nullptr;
  StageEpilogue expand;
  /// [kernel_h * kernel_w][exp_c]: tap (ky, kx) of channel c at (ky * kernel_w + kx) * exp_c + c.
  const float* dw_weight = nullptr;
  const float* dw_bias = nullptr;  ///< [exp_c], or null: zeros
  StageEpilogue depthwise;
  /// pack_fc_weight(out_c, exp_c) (bias included), or null: no project (y = d).
  const float* project_packed = nullptr;
  /// Squeeze-excitation (only with a project; else ignored): pack_fc_weight(se_c, exp_c) (the
  /// squeeze, bias included), or null: none.
  const float* se_squeeze_packed = nullptr;
  int64_t se_c = 0;  ///< channels of the squeeze (>= 1 with squeeze-excitation)
  StageEpilogue se_squeeze;
  /// pack_fc_weight(exp_c, se_c) (the excitation, bias included).
  const float* se_excite_packed = nullptr;
  StageEpilogue se_gate;  ///< e.g. act Sigmoid; or clamp [0, 1] (a hardsigmoid folded in)
  /// Optional (null: none): y's shape; with a project added after its bias and before its
  /// clamp, without one added to d after the depthwise epilogue (StarNet's x + dw(g(x)));
  /// must not overlap y (it may be x).
  const float* residual = nullptr;
  /// Optional (both null: none; only without a project, else ignored): [exp_c] each; d's
  /// channel c becomes d · post_scale[c] + post_shift[c] after the depthwise epilogue and
  /// before the residual (ConvMixer's depthwise conv → ReLU → batch norm → + x).
  const float* post_scale = nullptr;
  const float* post_shift = nullptr;
  float out_min = -std::numeric_limits<float>::infinity();  ///< the project's clamp
  float out_max = std::numeric_limits<float>::infinity();
  float* y = nullptr;  ///< [batch, out_h, out_w, out_c]; must not overlap x
};

/// Scratch floats bottleneck_nhwc needs for `p` with a pool of at most `threads` threads (a null
/// pool counts as 1): one slot per thread holding a band's expanded rows and its depthwise output.
/// Depends on p's sizes and the band knob only (not on the ISA). 0 for an empty problem.
uint64_t bottleneck_scratch_floats(const BottleneckProblem& p, int64_t threads);

/// Runs `p`, split over `pool` (null: the caller's thread only), with `scratch` of
/// bottleneck_scratch_floats(p, t) floats for some t >= the pool's thread count (64-byte aligned
/// is best). Never allocates; reads x and the residual only inside their shapes, writes y only
/// inside its shape and scratch only inside its size. Uses the ISA packed_gemm_isa() names.
/// Thread-safe for distinct y and scratch.
void bottleneck_nhwc(const BottleneckProblem& p, float* scratch, pthreadpool_t pool);

/// Tests and benchmarks only: the floats of a task's band of expanded rows the driver aims at
/// (it takes at least one output row per band whatever this says). Default 64 Ki floats (256 KiB).
int64_t& bottleneck_band_floats();

/// One output row of a depthwise conv (internal to bottleneck_nhwc, exposed for tests):
/// out[ox][c] = epi(bias[c] + Σ_{ky,kx} rows[ky][ox * stride_w - pad_left + kx][c] ·
/// w[(ky * kernel_w + kx) * channels + c]) for ox < out_w, c < channels, where rows[ky] is an
/// input row of in_w pixels x `channels` floats or null (a row of zeros: padding), and taps with
/// the column outside [0, in_w) are zeros. `bias` may be null (zeros). After the epilogue, when
/// set: out[ox][c] = out[ox][c] · post_scale[c] + post_shift[c] (both or neither), then
/// + residual[ox * channels + c]. With out_rows R > 1, R such rows at once: output row i reads
/// rows[i * stride_h + ky] (so rows holds (R - 1) · stride_h + kernel_h pointers) and writes out
/// + i · out_w · channels (its residual likewise), each input row's part read back from L1 by
/// the next output rows. Reads exactly the floats inside rows' in_w x channels (and the
/// residual's), writes exactly R x out_w x channels floats.
struct DepthwiseRow {
  const float* const* rows = nullptr;  ///< (out_rows - 1) * stride_h + kernel_h row pointers
  int64_t in_w = 0, channels = 0, out_w = 0;
  int64_t kernel_h = 3, kernel_w = 3, stride_w = 1, pad_left = 1;
  int64_t out_rows = 1, stride_h = 1;
  const float* w = nullptr;
  const float* bias = nullptr;
  StageEpilogue epi;
  const float* post_scale = nullptr;  ///< [channels], with post_shift, or null
  const float* post_shift = nullptr;
  const float* residual = nullptr;    ///< out_w x channels, or null
  float* out = nullptr;
};
void depthwise_row(const DepthwiseRow& r);

}  // namespace tern::cpu
