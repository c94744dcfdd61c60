// tern's group norm of an NHWC (channels-last) tensor (the cpu delegate's op 30): the C
// channels of each sample split into G groups of C / G consecutive channels; each group, over
// all its pixels, shifted by its mean and scaled by 1 / sqrt(biased variance + eps), then gamma
// and beta per channel. BiT's and PoolFormer's GroupNorm after a conv, whose output the
// delegate keeps NHWC: a group's values are a run of C / G floats in every pixel.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct GroupNormProblem {
  const float* x = nullptr;  ///< [batch, pixels, channels]
  float* y = nullptr;        ///< [batch, pixels, channels]; may be x
  int64_t batch = 0;
  int64_t pixels = 0;
  int64_t channels = 0;          ///< >= 1
  int64_t groups = 1;            ///< >= 1, divides channels
  const float* gamma = nullptr;  ///< [channels]
  const float* beta = nullptr;   ///< [channels]
  float eps = 0.0f;              ///< > 0
};

/// Floats of scratch group_norm_nhwc needs for `p` (any pool).
uint64_t group_norm_scratch_floats(const GroupNormProblem& p);

/// Normalizes `p`: per-channel sums over bands of pixels (split over `pool`), reduced per
/// group in double, twice (the mean, then the squared deviations from it), then one pass
/// writing x * scale + shift per channel. `scratch` holds group_norm_scratch_floats(p) floats.
/// Never allocates.
void group_norm_nhwc(const GroupNormProblem& p, float* scratch, pthreadpool_t pool);

}  // namespace tern::cpu
