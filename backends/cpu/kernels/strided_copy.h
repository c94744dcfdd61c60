// tern's strided copy for the cpu backend (the delegate's op 27): the output, row-major over
// up to 6 extents, gathered from the input at an offset plus a stride per output dim. One node
// does what the XNNPACK snapshot cannot: a permute or transpose of any rank, a slice (any step),
// an expand (stride 0), a flip (a negative stride), and a view that reorders an NHWC tensor's bytes (ShuffleNet's channel
// shuffle, the window partitions of Swin and MaxViT), or several of them composed.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Most dims of a strided copy (XNN_MAX_TENSOR_DIMS).
constexpr int kStridedCopyMaxDims = 6;

struct StridedCopyProblem {
  const float* x = nullptr;
  float* y = nullptr;                        ///< row-major over `extent`; must not overlap x
  int rank = 1;                              ///< 1..kStridedCopyMaxDims
  int64_t extent[kStridedCopyMaxDims] = {};  ///< output dims, each >= 1
  int64_t stride[kStridedCopyMaxDims] = {};  ///< input elements per step of each output dim
                                             ///< (negative: read backwards, a flip)
  int64_t offset = 0;                        ///< input element of output index 0
};

/// y[i0, .., ir-1] = x[offset + sum_d i_d * stride[d]] for every output index. Rows whose
/// innermost stride is 1 are copied whole; a short innermost dim (2..16) read with a stride
/// after a contiguous one is copied as small transposes (interleaves); an innermost dim of 16
/// or more read with a stride while an earlier dim of 16 or more reads contiguously, as a
/// transpose in 16 x 16 tiles. Split over `pool` in
/// bands of rows or blocks from 2^19 output floats on (below, and with a null pool: the
/// caller's thread).
void strided_copy(const StridedCopyProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
