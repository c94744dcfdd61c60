// Blocked f32 GEMM (see gemm.h). Loop nest, outermost first:
//   K blocks of KC (C accumulates: beta applies to the first block only)
//   M blocks of MC (those rows of A stay in L2 while every sliver of B passes)
//   N slivers of NR columns (packed into a stack panel of KC x NR floats that stays in L1)
//   M tiles of MR rows (the register tile: MR x NR accumulators, vectorized over NR)
// A is read in place through its strides (one broadcast scalar per row and k step); the last
// rows of an M block run through 4-, 2- and 1-row tiles. A single row of C (m == 1, also
// n == 1 after transposition) is a matrix-vector product with loops of its own.
//
// Plain C++ that the compiler vectorizes. On x86-64 with GCC or Clang the same template is
// also compiled for AVX2+FMA and AVX-512 with wider tiles, picked at run time from the CPU's
// features (no intrinsics); elsewhere the baseline instantiation runs.
#include "runtime/kernels/portable/gemm.h"

#include <cstring>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(TERN_GEMM_NO_DISPATCH)
#define TERN_GEMM_X86_DISPATCH 1
#define TERN_ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(__GNUC__) || defined(__clang__)
#define TERN_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TERN_ALWAYS_INLINE inline
#endif

namespace tern::portable {
namespace {

// C tile (MR x nr valid of MR x NR) = alpha * acc + beta * C; C is not read when beta == 0.
template <int MR, int NR>
TERN_ALWAYS_INLINE void store_tile(const float (&acc)[MR][NR], int nr, float alpha, float beta,
                                   float* c, int64_t rs_c, int64_t cs_c) {
  if (nr == NR && cs_c == 1) {
    for (int i = 0; i < MR; ++i) {
      float* ci = c + i * rs_c;
      if (beta == 0.0f) {
        for (int j = 0; j < NR; ++j) ci[j] = alpha * acc[i][j];
      } else {
        for (int j = 0; j < NR; ++j) ci[j] = alpha * acc[i][j] + beta * ci[j];
      }
    }
    return;
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < nr; ++j) {
      float* cij = c + i * rs_c + j * cs_c;
      *cij = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *cij;
    }
  }
}

// One register tile: acc = A[MR rows, kc] * Bsliver[kc, NR], stored into the MR x nr corner
// of C. A's element (i, p) is a[i * rs_a + p * cs_a]; `b` holds kc rows of NR floats, rs_b
// floats apart.
template <int MR, int NR>
TERN_ALWAYS_INLINE void micro_kernel(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a,
                                     const float* b, int64_t rs_b, int nr, float alpha,
                                     float beta, float* c, int64_t rs_c, int64_t cs_c) {
  // The tile loops must unroll completely (-O2 alone keeps them as loops, and the
  // accumulators then live in memory instead of registers).
  float acc[MR][NR] = {};
  if (cs_a == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* bp = b + p * rs_b;
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const float av = a[i * rs_a + p];
#pragma GCC unroll 64
        for (int j = 0; j < NR; ++j) acc[i][j] += av * bp[j];
      }
    }
  } else {
    for (int64_t p = 0; p < kc; ++p) {
      const float* bp = b + p * rs_b;
      const float* ap = a + p * cs_a;
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const float av = ap[i * rs_a];
#pragma GCC unroll 64
        for (int j = 0; j < NR; ++j) acc[i][j] += av * bp[j];
      }
    }
  }
  store_tile<MR, NR>(acc, nr, alpha, beta, c, rs_c, cs_c);
}

