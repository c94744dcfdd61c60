// Internal to packed_conv_nhwc (packed_conv.cpp): the direct NHWC convolution for shallow windows
// (fewer than kShallowConvTaps taps per output, KH·KW·C, e.g. a 3x3 stem on RGB), where the
// implicit GEMM's gathered K blocks are too short to pay for themselves. Each output pixel block
// accumulates straight from x: per tap, one weight vector per 16 output channels (a row of the
// same packed weight, pack_fc_weight's layout) and one broadcast input value per pixel. Output
// rows are split over the pool. One row kernel per ISA (shallow_conv_avx512.cpp,
// shallow_conv_avx2.cpp, shallow_conv_generic.cpp for baseline and aarch64).
//
// Grouped convolutions with narrow groups (at most ConvBlocking::direct_group_max_cols output
// channels a group: RegNet's and ResNeXt's 3x3s with 4 to 16) take the same path where AVX2
// runs (AVX2 and AVX-512 dispatch), through the AVX2 row kernel, group by group — or under
// AVX-512 dispatch, for groups of 4 or 8 channels in and out, several whole groups a zmm
// (grouped_conv_avx512.cpp): without a gather per tap of C/G floats, which costs the implicit
// GEMM more than its few columns compute. Elsewhere they stay on the implicit GEMM.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

#include "backends/cpu/kernels/packed_conv.h"

namespace tern::cpu::shallow_detail {

/// Taps per output below which packed_conv_nhwc takes this path.
constexpr int64_t kShallowConvTaps = 32;

/// Output row oy of image n of p: y's out_w x out_c floats, with the bias, the residual and the
/// clamp (not the activation).
using RowFn = void (*)(const ConvProblem& p, int64_t n, int64_t oy);

/// Null when the build has no such code.
RowFn avx512_row();
/// Output rows [r0, r1) of p, counted over the batch (row r: image r / out_h, row r % out_h),
/// with the bias, the residual and the clamp (not the activation).
using RowsFn = void (*)(const ConvProblem& p, int64_t r0, int64_t r1);
/// The AVX-512 kernel for grouped conv p (grouped_conv_avx512.cpp): groups of 4 or 8 channels in
/// and out, 16 / width groups a vector (the last one masked), or of 16, one group a vector; null
/// for other shapes or builds.
RowsFn avx512_grouped_rows(const ConvProblem& p);
RowFn avx2_row();
RowFn generic_row();

/// True when one-group 2-D conv p runs here: fewer than kShallowConvTaps taps per output, a
/// single input channel where AVX2 or AVX-512 runs (the implicit GEMM would gather one float
/// per tap; the direct kernels broadcast it from x instead, 8 to 12 pixels a block), or on
/// AVX-512 up to 4 input channels into at most 16 outputs (one panel).
bool takes_one_group(const ConvProblem& p);

/// True when grouped conv p (groups > 1) runs here: narrow groups and AVX2 in this build and CPU
/// under the ISA dispatch picked (AVX2 or AVX-512).
bool takes_grouped(const ConvProblem& p);

/// Runs p (non-empty; takes_one_group(p) or takes_grouped(p)) over
/// `pool`.
void shallow_conv_nhwc(const ConvProblem& p, pthreadpool_t pool);

/// The interior output columns [*in0, *in1): every tap of the window inside [0, in_w).
inline void interior_columns(const ConvProblem& p, int64_t* in0, int64_t* in1) {
  const int64_t span = (p.kernel_w - 1) * p.dilation_w;
  int64_t lo = (p.pad_left + p.stride_w - 1) / p.stride_w;
  const int64_t last = p.in_w - 1 + p.pad_left - span;  // ox * stride_w <= last
  int64_t hi = last < 0 ? 0 : last / p.stride_w + 1;
  if (hi > p.out_w) hi = p.out_w;
  if (lo > hi) lo = hi;
  *in0 = lo;
  *in1 = hi;
}

}  // namespace tern::cpu::shallow_detail
