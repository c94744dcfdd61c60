// AVX2+FMA microkernels of the packed GEMM: a tile of MR rows × NP panels, each panel row two ymm
// accumulators, accumulated in registers over a K block (A broadcast, B loaded and prefetched
// 4 KiB ahead). Wide tiles are up to 6 rows × 1 panel (12 accumulators of the 16 ymm); for
// m <= 2 one tile of m rows × 2 panels. A last panel with at most 8 valid columns computes only
// its first ymm per row.
// Per-function target attributes: no special flags, runs only when dispatch saw AVX2 and FMA.
#include "backends/cpu/kernels/gemm_microkernel.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::gemm_detail {
namespace {

/// Lane masks for the last panel's two halves: lane i is on when 8*half + i < cols.
TERN_AVX2_TARGET inline __m256i half_mask(int cols, int half) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8 * half), lanes);
}

/// How far ahead (in K rows = cache lines of a panel) B is prefetched (see gemm_avx512.cpp).
constexpr int64_t kPrefetchRows = 64;

/// A tile of MR rows × NP panels whose last panel computes LV ymm vectors per row (2; or 1 when
/// it has at most 8 valid columns, N = 24, 40, ...: half its multiply-adds). Vectors holding
/// columns past last_cols are masked on every load and store of C and the residual.
template <int MR, int NP, int LV>
TERN_AVX2_TARGET void tile_vectors(const TileArgs& t) {
  const int64_t ps = t.panel_stride;
  const bool partial = t.last_cols < 8 * LV;
  const __m256i mask[2] = {half_mask(t.last_cols, 0), half_mask(t.last_cols, 1)};
  // Whether vector v of panel p is computed (constant once the loops unroll), and whether
  // panel p is loaded and stored masked.
  constexpr auto used = [](int p, int v) { return p < NP - 1 || v < LV; };
  const auto masked = [&](int p) { return p == NP - 1 && partial; };
  __m256 acc[MR][NP][2];
  if (t.first) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        if (!used(p, v)) continue;
        const __m256 bias = _mm256_loadu_ps(t.bias + p * ps + 8 * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[r][p][v] = bias;
      }
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) {
          if (!used(p, v)) continue;
          acc[r][p][v] = masked(p) ? _mm256_maskload_ps(cr + 16 * p + 8 * v, mask[v])
                                   : _mm256_loadu_ps(cr + 16 * p + 8 * v);
        }
      }
    }
  }

  const float* a = t.a;
  const int64_t lda = t.lda;
  const float* b = t.b;
  for (int64_t k = t.kc; k > 0; --k) {
    __m256 bv[NP][2];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        if (used(p, v)) bv[p][v] = _mm256_loadu_ps(b + p * ps + 8 * v);
      }
      _mm_prefetch(reinterpret_cast<const char*>(b + p * ps + 16 * kPrefetchRows), _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) {
          if (!used(p, v)) continue;
          acc[r][p][v] = _mm256_fmadd_ps(av, bv[p][v], acc[r][p][v]);
        }
      }
    }
    a += 1;
    b += 16;
  }

  if (t.last) {
    if (t.residual != nullptr) {
      // The fused residual add: one read per output element, masked like C's ragged last panel.
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const float* rr = t.residual + r * t.ldc;
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) {
            if (!used(p, v)) continue;
            acc[r][p][v] = _mm256_add_ps(
                acc[r][p][v], masked(p) ? _mm256_maskload_ps(rr + 16 * p + 8 * v, mask[v])
                                        : _mm256_loadu_ps(rr + 16 * p + 8 * v));
          }
        }
      }
    }
    // min(hi, x) / max(lo, x) return x when x is NaN, so NaN propagates.
    const __m256 lo = _mm256_set1_ps(t.out_min);
    const __m256 hi = _mm256_set1_ps(t.out_max);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) {
          if (!used(p, v)) continue;
          acc[r][p][v] = _mm256_max_ps(lo, _mm256_min_ps(hi, acc[r][p][v]));
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        if (!used(p, v)) continue;
        // vmaskmovps stores are slow on some cores: only the ragged last panel uses them.
        if (masked(p)) {
          _mm256_maskstore_ps(cr + 16 * p + 8 * v, mask[v], acc[r][p][v]);
        } else {
          _mm256_storeu_ps(cr + 16 * p + 8 * v, acc[r][p][v]);
        }
      }
    }
  }
}

template <int MR, int NP>
TERN_AVX2_TARGET void tile_avx2(const TileArgs& t) {
  if (t.last_cols <= 8) return tile_vectors<MR, NP, 1>(t);
  tile_vectors<MR, NP, 2>(t);
}

/// The conv gather's copy: whole ymm, then one masked ymm (vmaskmovps neither faults on nor
/// writes masked-off lanes, so nothing past n floats is touched).
TERN_AVX2_TARGET void copy_avx2(float* dst, const float* src, int64_t n) {
  for (; n >= 16; n -= 16, dst += 16, src += 16) {
    const __m256 v0 = _mm256_loadu_ps(src);
    const __m256 v1 = _mm256_loadu_ps(src + 8);
    _mm256_storeu_ps(dst, v0);
    _mm256_storeu_ps(dst + 8, v1);
  }
  if (n >= 8) {
    _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
    n -= 8, dst += 8, src += 8;
  }
  if (n > 0) {
    const __m256i mask = half_mask(static_cast<int>(n), 0);
    _mm256_maskstore_ps(dst, mask, _mm256_maskload_ps(src, mask));
  }
}

template <int MR, int NP>
constexpr void fill_rows(MicrokernelSet& s) {
  s.kernels[MR][NP] = &tile_avx2<MR, NP>;
  if constexpr (MR > 1) fill_rows<MR - 1, NP>(s);
}

constexpr MicrokernelSet make_set() {
  MicrokernelSet s;
  s.max_rows = 6;
  s.wide_panels = 1;
  s.small_m_max = 2;
  s.small_panels = 2;
  fill_rows<6, 1>(s);
  fill_rows<2, 2>(s);
  s.copy = &copy_avx2;
  return s;
}

constexpr MicrokernelSet kSet = make_set();

}  // namespace

const MicrokernelSet* avx2_microkernels() { return &kSet; }

}  // namespace tern::cpu::gemm_detail

#else  // !__x86_64__

namespace tern::cpu::gemm_detail {
const MicrokernelSet* avx2_microkernels() { return nullptr; }
}  // namespace tern::cpu::gemm_detail

#endif