// Packs kc x nr of op(B) (element (p, j) at b[p * rs_b + j * cs_b]) into `panel` as kc rows
// of NR floats, zero-filling columns nr..NR-1.
template <int NR>
TERN_ALWAYS_INLINE void pack_b(int64_t kc, int nr, const float* b, int64_t rs_b, int64_t cs_b,
                               float* panel) {
  if (cs_b == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      float* dst = panel + p * NR;
      std::memcpy(dst, b + p * rs_b, static_cast<size_t>(nr) * sizeof(float));
      for (int j = nr; j < NR; ++j) dst[j] = 0.0f;
    }
    return;
  }
  if (nr < NR) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int j = nr; j < NR; ++j) panel[p * NR + j] = 0.0f;
    }
  }
  // Column by column: each column of op(B) is contiguous when rs_b == 1 (B transposed).
  for (int j = 0; j < nr; ++j) {
    const float* src = b + j * cs_b;
    float* dst = panel + j;
    for (int64_t p = 0; p < kc; ++p) dst[p * NR] = src[p * rs_b];
  }
}

// C = beta * C over m x n (C = 0 when beta == 0).
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t rs_c, int64_t cs_c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float* cij = c + i * rs_c + j * cs_c;
      *cij = beta == 0.0f ? 0.0f : beta * *cij;
    }
  }
}

// C (one row, n columns) = alpha * a * op(B) + beta * C where op(B)'s rows are contiguous
// (cs_b == 1): accumulates B's rows into a chunk of CH sums, four rows per pass.
template <int CH>
TERN_ALWAYS_INLINE void gemv_rows(int64_t n, int64_t k, float alpha, const float* a,
                                  int64_t cs_a, const float* b, int64_t rs_b, float beta,
                                  float* c, int64_t cs_c) {
  alignas(64) float acc[CH];
  for (int64_t j0 = 0; j0 < n; j0 += CH) {
    const int64_t jn = n - j0 < CH ? n - j0 : CH;
    for (int64_t j = 0; j < jn; ++j) acc[j] = 0.0f;
    const float* bj = b + j0;
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
      const float a0 = a[p * cs_a], a1 = a[(p + 1) * cs_a];
      const float a2 = a[(p + 2) * cs_a], a3 = a[(p + 3) * cs_a];
      const float* b0 = bj + p * rs_b;
      const float* b1 = b0 + rs_b;
      const float* b2 = b1 + rs_b;
      const float* b3 = b2 + rs_b;
      for (int64_t j = 0; j < jn; ++j) {
        acc[j] += (a0 * b0[j] + a1 * b1[j]) + (a2 * b2[j] + a3 * b3[j]);
      }
    }
    for (; p < k; ++p) {
      const float ap = a[p * cs_a];
      const float* bp = bj + p * rs_b;
      for (int64_t j = 0; j < jn; ++j) acc[j] += ap * bp[j];
    }
    float* cj = c + j0 * cs_c;
    for (int64_t j = 0; j < jn; ++j) {
      cj[j * cs_c] = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * cj[j * cs_c];
    }
  }
}

// C (one row, n columns) = alpha * a * op(B) + beta * C where op(B)'s columns are contiguous
// (rs_b == 1): dot products over K chunks of a (copied when strided), four columns at once,
// each with L partial sums that the compiler vectorizes without reassociating.
template <int L>
TERN_ALWAYS_INLINE void gemv_dots(int64_t n, int64_t k, float alpha, const float* a,
                                  int64_t cs_a, const float* b, int64_t cs_b, float beta,
                                  float* c, int64_t cs_c) {
  constexpr int64_t kChunk = 1024;
  alignas(64) float a_buf[kChunk];
  scale_c(1, n, beta, c, 0, cs_c);
  for (int64_t p0 = 0; p0 < k; p0 += kChunk) {
    const int64_t kn = k - p0 < kChunk ? k - p0 : kChunk;
    const float* ap = a + p0 * cs_a;
    if (cs_a != 1) {
      for (int64_t p = 0; p < kn; ++p) a_buf[p] = ap[p * cs_a];
      ap = a_buf;
    }
    const int64_t k_lanes = kn - kn % L;
    int64_t j = 0;
    for (; j < n; j += 4) {
      const int cols = n - j < 4 ? static_cast<int>(n - j) : 4;
      const float* bj[4];
      for (int r = 0; r < 4; ++r) bj[r] = b + (j + (r < cols ? r : 0)) * cs_b + p0;
      float acc[4][L] = {};
      for (int64_t p = 0; p < k_lanes; p += L) {
        for (int r = 0; r < 4; ++r) {
          for (int l = 0; l < L; ++l) acc[r][l] += ap[p + l] * bj[r][p + l];
        }
      }
      for (int r = 0; r < cols; ++r) {
        float sum = 0.0f;
        for (int l = 0; l < L; ++l) sum += acc[r][l];
        for (int64_t p = k_lanes; p < kn; ++p) sum += ap[p] * bj[r][p];
        c[(j + r) * cs_c] += alpha * sum;
      }
    }
  }
}

