// NEON microkernels of the packed GEMM (aarch64): a tile of MR rows × NP panels, each panel row
// four 4-float accumulators, accumulated with fused multiply-adds over a K block (one A element
// per row broadcast, the panel's 16 B floats loaded once per K row). Wide tiles are up to 5 rows
// × 1 panel (20 accumulators + 4 of B + 5 of A of the 32 vector registers: 6 rows spill); for
// m <= 2 one tile of m rows × 2 panels. The last panel of C (and of the residual) is read and
// written through a 16-float buffer, so nothing past its last_cols columns is touched.
// On aarch64 these take the portable slot of the dispatch (GemmIsa::Scalar: NEON is part of the
// base ISA, so there is nothing to detect); elsewhere the file compiles to a null-returning stub.
#include "backends/cpu/kernels/gemm_microkernel.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace tern::cpu::gemm_detail {
namespace {

/// Loads the first n (1..16) floats of a row into four vectors, zeros past n.
inline void load_row(const float* p, int n, float32x4_t v[4]) {
  if (n == 16) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) v[q] = vld1q_f32(p + 4 * q);
    return;
  }
  float row[16] = {};
  std::memcpy(row, p, sizeof(float) * static_cast<size_t>(n));
  for (int q = 0; q < 4; ++q) v[q] = vld1q_f32(row + 4 * q);
}

/// Stores the first n (1..16) floats of four vectors, nothing past them.
inline void store_row(float* p, int n, const float32x4_t v[4]) {
  if (n == 16) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) vst1q_f32(p + 4 * q, v[q]);
    return;
  }
  float row[16];
  for (int q = 0; q < 4; ++q) vst1q_f32(row + 4 * q, v[q]);
  std::memcpy(p, row, sizeof(float) * static_cast<size_t>(n));
}

template <int MR, int NP>
void tile_neon(const TileArgs& t) {
  const int64_t ps = t.panel_stride;
  float32x4_t acc[MR][NP][4];
  if (t.first) {
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 8
      for (int q = 0; q < 4; ++q) {
        const float32x4_t bias = vld1q_f32(t.bias + p * ps + 4 * q);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][p][q] = bias;
      }
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        load_row(t.c + r * t.ldc + 16 * p, p == NP - 1 ? t.last_cols : 16, acc[r][p]);
      }
    }
  }

  const float* a = t.a;
  const int64_t lda = t.lda;
  const float* b = t.b;
  for (int64_t k = t.kc; k > 0; --k) {
    float32x4_t bv[NP][4];
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 8
      for (int q = 0; q < 4; ++q) bv[p][q] = vld1q_f32(b + p * ps + 4 * q);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float av = a[r * lda];
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 8
        for (int q = 0; q < 4; ++q) acc[r][p][q] = vfmaq_n_f32(acc[r][p][q], bv[p][q], av);
      }
    }
    a += 1;
    b += 16;
  }

  const float32x4_t lo = vdupq_n_f32(t.out_min);
  const float32x4_t hi = vdupq_n_f32(t.out_max);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      const int n = p == NP - 1 ? t.last_cols : 16;
      float32x4_t* v = acc[r][p];
      if (t.last) {
        if (t.residual != nullptr) {
          float32x4_t res[4];
          load_row(t.residual + r * t.ldc + 16 * p, n, res);
#pragma GCC unroll 8
          for (int q = 0; q < 4; ++q) v[q] = vaddq_f32(v[q], res[q]);
        }
// Select the bound only where the comparison holds: false for NaN, so NaN propagates.
#pragma GCC unroll 8
        for (int q = 0; q < 4; ++q) {
          v[q] = vbslq_f32(vcgtq_f32(v[q], hi), hi, v[q]);
          v[q] = vbslq_f32(vcltq_f32(v[q], lo), lo, v[q]);
        }
      }
      store_row(t.c + r * t.ldc + 16 * p, n, v);
    }
  }
}

/// The conv gather's copy.
void copy_neon(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
}

constexpr MicrokernelSet make_set() {
  MicrokernelSet s;
  s.max_rows = 5;
  s.wide_panels = 1;
  s.small_m_max = 2;
  s.small_panels = 2;
  s.kernels[1][1] = &tile_neon<1, 1>;
  s.kernels[2][1] = &tile_neon<2, 1>;
  s.kernels[3][1] = &tile_neon<3, 1>;
  s.kernels[4][1] = &tile_neon<4, 1>;
  s.kernels[5][1] = &tile_neon<5, 1>;
  s.kernels[1][2] = &tile_neon<1, 2>;
  s.kernels[2][2] = &tile_neon<2, 2>;
  s.copy = &copy_neon;
  return s;
}

constexpr MicrokernelSet kSet = make_set();

}  // namespace

const MicrokernelSet* neon_microkernels() { return &kSet; }

}  // namespace tern::cpu::gemm_detail

#else

namespace tern::cpu::gemm_detail {
const MicrokernelSet* neon_microkernels() { return nullptr; }
}  // namespace tern::cpu::gemm_detail

#endif
