// tern's grid sample over channels-last tensors (the cpu delegate's op 43): y[n, i, j, :] reads
// x [N, H, W, C] at the point grid[n, i, j] = (gx, gy) in [-1, 1] coordinates, bilinear or
// nearest, with zeros, border or reflection padding — the portable grid_sample2d's coordinate
// rules and tap weights (runtime/kernels/util/grid_sample_coords.h), each output pixel's taps
// worked out once and applied to its C contiguous channels. Mask2Former's deformable attention,
// RAFT's warping, spatial transformers.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct GridSampleProblem {
  const float* x = nullptr;     ///< [n, h, w, c]
  const float* grid = nullptr;  ///< [n, ho, wo, 2] row-major: (gx, gy) pairs
  float* y = nullptr;           ///< [n, ho, wo, c]; never aliases x or grid
  int64_t n = 1, h = 1, w = 1, c = 1, ho = 1, wo = 1;
  int64_t mode = 0;     ///< 0 bilinear, 1 nearest
  int64_t padding = 0;  ///< 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
};

/// Runs the sampling, the output rows (n, i) split over `pool` (null: the caller's thread).
void grid_sample_nhwc(const GridSampleProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