// The blocked loop nest for one tile shape. m, n, k > 0; n >= NR or m <= n (see the caller).
template <int MR, int NR, int64_t KC, int64_t MC>
TERN_ALWAYS_INLINE void gemm_blocked(int64_t m, int64_t n, int64_t k, float alpha,
                                     const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                                     int64_t rs_b, int64_t cs_b, float beta, float* c,
                                     int64_t rs_c, int64_t cs_c) {
  static_assert(MC % MR == 0, "M blocks hold whole tiles");
  if (m == 1 && rs_b == 1) {
    gemv_dots<NR>(n, k, alpha, a, cs_a, b, cs_b, beta, c, cs_c);
    return;
  }
  if (m == 1 && cs_b == 1) {
    gemv_rows<256>(n, k, alpha, a, cs_a, b, rs_b, beta, c, cs_c);
    return;
  }
  alignas(64) float panel[KC * NR];
  for (int64_t p0 = 0; p0 < k; p0 += KC) {
    const int64_t kc = k - p0 < KC ? k - p0 : KC;
    const float beta_k = p0 == 0 ? beta : 1.0f;
    for (int64_t i0 = 0; i0 < m; i0 += MC) {
      const int64_t mc = m - i0 < MC ? m - i0 : MC;
      const float* a_block = a + i0 * rs_a + p0 * cs_a;
      for (int64_t j0 = 0; j0 < n; j0 += NR) {
        const int nr = static_cast<int>(n - j0 < NR ? n - j0 : NR);
        const float* b_sliver = b + p0 * rs_b + j0 * cs_b;
        const float* bs = panel;
        int64_t rs_bs = NR;
        if (cs_b == 1 && nr == NR && mc <= MR) {
          // Used by one tile only: read B in place rather than pay for a copy.
          bs = b_sliver;
          rs_bs = rs_b;
        } else {
          pack_b<NR>(kc, nr, b_sliver, rs_b, cs_b, panel);
        }
        float* c_sliver = c + i0 * rs_c + j0 * cs_c;
        int64_t i = 0;
        for (; i + MR <= mc; i += MR) {
          micro_kernel<MR, NR>(kc, a_block + i * rs_a, rs_a, cs_a, bs, rs_bs, nr, alpha, beta_k,
                               c_sliver + i * rs_c, rs_c, cs_c);
        }
        // The last mc % MR rows in tiles of 4, 2 and 1 rows (MR > 4 or MR == 4).
        if (MR > 4 && i + 4 <= mc) {
          micro_kernel<4, NR>(kc, a_block + i * rs_a, rs_a, cs_a, bs, rs_bs, nr, alpha, beta_k,
                              c_sliver + i * rs_c, rs_c, cs_c);
          i += 4;
        }
        if (i + 2 <= mc) {
          micro_kernel<2, NR>(kc, a_block + i * rs_a, rs_a, cs_a, bs, rs_bs, nr, alpha, beta_k,
                              c_sliver + i * rs_c, rs_c, cs_c);
          i += 2;
        }
        if (i < mc) {
          micro_kernel<1, NR>(kc, a_block + i * rs_a, rs_a, cs_a, bs, rs_bs, nr, alpha, beta_k,
                              c_sliver + i * rs_c, rs_c, cs_c);
        }
      }
    }
  }
}

