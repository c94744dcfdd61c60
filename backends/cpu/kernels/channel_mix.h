// tern's linear map along an inner dim for the cpu backend (the delegate's op 49): y[o, j, i]
// = sum over k of w[j, k] x[o, k, i] (+ b[j]) — CaiT's talking heads, a linear layer over the
// heads of the attention scores, computed on the scores' row-major bytes: no copies moving
// the heads last and back, no K-wide rows for a fully-connected kernel. Optionally a softmax
// over the k inputs of each column first (YOLO's box-distribution head).
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
  /// Softmax over the k inputs first (since blob version 29): y[o, j, i] = sum over k of
  /// w[j, k] p[o, k, i] (+ b[j]) with p[o, ·, i] = softmax(x[o, ·, i]) — YOLO's distribution
  /// focal loss head, a softmax over 16 bins and their expected value (a 1x1 conv of weights
  /// 0..15), with neither the bins moved last nor the probabilities written out.
  bool softmax = false;
};

/// y[o, j, i] = (sum over k, in order, of w[j, k] x[o, k, i]) + bias[j], each product rounded
/// before it is added (PyTorch's linear, then its bias); with `softmax`, x's column first
/// turned into e^(x - max) / sum (the exponential within 3e-7 of e^x's value, exact 0 below
/// e^-87.3; a column of -inf gives NaN, as PyTorch's). Split over `pool` in bands of tiles
/// of `inner` from 2^17 output floats on (below, and with a null pool: the caller's thread).
void channel_mix(const ChannelMixProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
