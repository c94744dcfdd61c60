// Portable transforms of the Winograd convolutions (F(4x4, 3x3): winograd_f43.h on Vec4;
// any CPU, GCC or Clang). F(2x2, 3x3): 4
// channels per vector of the compilers' generic vector extension (NEON on aarch64, SSE on
// x86-64); tails element by element, so nothing past kc (oc) floats of x, y or the residual is
// touched. The fallback when neither AVX-512F nor AVX2+FMA is available.
#include <cstring>

#include "backends/cpu/kernels/vec4.h"
#include "backends/cpu/kernels/winograd_f43.h"
#include "backends/cpu/kernels/winograd_transform.h"

namespace tern::cpu::winograd_detail {
namespace {

using detail::load4;
using detail::store4;
using detail::Vec4;

/// The first n (< 4) lanes from p, zeros after.
inline Vec4 load_partial(const float* p, int64_t n) {
  float lanes[4] = {};
  std::memcpy(lanes, p, sizeof(float) * static_cast<size_t>(n));
  return load4(lanes);
}

/// V = Bᵀ d B of 4 lanes, stored to the 16 positions.
inline void transform_input(const Vec4 (&d)[16], float* v, int64_t plane) {
  Vec4 t[16];  // Bᵀ d: combinations of rows, per column j
  for (int j = 0; j < 4; ++j) {
    t[0 + j] = d[0 + j] - d[8 + j];
    t[4 + j] = d[4 + j] + d[8 + j];
    t[8 + j] = d[8 + j] - d[4 + j];
    t[12 + j] = d[4 + j] - d[12 + j];
  }
  for (int i = 0; i < 4; ++i) {  // (Bᵀ d) B: combinations of columns, per row i
    const Vec4* r = t + 4 * i;
    store4(v + (4 * i + 0) * plane, r[0] - r[2]);
    store4(v + (4 * i + 1) * plane, r[1] + r[2]);
    store4(v + (4 * i + 2) * plane, r[2] - r[1]);
    store4(v + (4 * i + 3) * plane, r[1] - r[3]);
  }
}

void input_tile_portable(const float* const src[16], int64_t kc, float* v, int64_t plane) {
  for (int64_t c = 0; c < kc; c += 4) {
    Vec4 d[16];
    if (kc - c >= 4) {
      for (int i = 0; i < 16; ++i) d[i] = load4(src[i] + c);
    } else {
      for (int i = 0; i < 16; ++i) d[i] = load_partial(src[i] + c, kc - c);
    }
    transform_input(d, v + c, plane);
  }
}

void output_tile_portable(const float* m, int64_t plane, int64_t oc, float* const dst[4],
                          const float* const residual[4], float out_min, float out_max) {
  for (int64_t c = 0; c < oc; c += 4) {
    const int64_t n = oc - c < 4 ? oc - c : 4;
    // Aᵀ M: s0 = M0 + M1 + M2, s1 = M1 - M2 - M3 (rows of M), per column b.
    Vec4 s0[4], s1[4];
    for (int b = 0; b < 4; ++b) {
      const Vec4 m0 = load4(m + (0 + b) * plane + c);
      const Vec4 m1 = load4(m + (4 + b) * plane + c);
      const Vec4 m2 = load4(m + (8 + b) * plane + c);
      const Vec4 m3 = load4(m + (12 + b) * plane + c);
      s0[b] = m0 + m1 + m2;
      s1[b] = m1 - m2 - m3;
    }
    Vec4 y[4];  // (Aᵀ M) A, q = 2·row + column
    y[0] = s0[0] + s0[1] + s0[2];
    y[1] = s0[1] - s0[2] - s0[3];
    y[2] = s1[0] + s1[1] + s1[2];
    y[3] = s1[1] - s1[2] - s1[3];
    for (int q = 0; q < 4; ++q) {
      if (dst[q] == nullptr) continue;
      if (residual != nullptr)
        y[q] += n == 4 ? load4(residual[q] + c) : load_partial(residual[q] + c, n);
      float lanes[4];
      std::memcpy(lanes, &y[q], sizeof(lanes));
      for (float& v : lanes) {  // comparisons are false for NaN, so NaN propagates
        v = v > out_max ? out_max : v;
        v = v < out_min ? out_min : v;
      }
      std::memcpy(dst[q] + c, lanes, sizeof(float) * static_cast<size_t>(n));
    }
  }
}

void input_tile_f43_portable(const float* const* src, int64_t kc, float* v, int64_t plane) {
  f43::input_tile<Vec4>(src, kc, v, plane);
}

void output_tile_f43_portable(const float* m, int64_t plane, int64_t oc, float* const* dst,
                              const float* const* residual, float out_min, float out_max) {
  f43::output_tile<Vec4>(m, plane, oc, dst, residual, out_min, out_max);
}

constexpr TransformSet kSet = {&input_tile_portable, &output_tile_portable,
                               &input_tile_f43_portable, &output_tile_f43_portable};

}  // namespace

const TransformSet* scalar_transforms() { return &kSet; }

}  // namespace tern::cpu::winograd_detail
