// Internal to the Winograd convolution: the per-tile transforms of F(4x4, 3x3), written once
// over a GCC/Clang vector type V (16, 8 or 4 floats) and instantiated by each ISA's file inside
// its target-attributed entry points (winograd_transform_avx512.cpp, _avx2.cpp, _scalar.cpp),
// where the always-inline bodies compile to that ISA's registers.
//
// Interpolation points 0, 1, -1, 1/2, -2 and ∞ (not Lavin & Gray's 0, ±1, ±2): every entry of
// Bᵀ and Aᵀ is a small power of two times 1, 3 or 5, and the rounding error is 2-3x smaller
// (measured in f32 against float64 over random layers of 64 and 512 channels: max relative
// error 2.7e-6 / 5.8e-6 against 1.0e-5 / 2.6e-5 with ±2). The matrices (checked exactly in
// rationals: Aᵀ[(G g) ⊙ (Bᵀ d)] is the 4-output correlation of the 6 inputs with the 3 taps):
//
//   Bᵀ = [ 1  -3/2   -2   3/2    1  0 ]    G = [    1      0      0 ]   Aᵀ = [ 1  1  1   1    1  0 ]
//        [ 0   -1   1/2   5/2    1  0 ]        [  1/3    1/3    1/3 ]        [ 0  1 -1  1/2  -2  0 ]
//        [ 0    1  -5/2   1/2    1  0 ]        [ -1/3    1/3   -1/3 ]        [ 0  1  1  1/4   4  0 ]
//        [ 0   -2    -1     2    1  0 ]        [-16/15 -8/15  -4/15 ]        [ 0  1 -1  1/8  -8  1 ]
//        [ 0  1/2    -1  -1/2    1  0 ]        [ 1/15  -2/15   4/15 ]
//        [ 0    1  -3/2    -2  3/2  1 ]        [    0      0      1 ]
//
// Aᵀ's column 1 is all ones, so M[7] (a = b = 1) enters every output with weight +1: the bias
// sits in matrix 7's bias slots (pack_winograd_weight).
#pragma once

#include <cstdint>
#include <cstring>

namespace tern::cpu::winograd_detail::f43 {

#define TERN_F43_INLINE __attribute__((always_inline)) inline

/// y[0..5 step ys] = Bᵀ x for x[0..5 step xs] (one column or one row of the tile).
template <typename V>
TERN_F43_INLINE void input_1d(const V* x, int xs, V* y, int ys) {
  const V x0 = x[0], x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs], x4 = x[4 * xs], x5 = x[5 * xs];
  const V q = x3 - x1, p = x4 - x2;
  const V s = x4 + 1.5f * x3 - x2, t = 1.5f * x2 + x3 - x1;
  y[0] = (x0 - x2) + p + 1.5f * q;
  y[ys] = s + t;
  y[2 * ys] = s - t;
  y[3 * ys] = p + 2.0f * q;
  y[4 * ys] = p - 0.5f * q;
  y[5 * ys] = x5 - q + 1.5f * p - x3;
}

/// y[0..3 step ys] = Aᵀ x for x[0..5 step xs].
template <typename V>
TERN_F43_INLINE void output_1d(const V* x, int xs, V* y, int ys) {
  const V x0 = x[0], x1 = x[xs], x2 = x[2 * xs], x3 = x[3 * xs], x4 = x[4 * xs], x5 = x[5 * xs];
  const V a = x1 + x2, b = x1 - x2;
  y[0] = x0 + a + x3 + x4;
  y[ys] = b + 0.5f * x3 - 2.0f * x4;
  y[2 * ys] = a + 0.25f * x3 + 4.0f * x4;
  y[3 * ys] = b + 0.125f * x3 - 8.0f * x4 + x5;
}

// Loads write through a reference: a vector returned by value from a function compiled without
// the ISA would change the ABI (GCC's -Wpsabi), even though every call is inlined.
template <typename V>
TERN_F43_INLINE void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof(V));
}

/// The first n (< lanes) floats at p, zeros after: reads exactly n floats.
template <typename V>
TERN_F43_INLINE void load_partial(V& v, const float* p, int64_t n) {
  float lanes[sizeof(V) / sizeof(float)] = {};
  std::memcpy(lanes, p, sizeof(float) * static_cast<size_t>(n));
  std::memcpy(&v, lanes, sizeof(V));
}

/// V = Bᵀ d B of one 6x6 input tile for channels [0, kc): src[6i + j] is tile pixel (row i,
/// column j) at its first channel; reads exactly kc floats from each, writes whole vectors at
/// v + (6a + b) * plane (lanes past kc zero).
template <typename V>
TERN_F43_INLINE void input_tile(const float* const* src, int64_t kc, float* v, int64_t plane) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  for (int64_t c = 0; c < kc; c += kLanes) {
    V d[36];
    if (kc - c >= kLanes) {
      for (int i = 0; i < 36; ++i) load(d[i], src[i] + c);
    } else {
      for (int i = 0; i < 36; ++i) load_partial(d[i], src[i] + c, kc - c);
    }
    V t[36];
    for (int j = 0; j < 6; ++j) input_1d(d + j, 6, t + j, 6);  // Bᵀ d, column by column
    V r[36];
    for (int a = 0; a < 6; ++a) input_1d(t + 6 * a, 1, r + 6 * a, 1);  // (Bᵀ d) B, row by row
    for (int xi = 0; xi < 36; ++xi) std::memcpy(v + xi * plane + c, &r[xi], sizeof(V));
  }
}

/// The 4x4 outputs of one tile for oc channels: Y = Aᵀ M A with M[6a + b] at m + (6a + b) *
/// plane (readable up to oc rounded up to the lanes), plus residual[q] when `residual` is not
/// null, clamped to [out_min, out_max] (NaN propagates), stored to dst[q] for q = 4·row +
/// column; a null dst[q] (outside y) is skipped. Reads and writes exactly oc floats at each.
template <typename V>
TERN_F43_INLINE void output_tile(const float* m, int64_t plane, int64_t oc, float* const* dst,
                                 const float* const* residual, float out_min, float out_max) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  const V lo = V{} + out_min, hi = V{} + out_max;
  for (int64_t c = 0; c < oc; c += kLanes) {
    const int64_t n = oc - c < kLanes ? oc - c : kLanes;
    V x[36];
    for (int xi = 0; xi < 36; ++xi) load(x[xi], m + xi * plane + c);
    V s[24];
    for (int b = 0; b < 6; ++b) output_1d(x + b, 6, s + b, 6);  // Aᵀ M: rows 0..3, column b
    V y[16];
    for (int r = 0; r < 4; ++r) output_1d(s + 6 * r, 1, y + 4 * r, 1);  // (Aᵀ M) A
    for (int q = 0; q < 16; ++q) {
      if (dst[q] == nullptr) continue;
      V out = y[q];
      if (residual != nullptr) {
        V r;
        if (n == kLanes) {
          load(r, residual[q] + c);
        } else {
          load_partial(r, residual[q] + c, n);
        }
        out += r;
      }
      out = out > hi ? hi : out;  // comparisons are false for NaN, so NaN propagates
      out = out < lo ? lo : out;
      std::memcpy(dst[q] + c, &out, sizeof(float) * static_cast<size_t>(n));
    }
  }
}

#undef TERN_F43_INLINE

}  // namespace tern::cpu::winograd_detail::f43
