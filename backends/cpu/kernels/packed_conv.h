// tern's dense 2-D and 3-D convolutions over channels-last tensors (NHWC, NDHWC) on the packed
// GEMM's microkernels (implicit GEMM): M = output pixels (batch · out_d · out_h · out_w), N =
// output channels, K = kernel_d · kernel_h · kernel_w · in_c in (kd, kh, kw, c) order. The weight
// [O, KD, KH, KW, C] flattened to [O, KD*KH*KW*C] is packed once with pack_fc_weight (bias
// included); per register tile of output pixels the A rows of one K block are gathered from x
// (zeros where a tap falls in the padding) into a stack buffer and reused across every column
// panel of the task. A 2-D convolution is the 3-D one with depth 1 (the depth fields' defaults).
// Design: README.md next to this.
//
// Runtime code: no exceptions, no RTTI, and packed_conv_nhwc() never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/gemm_activation.h"

namespace tern::cpu {

/// One convolution. All sizes >= 1 (else nothing happens); strides and dilations >= 1; pads
/// >= 0 (back/bottom/right padding is whatever out_d/out_h/out_w imply). With G = groups > 1
/// (in_c and out_c both multiples of G), output channels [g·O/G, (g+1)·O/G) see only input
/// channels [g·C/G, (g+1)·C/G) (PyTorch's grouped convolution). The depth fields keep their
/// defaults (1, 0) for a 2-D convolution: x [batch, in_h, in_w, in_c] is then the same bytes.
struct ConvProblem {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;  ///< x [batch, in_d, in_h, in_w, in_c]
  int64_t out_h = 0, out_w = 0, out_c = 0;          ///< y [batch, out_d, out_h, out_w, out_c]
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t groups = 1;
  int64_t in_d = 1, out_d = 1;  ///< frames of x and y (3-D convolutions; 1 for 2-D)
  int64_t kernel_d = 1, stride_d = 1, dilation_d = 1, pad_front = 0;
  const float* x = nullptr;  ///< contiguous, channels last
  /// The groups' weights one after another, group g at g · packed_weight_floats(O/G, K) with
  /// K = kernel_d · kernel_h · kernel_w · in_c / G: each pack_fc_weight(O/G, K) of the group's
  /// [O/G, KD, KH, KW, C/G] filter (its rows of the [O, KD, KH, KW, C/G] weight) and bias.
  const float* packed = nullptr;
  float* y = nullptr;  ///< contiguous, channels last
  /// Optional (null: none) residual added before the clamp: exactly y's shape and layout
  /// [batch, out_d, out_h, out_w, out_c], contiguous. Read once per output element in the
  /// microkernel's final store (never past its end). Must not alias (nor overlap) y or x.
  const float* residual = nullptr;
  float out_min = -std::numeric_limits<float>::infinity();  ///< fused clamp; (-inf, +inf) for none
  float out_max = std::numeric_limits<float>::infinity();
  /// Applied after the clamp to each finished output tile or row (while it is in cache).
  GemmActivation activation = GemmActivation::None;
  float activation_alpha = 0.0f;  ///< the activation's parameter (LeakyRelu's negative slope)
};

/// y = act(clamp(conv(x, W) + bias + residual)) (no residual term when it is null). A 3-D
/// convolution whose window is one frame deep, stride 1 and no depth padding (R(2+1)D's spatial
/// convs) runs as the 2-D one over batch · in_d images. A shallow 2-D one-group window
/// (KH·KW·C < 32, e.g. a 3x3 stem on RGB) runs as a direct convolution from x (shallow_conv.h)
/// instead of the implicit GEMM; groups run as one implicit GEMM each (tasks over groups × pixel
/// blocks), gathering C/G floats per tap. When most of the window work reads padding (a dilation
/// near the image's size: DeepLabV3's ASPP; conv_blocking()'s skip_taps knobs), each register
/// tile gathers and multiplies only the kernel frames, rows and columns its pixels can reach
/// (the K pieces of that window; bias with the first, residual with the last). Splits the work
/// over `pool` (null: the caller's thread
/// only). Never allocates (its A buffer lives on the stack, under 32 KiB per call frame); reads x
/// only inside its shape, the residual only inside y's shape, and writes y only inside y's
/// shape. Uses the ISA packed_gemm_isa() names. Thread-safe for distinct y.
void packed_conv_nhwc(const ConvProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
