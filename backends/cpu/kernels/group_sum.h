// tern's channel-group sum for the cpu backend (the delegate's op 48): the sum over R groups of
// C channels of channels-last tensors, each group optionally scaled per sample and channel —
// ResNeSt's split attention and SKNet's selective kernel, `sum(x.view(N, R, C, H, W), 1)` and
// `sum(x.view(N, R, C, H, W) * a.view(N, R, C, 1, 1), 1)` (or the same over a stack of R
// branches), in one pass over x instead of a transposing copy and two reductions.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Most parts of a group sum (the blob's inputs less the weight).
constexpr int kGroupSumMaxParts = 3;

struct GroupSumProblem {
  /// Part i: [samples, pixels, groups[i] * channels] floats, channels last.
  const float* x[kGroupSumMaxParts] = {};
  int64_t groups[kGroupSumMaxParts] = {};  ///< >= 1 each
  int parts = 0;                           ///< 1..kGroupSumMaxParts
  int64_t samples = 0, pixels = 0, channels = 0;
  /// Null, or [samples, R * channels] with R the groups of all parts in order: group g of the
  /// whole (part i's group r, g counting the earlier parts' groups first) is scaled by its row.
  const float* weight = nullptr;
  float* y = nullptr;  ///< [samples, pixels, channels]; must not overlap any input
};

/// y[n, p, c] = sum over the groups g, in order, of x_g[n, p, c] * weight[n, g * C + c] (or
/// x_g alone without a weight), each product rounded before it is added (PyTorch's multiply,
/// then sum). Split over `pool` in bands of pixels from 2^17 output floats on (below, and with
/// a null pool: the caller's thread).
void group_sum(const GroupSumProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
