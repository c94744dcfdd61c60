// tern's linear map along an inner dim for the cpu backend (the delegate's op 49): y[o, j, i]
// = sum over k of w[j, k] x[o, k, i] (+ b[j]) — CaiT's talking heads, a linear layer over the
// heads of the attention scores, computed on the scores' row-major bytes: no copies moving
// the heads last and back, no K-wide rows for a fully-connected kernel.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

struct ChannelMixProblem {
  const float* x = nullptr;     ///< [outer, k, inner]
  const float* w = nullptr;     ///< [j, k]
  const float* bias = nullptr;  ///< [j], or null
  float* y = nullptr;           ///< [outer, j, inner]; must not overlap x
  int64_t outer = 0, k = 0, j = 0, inner = 0;
};

/// y[o, j, i] = (sum over k, in order, of w[j, k] x[o, k, i]) + bias[j], each product rounded
/// before it is added (PyTorch's linear, then its bias). Split over `pool` in bands of tiles
/// of `inner` from 2^17 output floats on (below, and with a null pool: the caller's thread).
void channel_mix(const ChannelMixProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
