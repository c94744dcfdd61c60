// AVX-512F microkernels of the packed GEMM: a tile of MR rows × NP panels (16 columns each, one
// zmm per row and panel) accumulated in registers over a K block; A elements are broadcast, one
// zmm of B is loaded per panel and K row and prefetched 4 KiB ahead. Wide tiles are up to
// 14 rows × 2 panels (28 accumulators: each B vector serves 14 rows, for a B that streams from
// L3 or memory); when the packed B is under 1 MiB (it stays in L2), tiles of up to 7 rows × 3
// panels (21 accumulators: 10 loads per 21 FMAs against 16 per 28); for m <= 7 one tile of m rows
// × 4 panels. A tile may also fetch lines of a later tile's B into L2, one per K row
// (TileArgs::prefetch). Figures: backends/cpu/kernels/README.md. Compiled with
// per-function target attributes, so this file needs no special flags and the code only runs
// when dispatch saw AVX-512F.
#include "backends/cpu/kernels/gemm_microkernel.h"

#if defined(__x86_64__)

#include <immintrin.h>

// Only what dispatch checks for (AVX-512F and FMA), so the compiler emits nothing else.
#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::gemm_detail {
namespace {

/// How far ahead (in K rows = cache lines of a panel) B is prefetched. Streaming weights from
/// DRAM (small M, big N·K) needs it; it costs nothing measurable when B is cache-resident.
constexpr int64_t kPrefetchRows = 64;

template <int MR, int NP>
TERN_AVX512_TARGET void tile_avx512(const TileArgs& t) {
  const __mmask16 last_mask = static_cast<__mmask16>((1u << t.last_cols) - 1u);
  const int64_t ps = t.panel_stride;
  __m512 acc[MR][NP];
  if (t.first) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const __m512 bias = _mm512_loadu_ps(t.bias + p * ps);
#pragma GCC unroll 14
      for (int r = 0; r < MR; ++r) acc[r][p] = bias;
    }
  } else {
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      const float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
      for (int p = 0; p < NP - 1; ++p) acc[r][p] = _mm512_loadu_ps(cr + 16 * p);
      acc[r][NP - 1] = _mm512_maskz_loadu_ps(last_mask, cr + 16 * (NP - 1));
    }
  }

  const float* a = t.a;
  const int64_t lda = t.lda;
  const float* b = t.b;
  const float* next = t.prefetch;
  int64_t next_rows = t.prefetch_rows;
  for (int64_t k = t.kc; k > 0; --k) {
    if (next_rows > 0) {  // a later tile's B into L2 (TileArgs::prefetch)
      _mm_prefetch(reinterpret_cast<const char*>(next), _MM_HINT_T1);
      next += 16;
      --next_rows;
    }
    __m512 bv[NP];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      bv[p] = _mm512_loadu_ps(b + p * ps);
      // One cache line of each panel per K row: fetch the line kPrefetchRows ahead (a hint,
      // harmless past the end of the weights).
      _mm_prefetch(reinterpret_cast<const char*>(b + p * ps + 16 * kPrefetchRows), _MM_HINT_T0);
    }
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda]);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_fmadd_ps(av, bv[p], acc[r][p]);
    }
    a += 1;
    b += 16;
  }

  if (t.last) {
    if (t.residual != nullptr) {
      // The fused residual add: one read per output element, masked like C's last panel.
#pragma GCC unroll 14
      for (int r = 0; r < MR; ++r) {
        const float* rr = t.residual + r * t.ldc;
#pragma GCC unroll 4
        for (int p = 0; p < NP - 1; ++p)
          acc[r][p] = _mm512_add_ps(acc[r][p], _mm512_loadu_ps(rr + 16 * p));
        acc[r][NP - 1] =
            _mm512_add_ps(acc[r][NP - 1], _mm512_maskz_loadu_ps(last_mask, rr + 16 * (NP - 1)));
      }
    }
    // min(hi, x) / max(lo, x) return x when x is NaN, so NaN propagates. (The maskz forms with
    // an all-ones mask are the plain min/max without GCC 12's bogus -Wmaybe-uninitialized.)
    const __mmask16 all = 0xFFFF;
    const __m512 lo = _mm512_set1_ps(t.out_min);
    const __m512 hi = _mm512_set1_ps(t.out_max);
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p)
        acc[r][p] = _mm512_maskz_max_ps(all, lo, _mm512_maskz_min_ps(all, hi, acc[r][p]));
    }
  }
#pragma GCC unroll 14
  for (int r = 0; r < MR; ++r) {
    float* cr = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int p = 0; p < NP - 1; ++p) _mm512_storeu_ps(cr + 16 * p, acc[r][p]);
    _mm512_mask_storeu_ps(cr + 16 * (NP - 1), last_mask, acc[r][NP - 1]);
  }
}

/// The conv gather's copy: whole zmm, then one masked zmm (masked-off lanes neither fault nor
/// write, so nothing past n floats is touched).
TERN_AVX512_TARGET void copy_avx512(float* dst, const float* src, int64_t n) {
  for (; n >= 32; n -= 32, dst += 32, src += 32) {
    const __m512 v0 = _mm512_loadu_ps(src);
    const __m512 v1 = _mm512_loadu_ps(src + 16);
    _mm512_storeu_ps(dst, v0);
    _mm512_storeu_ps(dst + 16, v1);
  }
  if (n >= 16) {
    _mm512_storeu_ps(dst, _mm512_loadu_ps(src));
    n -= 16, dst += 16, src += 16;
  }
  if (n > 0) {
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1u);
    _mm512_mask_storeu_ps(dst, mask, _mm512_maskz_loadu_ps(mask, src));
  }
}

template <int MR, int NP>
constexpr void fill_rows(MicrokernelSet& s) {
  s.kernels[MR][NP] = &tile_avx512<MR, NP>;
  if constexpr (MR > 1) fill_rows<MR - 1, NP>(s);
}

constexpr MicrokernelSet make_set() {
  MicrokernelSet s;
  s.max_rows = 14;
  s.wide_panels = 2;
  s.small_m_max = 7;
  s.small_panels = 4;
  s.cached_rows = 7;
  s.cached_panels = 3;
  s.cached_b_bytes = int64_t{1} << 20;
  fill_rows<14, 1>(s);
  fill_rows<14, 2>(s);
  fill_rows<7, 3>(s);
  fill_rows<7, 4>(s);
  s.copy = &copy_avx512;
  return s;
}

constexpr MicrokernelSet kSet = make_set();

}  // namespace

const MicrokernelSet* avx512_microkernels() { return &kSet; }

}  // namespace tern::cpu::gemm_detail

#else  // !__x86_64__

namespace tern::cpu::gemm_detail {
const MicrokernelSet* avx512_microkernels() { return nullptr; }
}  // namespace tern::cpu::gemm_detail

#endif
