// AVX2+FMA microkernels of the packed GEMM: a tile of MR rows × NP panels, each panel row two ymm
// accumulators, accumulated in registers over a K block (A broadcast, B loaded and prefetched
// 4 KiB ahead). Wide tiles are up to 6 rows × 1 panel (12 accumulators of the 16 ymm); for
// m <= 2 one tile of m rows × 2 panels. A one-panel tile with at most 8 valid columns computes
// only its first ymm per row.
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

/// A one-panel tile whose valid columns are at most 8 (N = 24, 40, ... leave such a last panel):
/// only the panel's first ymm per row, half the multiply-adds of tile_avx2<MR, 1>.
template <int MR>
TERN_AVX2_TARGET void tile_half_avx2(const TileArgs& t) {
  const __m256i mask = half_mask(t.last_cols, 0);
  const bool whole = t.last_cols == 8;
  __m256 acc[MR];
  if (t.first) {
    const __m256 bias = _mm256_loadu_ps(t.bias);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r] = bias;
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      acc[r] = whole ? _mm256_loadu_ps(t.c + r * t.ldc) : _mm256_maskload_ps(t.c + r * t.ldc, mask);
    }
  }
  const float* a = t.a;
  const float* b = t.b;
  for (int64_t k = t.kc; k > 0; --k) {
    const __m256 bv = _mm256_loadu_ps(b);
    _mm_prefetch(reinterpret_cast<const char*>(b + 16 * kPrefetchRows), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + r * t.lda), bv, acc[r]);
    }
    a += 1;
    b += 16;
  }
  if (t.last) {
    const __m256 lo = _mm256_set1_ps(t.out_min);
    const __m256 hi = _mm256_set1_ps(t.out_max);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      if (t.residual != nullptr) {
        acc[r] = _mm256_add_ps(acc[r], whole ? _mm256_loadu_ps(t.residual + r * t.ldc)
                                              : _mm256_maskload_ps(t.residual + r * t.ldc, mask));
      }
      acc[r] = _mm256_max_ps(lo, _mm256_min_ps(hi, acc[r]));  // NaN propagates
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    if (whole) {
      _mm256_storeu_ps(t.c + r * t.ldc, acc[r]);
    } else {
      _mm256_maskstore_ps(t.c + r * t.ldc, mask, acc[r]);
    }
  }
}

template <int MR, int NP>
TERN_AVX2_TARGET void tile_avx2(const TileArgs& t) {
  if constexpr (NP == 1) {
    if (t.last_cols <= 8) return tile_half_avx2<MR>(t);
  }
  const int64_t ps = t.panel_stride;
  const bool partial = t.last_cols < 16;
  const __m256i mask0 = half_mask(t.last_cols, 0);
  const __m256i mask1 = half_mask(t.last_cols, 1);
  __m256 acc[MR][NP][2];
  if (t.first) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const __m256 bias0 = _mm256_loadu_ps(t.bias + p * ps);
      const __m256 bias1 = _mm256_loadu_ps(t.bias + p * ps + 8);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        acc[r][p][0] = bias0;
        acc[r][p][1] = bias1;
      }
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        if (p == NP - 1 && partial) {
          acc[r][p][0] = _mm256_maskload_ps(cr + 16 * p, mask0);
          acc[r][p][1] = _mm256_maskload_ps(cr + 16 * p + 8, mask1);
        } else {
          acc[r][p][0] = _mm256_loadu_ps(cr + 16 * p);
          acc[r][p][1] = _mm256_loadu_ps(cr + 16 * p + 8);
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
      bv[p][0] = _mm256_loadu_ps(b + p * ps);
      bv[p][1] = _mm256_loadu_ps(b + p * ps + 8);
      _mm_prefetch(reinterpret_cast<const char*>(b + p * ps + 16 * kPrefetchRows), _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        acc[r][p][0] = _mm256_fmadd_ps(av, bv[p][0], acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(av, bv[p][1], acc[r][p][1]);
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
          if (p == NP - 1 && partial) {
            acc[r][p][0] = _mm256_add_ps(acc[r][p][0], _mm256_maskload_ps(rr + 16 * p, mask0));
            acc[r][p][1] = _mm256_add_ps(acc[r][p][1], _mm256_maskload_ps(rr + 16 * p + 8, mask1));
          } else {
            acc[r][p][0] = _mm256_add_ps(acc[r][p][0], _mm256_loadu_ps(rr + 16 * p));
            acc[r][p][1] = _mm256_add_ps(acc[r][p][1], _mm256_loadu_ps(rr + 16 * p + 8));
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
        acc[r][p][0] = _mm256_max_ps(lo, _mm256_min_ps(hi, acc[r][p][0]));
        acc[r][p][1] = _mm256_max_ps(lo, _mm256_min_ps(hi, acc[r][p][1]));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      if (p == NP - 1 && partial) {
        // vmaskmovps stores are slow on some cores: only the ragged last panel uses them.
        _mm256_maskstore_ps(cr + 16 * p, mask0, acc[r][p][0]);
        _mm256_maskstore_ps(cr + 16 * p + 8, mask1, acc[r][p][1]);
      } else {
        _mm256_storeu_ps(cr + 16 * p, acc[r][p][0]);
        _mm256_storeu_ps(cr + 16 * p + 8, acc[r][p][1]);
      }
    }
  }
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
