// tern's gather by a constant map (the cpu delegate's op 42): y seen as [outer, block, run]
// row-major, y[o, t, r] = x[o * step + map[t] + r], map a table of `block` int32 offsets into
// x. A torch.gather or index_select by a constant index that is no affine walk (SEW-D's
// log-bucketed relative positions, a permutation of rows), a reflect pad, a nearest resize by
// no integer factor; folded by the compile half so that the map covers one block, repeats over
// the outer rows and names runs of `run` consecutive elements (an NHWC pixel's channels).
// Exact: values are copied, never computed.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct GatherMapProblem {
  const float* x = nullptr;
  const uint8_t* map = nullptr;  ///< `block` little-endian int32 offsets, each in [0, x's numel - run]
                                 ///< together with (outer - 1) * step (the reader checks it)
  float* y = nullptr;            ///< never aliases x
  int64_t outer = 1;
  int64_t block = 1;
  int64_t step = 0;
  int64_t run = 1;  ///< consecutive elements each map entry copies (>= 1)
};

/// Runs the copy, the outer rows (or, with one, chunks of the block) split over `pool` (null:
/// the caller's thread).
void gather_map(const GatherMapProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
