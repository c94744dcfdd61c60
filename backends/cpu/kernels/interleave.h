// Interleaving g runs of floats (internal to backends/cpu/kernels): dst[a * g + j] = src[j][a]
// for a < n, j < g. 2 and 4 runs go 4 floats at a time through vector shuffles (GCC and Clang
// vector extensions: SSE on x86-64, NEON on aarch64, scalar elsewhere); other counts scatter
// with a fixed stride. Used by the strided copy (ShuffleNet's channel shuffle of one tensor) and
// the row concat (the shuffle fused into the concat before it).
#pragma once

#include <cstdint>
#include <cstring>

#include "backends/cpu/kernels/vec4.h"

namespace tern::cpu::detail {

/// The 4 x 4 transpose of rows v0..v3 (r0 = v0[0] v1[0] v2[0] v3[0], ...), stored at d0..d3.
inline void transpose4(Vec4 v0, Vec4 v1, Vec4 v2, Vec4 v3, float* d0, float* d1, float* d2,
                       float* d3) {
  const Vec4 t0 = __builtin_shufflevector(v0, v1, 0, 4, 1, 5);  // x0 y0 x1 y1
  const Vec4 t1 = __builtin_shufflevector(v2, v3, 0, 4, 1, 5);  // z0 w0 z1 w1
  const Vec4 t2 = __builtin_shufflevector(v0, v1, 2, 6, 3, 7);  // x2 y2 x3 y3
  const Vec4 t3 = __builtin_shufflevector(v2, v3, 2, 6, 3, 7);  // z2 w2 z3 w3
  store4(d0, __builtin_shufflevector(t0, t1, 0, 1, 4, 5));
  store4(d1, __builtin_shufflevector(t0, t1, 2, 3, 6, 7));
  store4(d2, __builtin_shufflevector(t2, t3, 0, 1, 4, 5));
  store4(d3, __builtin_shufflevector(t2, t3, 2, 3, 6, 7));
}

/// dst[a * g + j] = src[j][a] for a < n, j < g (dst must not overlap any src).
inline void interleave(float* dst, const float* const* src, int64_t g, int64_t n) {
  int64_t a = 0;
  if (g == 2) {
    const float* s0 = src[0];
    const float* s1 = src[1];
    for (; a + 4 <= n; a += 4) {
      const Vec4 v0 = load4(s0 + a), v1 = load4(s1 + a);
      store4(dst + 2 * a, __builtin_shufflevector(v0, v1, 0, 4, 1, 5));
      store4(dst + 2 * a + 4, __builtin_shufflevector(v0, v1, 2, 6, 3, 7));
    }
  } else if (g == 4) {
    for (; a + 4 <= n; a += 4) {
      float* d = dst + 4 * a;
      transpose4(load4(src[0] + a), load4(src[1] + a), load4(src[2] + a), load4(src[3] + a), d,
                 d + 4, d + 8, d + 12);
    }
  }
  if (a == n) return;
  for (int64_t j = 0; j < g; ++j) {
    const float* s = src[j];
    float* d = dst + j;
    for (int64_t i = a; i < n; ++i) d[i * g] = s[i];
  }
}

/// dst[0..n) = src[0..n): an inline loop for short rows (a libc call costs more than 16 floats
/// take to copy), memcpy for long ones.
inline void copy_floats(float* dst, const float* src, int64_t n) {
  if (n > 64) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) store4(dst + i, load4(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

}  // namespace tern::cpu::detail