// Tile shapes: the stack holds the KC x NR B panel (16 KiB baseline, 32 KiB AVX2/AVX-512).
void gemm_baseline(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t rs_a,
                   int64_t cs_a, const float* b, int64_t rs_b, int64_t cs_b, float beta,
                   float* c, int64_t rs_c, int64_t cs_c) {
  gemm_blocked<kGemmMR, kGemmNR, 256, 192>(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta,
                                          c, rs_c, cs_c);
}

#if defined(TERN_GEMM_X86_DISPATCH)
__attribute__((target("avx2,fma"))) void gemm_avx2(int64_t m, int64_t n, int64_t k,
                                                   float alpha, const float* a, int64_t rs_a,
                                                   int64_t cs_a, const float* b, int64_t rs_b,
                                                   int64_t cs_b, float beta, float* c,
                                                   int64_t rs_c, int64_t cs_c) {
  gemm_blocked<6, 32, 256, 192>(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta, c, rs_c,
                               cs_c);
}

__attribute__((target("avx512f,fma"))) void gemm_avx512(int64_t m, int64_t n, int64_t k,
                                                        float alpha, const float* a,
                                                        int64_t rs_a, int64_t cs_a,
                                                        const float* b, int64_t rs_b,
                                                        int64_t cs_b, float beta, float* c,
                                                        int64_t rs_c, int64_t cs_c) {
  gemm_blocked<8, 32, 256, 192>(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta, c, rs_c,
                               cs_c);
}
#endif

GemmVariant g_selected = GemmVariant::Auto;

bool cpu_has(GemmVariant variant) {
  switch (variant) {
    case GemmVariant::Auto:
    case GemmVariant::Baseline:
      return true;
#if defined(TERN_GEMM_X86_DISPATCH)
    case GemmVariant::Avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmVariant::Avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#endif
    default:
      return false;
  }
}

}  // namespace

bool gemm_select_variant(GemmVariant variant) {
  if (!cpu_has(variant)) return false;
  g_selected = variant;
  return true;
}

void gemm_f32_strided(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t rs_a, int64_t cs_a, const float* b, int64_t rs_b, int64_t cs_b,
                      float beta, float* c, int64_t rs_c, int64_t cs_c) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    scale_c(m, n, beta, c, rs_c, cs_c);
    return;
  }
  // A narrow C (fewer columns than a baseline sliver) computes as C^T = op(B)^T op(A)^T, so
  // that the wide side runs along the vectorized dimension.
  if (n < kGemmNR && m > n) {
    gemm_f32_strided(n, m, k, alpha, b, cs_b, rs_b, a, cs_a, rs_a, beta, c, cs_c, rs_c);
    return;
  }
#if defined(TERN_GEMM_X86_DISPATCH)
  const GemmVariant selected = g_selected;
  if (selected == GemmVariant::Avx512 ||
      (selected == GemmVariant::Auto && cpu_has(GemmVariant::Avx512))) {
    gemm_avx512(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta, c, rs_c, cs_c);
    return;
  }
  if (selected == GemmVariant::Avx2 ||
      (selected == GemmVariant::Auto && cpu_has(GemmVariant::Avx2))) {
    gemm_avx2(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta, c, rs_c, cs_c);
    return;
  }
#endif
  gemm_baseline(m, n, k, alpha, a, rs_a, cs_a, b, rs_b, cs_b, beta, c, rs_c, cs_c);
}

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc) {
  gemm_f32_strided(m, n, k, alpha, a, trans_a ? 1 : lda, trans_a ? lda : 1, b,
                   trans_b ? 1 : ldb, trans_b ? ldb : 1, beta, c, ldc, 1);
}

}  // namespace tern::portable
