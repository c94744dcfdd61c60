// NumPy broadcasting for the portable elementwise kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace portable {

/// A shape held by value (no allocation).
struct FixedShape {
  uint32_t rank = 0;
  int64_t sizes[kMaxRank] = {};
  Span<const int64_t> span() const { return Span<const int64_t>(sizes, rank); }
};

/// The NumPy broadcast of shapes `a` and `b` (right-aligned; each pair of sizes equal or one
/// of them 1). InvalidArgument naming `op` and both shapes when they do not broadcast.
Error broadcast_shapes(const char* op, Span<const int64_t> a, Span<const int64_t> b,
                       FixedShape* out);

/// Element strides of a contiguous tensor of shape `in` read as shape `out` (in broadcasts to
/// out): 0 on broadcast dims, right-aligned. `strides` has out.size() entries.
void broadcast_strides(Span<const int64_t> in, Span<const int64_t> out, int64_t* strides);

/// Most inputs an elementwise op broadcasts together (where: cond, a, b).
constexpr size_t kMaxBroadcastInputs = 3;

/// How a contiguous output of some shape reads its broadcast inputs, with dims coalesced:
/// size-1 dims dropped and neighbours merged where every input steps through them as one dim
/// (a [N, C, H, W] * b [1, C, 1, 1] becomes [N, C, H*W] with b's strides [0, 1, 0]). The
/// innermost stride of each input is 0 (broadcast) or 1.
struct BroadcastPlan {
  size_t num_inputs = 0;
  uint32_t rank = 1;                                    ///< >= 1
  int64_t sizes[kMaxRank] = {1};                        ///< rank entries
  int64_t strides[kMaxBroadcastInputs][kMaxRank] = {};  ///< element strides per input
  uint64_t numel = 1;                                   ///< product of sizes (0: nothing to do)
};

/// Plans reading `num_inputs` (<= kMaxBroadcastInputs) contiguous inputs of shapes `inputs`
/// broadcast to `out` (the caller checked that they broadcast, e.g. with broadcast_shapes).
void make_broadcast_plan(Span<const int64_t> out, const Span<const int64_t>* inputs,
                         size_t num_inputs, BroadcastPlan* plan);

/// Calls body(in_offsets, out_offset, n, in_strides) for every innermost run of the plan:
/// elements out_offset .. out_offset + n - 1 of the output read input k at
/// in_offsets[k] + i * in_strides[k] (in_strides[k] is 0 or 1).
template <typename Body>
void for_each_run(const BroadcastPlan& plan, Body body) {
  if (plan.numel == 0) return;
  const uint32_t rank = plan.rank;
  const int64_t inner = plan.sizes[rank - 1];
  int64_t inner_strides[kMaxBroadcastInputs] = {};
  int64_t offsets[kMaxBroadcastInputs] = {};
  for (size_t k = 0; k < plan.num_inputs; ++k) inner_strides[k] = plan.strides[k][rank - 1];
  int64_t index[kMaxRank] = {};
  const uint64_t outer = plan.numel / static_cast<uint64_t>(inner);
  for (uint64_t o = 0; o < outer; ++o) {
    body(static_cast<const int64_t*>(offsets), static_cast<int64_t>(o) * inner, inner,
         static_cast<const int64_t*>(inner_strides));
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < plan.num_inputs; ++k) offsets[k] += plan.strides[k][d];
      if (index[d] < plan.sizes[d]) break;
      for (size_t k = 0; k < plan.num_inputs; ++k) {
        offsets[k] -= plan.strides[k][d] * plan.sizes[d];
      }
      index[d] = 0;
    }
  }
}

/// out[i] = f(a[ia], b[ib]) over every element of the contiguous `out_shape`, where `a` and
/// `b` have shapes broadcastable to it. The innermost dim runs as a flat loop. `out` may alias
/// `a` or `b` only when that operand has the full output shape.
template <typename T, typename F>
void broadcast_binary(const T* a, Span<const int64_t> a_shape, const T* b,
                      Span<const int64_t> b_shape, T* out, Span<const int64_t> out_shape, F f) {
  uint64_t numel = 1;
  for (int64_t s : out_shape) numel *= static_cast<uint64_t>(s);
  if (numel == 0) return;
  uint64_t a_numel = 1;
  for (int64_t s : a_shape) a_numel *= static_cast<uint64_t>(s);
  uint64_t b_numel = 1;
  for (int64_t s : b_shape) b_numel *= static_cast<uint64_t>(s);
  if (a_numel == numel && b_numel == numel) {
    for (uint64_t i = 0; i < numel; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  if (a_numel == numel && b_numel == 1) {
    const T bv = b[0];
    for (uint64_t i = 0; i < numel; ++i) out[i] = f(a[i], bv);
    return;
  }
  if (a_numel == 1 && b_numel == numel) {
    const T av = a[0];
    for (uint64_t i = 0; i < numel; ++i) out[i] = f(av, b[i]);
    return;
  }
  const uint32_t rank = static_cast<uint32_t>(out_shape.size());
  int64_t sa[kMaxRank];
  int64_t sb[kMaxRank];
  broadcast_strides(a_shape, out_shape, sa);
  broadcast_strides(b_shape, out_shape, sb);
  const int64_t inner = out_shape[rank - 1];
  const int64_t ia = sa[rank - 1];
  const int64_t ib = sb[rank - 1];
  const uint64_t outer = numel / static_cast<uint64_t>(inner);
  int64_t index[kMaxRank] = {};
  int64_t off_a = 0;
  int64_t off_b = 0;
  T* dst = out;
  for (uint64_t o = 0; o < outer; ++o) {
    const T* pa = a + off_a;
    const T* pb = b + off_b;
    if (ia == 1 && ib == 1) {
      for (int64_t i = 0; i < inner; ++i) dst[i] = f(pa[i], pb[i]);
    } else if (ia == 1) {
      const T bv = pb[0];
      for (int64_t i = 0; i < inner; ++i) dst[i] = f(pa[i], bv);
    } else if (ib == 1) {
      const T av = pa[0];
      for (int64_t i = 0; i < inner; ++i) dst[i] = f(av, pb[i]);
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = f(pa[i * ia], pb[i * ib]);
    }
    dst += inner;
    // Advance the multi-index over the outer dims (all but the last).
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      ++index[d];
      off_a += sa[d];
      off_b += sb[d];
      if (index[d] < out_shape[d]) break;
      off_a -= sa[d] * index[d];
      off_b -= sb[d] * index[d];
      index[d] = 0;
    }
  }
}

}  // namespace portable
}  // namespace tern
