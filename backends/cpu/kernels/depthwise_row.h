// Internal to the fused bottleneck (bottleneck.cpp): the depthwise row kernel in each ISA
// (depthwise_row_avx512.cpp, _avx2.cpp, _neon.cpp, _scalar.cpp). Each computes bias + the
// window's taps and the clamp of StageEpilogue; the caller applies the epilogue's activation to
// the finished row.
#pragma once

#include "backends/cpu/kernels/bottleneck.h"

namespace tern::cpu::depthwise_detail {

/// depthwise_row without the epilogue's activation.
using RowFn = void (*)(const DepthwiseRow& r);

/// Each returns null when the build has no such code (e.g. AVX-512 on aarch64).
RowFn avx512_row();
RowFn avx2_row();
RowFn scalar_row();
/// aarch64's NEON row (depthwise_row_neon.cpp), the portable slot's choice there.
RowFn neon_row();

/// Output row i of r (of its out_rows) as a one-row problem.
inline DepthwiseRow row_of(const DepthwiseRow& r, int64_t i) {
  DepthwiseRow one = r;
  const int64_t floats = i * r.out_w * r.channels;
  one.rows = r.rows + i * r.stride_h;
  one.out = r.out + floats;
  if (r.residual != nullptr) one.residual = r.residual + floats;
  one.out_rows = 1;
  return one;
}

/// The taps [*kx_lo, *kx_hi) of output column ox whose input column lies inside [0, in_w)
/// (an empty range when none does).
inline void tap_range(const DepthwiseRow& r, int64_t ox, int64_t* ix0, int64_t* kx_lo,
                      int64_t* kx_hi) {
  *ix0 = ox * r.stride_w - r.pad_left;
  *kx_lo = *ix0 < 0 ? -*ix0 : 0;
  const int64_t hi = r.in_w - *ix0;
  *kx_hi = hi < r.kernel_w ? hi : r.kernel_w;
  if (*kx_hi < *kx_lo) *kx_hi = *kx_lo;
}

}  // namespace tern::cpu::depthwise_detail
