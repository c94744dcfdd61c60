// Portable microkernels of the packed GEMM (any CPU, GCC or Clang): a tile of MR <= 4 rows × one
// 16-column panel held in 4-float vectors of the compilers' generic vector extension, which
// become NEON registers on aarch64 and SSE registers on x86-64 (16 accumulators + 4 of B).
// The fallback when neither AVX-512F nor AVX2+FMA is available.
#include <cstring>

#include "backends/cpu/kernels/gemm_microkernel.h"

namespace tern::cpu::gemm_detail {
namespace {

typedef float Vec4 __attribute__((vector_size(16)));

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <int MR>
void tile_portable(const TileArgs& t) {
  const int cols = t.last_cols;  // one panel per tile: it is the tile's last panel
  Vec4 acc[MR][4];
  if (t.first) {
    for (int q = 0; q < 4; ++q) {
      const Vec4 bias = load4(t.bias + 4 * q);
      for (int r = 0; r < MR; ++r) acc[r][q] = bias;
    }
  } else {
    for (int r = 0; r < MR; ++r) {
      float row[16] = {};
      std::memcpy(row, t.c + r * t.ldc, sizeof(float) * static_cast<size_t>(cols));
      for (int q = 0; q < 4; ++q) acc[r][q] = load4(row + 4 * q);
    }
  }
  const float* a = t.a;
  const float* b = t.b;
  for (int64_t k = 0; k < t.kc; ++k) {
    Vec4 bv[4];
    for (int q = 0; q < 4; ++q) bv[q] = load4(b + 4 * q);
    for (int r = 0; r < MR; ++r) {
      const float av = a[r * t.lda];
      for (int q = 0; q < 4; ++q) acc[r][q] += bv[q] * av;
    }
    a += 1;
    b += 16;
  }
  for (int r = 0; r < MR; ++r) {
    float row[16];
    std::memcpy(row, acc[r], sizeof(row));
    if (t.last && t.residual != nullptr) {
      // The fused residual add: only the row's valid columns are read.
      float res[16] = {};
      std::memcpy(res, t.residual + r * t.ldc, sizeof(float) * static_cast<size_t>(cols));
      for (int q = 0; q < 16; ++q) row[q] += res[q];
    }
    if (t.last) {
      // Comparisons are false for NaN, so NaN propagates.
      for (float& v : row) {
        v = v > t.out_max ? t.out_max : v;
        v = v < t.out_min ? t.out_min : v;
      }
    }
    std::memcpy(t.c + r * t.ldc, row, sizeof(float) * static_cast<size_t>(cols));
  }
}

/// The conv gather's copy (memcpy: the portable build has no wider vectors to offer).
void copy_portable(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
}

constexpr MicrokernelSet make_set() {
  MicrokernelSet s;
  s.max_rows = 4;
  s.wide_panels = 1;
  s.small_m_max = 0;
  s.small_panels = 1;
  s.kernels[1][1] = &tile_portable<1>;
  s.kernels[2][1] = &tile_portable<2>;
  s.kernels[3][1] = &tile_portable<3>;
  s.kernels[4][1] = &tile_portable<4>;
  s.copy = &copy_portable;
  return s;
}

constexpr MicrokernelSet kSet = make_set();

}  // namespace

const MicrokernelSet* scalar_microkernels() { return &kSet; }

}  // namespace tern::cpu::gemm_detail
