// NCHW <-> NHWC conversion at the edges of a cpu delegate (internal to the cpu backend).
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// dst[n][p][c] = src[n][c][p] for p < hw, split over `pool` (null: the caller's thread).
/// `src` and `dst` do not overlap. Never allocates.
void nchw_to_nhwc(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw,
                  pthreadpool_t pool);

/// dst[n][c][p] = src[n][p][c], split over `pool` (null: the caller's thread). `src` and `dst`
/// do not overlap. Never allocates.
void nhwc_to_nchw(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw,
                  pthreadpool_t pool);

}  // namespace tern::cpu
