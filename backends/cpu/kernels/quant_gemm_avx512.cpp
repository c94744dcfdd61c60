// AVX-512F kernel of the fused quantized GEMM (quant_gemm.h): a tile of MR rows of A x NR
// weight rows, one zmm accumulator each, over all of K. NF4: the 64-byte chunk of a weight row
// (128 codes) is one load; vector j of it is (words >> 4j) looked up by vpermps (which reads
// only the low 4 bits of each index) in the 16-entry codebook. FP8: 16 sign-extended bytes
// shifted and masked into f32 bits, times scale · 2^bias.
// Fast path (quant_fast_path_ok, fast_rows): the row is walked in runs sharing one scale; NF4
// permutes from the codebook pre-multiplied by the block's absmax (one vmulps per block and
// row, no per-weight multiply), FP8 multiplies by the run's broadcast factor; GEMV tiles are 8
// weight rows sharing each activation load. Exact path (tile): per-vector scale lookups, an
// exact scalar fill for vectors spanning two scale groups, masked loads and FMA at a row's
// tail. Compiled with per-function target attributes; runs only when dispatch saw AVX-512F.
// GCC 12's AVX-512 intrinsics (shifts, reductions) pass an _mm512_undefined_*() source that
// its own -Wuninitialized flags once inlined; nothing here reads undefined lanes.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "backends/cpu/kernels/quant_gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include "runtime/kernels/util/quant_formats.h"

#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::quant_detail {
namespace {

enum class Fmt { Nf4, E4m3, E5m2 };

/// How far ahead (bytes) each weight row's codes are prefetched (exact path; the fast path
/// prefetches the next tile's rows).
constexpr uint64_t kPrefetchBytes = 1024;

template <Fmt F>
TERN_AVX512_TARGET inline __m512 decode(const uint8_t* row, uint64_t k0, __m512i words, int v,
                                        __m512 codebook) {
  if constexpr (F == Fmt::Nf4) {
    (void)row;
    (void)k0;
    const __m512i idx = _mm512_srli_epi32(words, static_cast<unsigned>(4 * v));
    return _mm512_permutexvar_ps(idx, codebook);
  } else {
    (void)words;
    (void)v;
    (void)codebook;
    const __m512i sx =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k0)));
    const int shift = F == Fmt::E4m3 ? kE4m3Shift : kE5m2Shift;
    const int mask = static_cast<int>(F == Fmt::E4m3 ? kE4m3Mask : kE5m2Mask);
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_slli_epi32(sx, shift), _mm512_set1_epi32(mask)));
  }
}

template <Fmt F, int MR, int NR>
TERN_AVX512_TARGET void tile(const QuantGemmProblem& p, int64_t n, int64_t r0) {
  const QuantWeightView& w = p.w;
  const uint64_t k = w.desc.cols;
  const uint8_t* rows[NR];
  uint64_t stride[NR];  // NF4: bytes from one chunk of the row to the next
  ScaleCursor cur[NR];
  #pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) {
    const uint64_t row = static_cast<uint64_t>(n + j);
    rows[j] = w.codes + (F == Fmt::Nf4 ? nf4_row_offset(w.layout, row) : row * w.layout.row_bytes);
    stride[j] = F == Fmt::Nf4 ? nf4_chunk_stride(w.desc, w.layout, row) : 0;
  }
  const float* a[MR];
  #pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m512 acc[MR][NR];
  #pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const __m512 codebook = _mm512_loadu_ps(quant::kNf4Code);
  constexpr uint64_t kChunk = F == Fmt::Nf4 ? kNf4ChunkElems : 64;
  constexpr int kVectors = static_cast<int>(kChunk / 16);
  alignas(64) float exact[16];
  for (uint64_t c0 = 0; c0 < k; c0 += kChunk) {
    // A whole chunk whose every vector has one scale per row: a branch-free loop.
    if (c0 + kChunk <= k) {
      float s[NR][kVectors];
      bool fast = true;
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          fast &= cur[j].vector(w, static_cast<uint64_t>(n + j), c0 + 16 * static_cast<uint64_t>(v),
                                &s[j][v]);
        }
      }
      if (fast) {
        __m512i words[NR];
#pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) {
          const uint8_t* chunk = rows[j] + (F == Fmt::Nf4 ? c0 / kChunk * stride[j] : c0);
          words[j] = F == Fmt::Nf4 ? _mm512_loadu_si512(chunk) : _mm512_setzero_si512();
          _mm_prefetch(reinterpret_cast<const char*>(chunk + kPrefetchBytes), _MM_HINT_T0);
        }
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          const uint64_t k0 = c0 + 16 * static_cast<uint64_t>(v);
          __m512 wv[NR];
#pragma GCC unroll 4
          for (int j = 0; j < NR; ++j) {
            wv[j] = _mm512_mul_ps(decode<F>(rows[j], k0, words[j], v, codebook),
                                  _mm512_set1_ps(s[j][v]));
          }
#pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            const __m512 av = _mm512_loadu_ps(a[r] + k0);
#pragma GCC unroll 4
            for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], av, acc[r][j]);
          }
        }
        continue;
      }
    }
    __m512i words[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      const uint8_t* chunk = rows[j] + (F == Fmt::Nf4 ? c0 / kChunk * stride[j] : c0);
      words[j] = F == Fmt::Nf4 ? _mm512_loadu_si512(chunk) : _mm512_setzero_si512();
      _mm_prefetch(reinterpret_cast<const char*>(chunk + kPrefetchBytes), _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) {
      const uint64_t k0 = c0 + 16 * static_cast<uint64_t>(v);
      if (k0 >= k) break;
      const bool tail = k0 + 16 > k;
      const __mmask16 mask =
          tail ? static_cast<__mmask16>((1u << (k - k0)) - 1u) : static_cast<__mmask16>(0xFFFF);
      __m512 wv[NR];
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        float s;
        if (cur[j].vector(w, static_cast<uint64_t>(n + j), k0, &s)) {
          wv[j] = _mm512_mul_ps(decode<F>(rows[j], k0, words[j], v, codebook), _mm512_set1_ps(s));
        } else {
          quant_fill16(w, static_cast<uint64_t>(n + j), k0, exact);
          wv[j] = _mm512_load_ps(exact);
        }
      }
      if (!tail) {
        #pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const __m512 av = _mm512_loadu_ps(a[r] + k0);
          #pragma GCC unroll 4
          for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], av, acc[r][j]);
        }
      } else {
        #pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const __m512 av = _mm512_maskz_loadu_ps(mask, a[r] + k0);
          #pragma GCC unroll 4
          for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_mask3_fmadd_ps(wv[j], av, acc[r][j], mask);
        }
      }
    }
  }
  #pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, _mm512_reduce_add_ps(acc[r][j]));
    }
  }
}

template <Fmt F, int MR>
TERN_AVX512_TARGET void tile_nr(const QuantGemmProblem& p, int64_t n, int64_t nr, int64_t r0) {
  switch (nr) {
    case 4:
      return tile<F, MR, 4>(p, n, r0);
    case 3:
      return tile<F, MR, 3>(p, n, r0);
    case 2:
      return tile<F, MR, 2>(p, n, r0);
    default:
      return tile<F, MR, 1>(p, n, r0);
  }
}

template <Fmt F>
TERN_AVX512_TARGET void rows_fmt(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; n += 4) {
    const int64_t nr = n1 - n < 4 ? n1 - n : 4;
    // The NR weight rows stay in L1 while every block of A rows passes.
    for (int64_t r0 = 0; r0 < p.m; r0 += 4) {
      switch (p.m - r0 < 4 ? p.m - r0 : 4) {
        case 4:
          tile_nr<F, 4>(p, n, nr, r0);
          break;
        case 3:
          tile_nr<F, 3>(p, n, nr, r0);
          break;
        case 2:
          tile_nr<F, 2>(p, n, nr, r0);
          break;
        default:
          tile_nr<F, 1>(p, n, nr, r0);
          break;
      }
    }
  }
}

// ---- Fast path (quant_fast_path_ok): runs of columns sharing one scale, no per-vector checks.

/// Writes the MR x NR tile's sums (+ bias, clamped) to C.
template <int MR, int NR>
TERN_AVX512_TARGET inline void store_tile(const QuantGemmProblem& p, int64_t n, int64_t r0,
                                          const __m512 (&acc)[MR][NR]) {
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, _mm512_reduce_add_ps(acc[r][j]));
    }
  }
}

/// NF4, blocks aligned to rows. Per block and weight row the codebook is multiplied by the
/// block's absmax once (code × absmax rounded once, as the reference), so vector v of a
/// 128-code chunk is one shift and one vpermps of the scaled codebook: no per-weight multiply.
/// VPB = vectors per block inside a chunk (block_size / 16, at most 8).
template <int MR, int NR, int VPB>
TERN_AVX512_TARGET void nf4_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n,
                                 int64_t r0) {
  const QuantWeightView& w = p.w;
  const uint64_t k = w.desc.cols;
  const uint32_t shift = w.layout.block_shift;
  const uint64_t block_mask = (uint64_t{1} << shift) - 1;
  const uint64_t bpr = k >> shift;
  // The tile's rows lie in one group of interleaved rows (quant_weight.h) when it starts at a
  // multiple of its height: one sequential stream, prefetched kNf4PrefetchChunks ahead (at the
  // end of the rows this walks into the next group, the next tile's, harmlessly at the end).
  const uint8_t* rows[NR];
  uint64_t stride[NR];
  uint64_t b0[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    const uint64_t row = static_cast<uint64_t>(n + j);
    rows[j] = w.codes + nf4_row_offset(w.layout, row);
    stride[j] = nf4_chunk_stride(w.desc, w.layout, row);
    b0[j] = row * bpr;
  }
  const float* a[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m512 acc[MR][NR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const __m512 codebook = _mm512_loadu_ps(quant::kNf4Code);
  __m512 cb[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) cb[j] = codebook;
  // One chunk (nvec vectors of 16 columns from c0); K is a multiple of 32, so only the last
  // chunk of a row can be short (its padding codes are never looked at).
  auto chunk = [&](uint64_t c0, int nvec) __attribute__((always_inline, target("avx512f,fma"))) {
    __m512i words[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const uint8_t* src = rows[j] + c0 / kNf4ChunkElems * stride[j];
      words[j] = _mm512_loadu_si512(src);
      // Into L2, not L1 (quant_gemm.h, kNf4PrefetchChunks).
      _mm_prefetch(reinterpret_cast<const char*>(src + kNf4PrefetchChunks * stride[j]),
                   _MM_HINT_T1);
    }
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      if (v >= nvec) break;
      const uint64_t k0 = c0 + 16 * static_cast<uint64_t>(v);
      if (v % VPB == 0 && (VPB < 8 || (c0 & block_mask) == 0)) {
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
          cb[j] = _mm512_mul_ps(codebook, _mm512_set1_ps(am.at(b0[j] + (k0 >> shift))));
        }
      }
      __m512 wv[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        wv[j] = _mm512_permutexvar_ps(_mm512_srli_epi32(words[j], static_cast<unsigned>(4 * v)),
                                      cb[j]);
      }
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m512 av = _mm512_loadu_ps(a[r] + k0);
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], av, acc[r][j]);
      }
    }
  };
  const uint64_t full = k / kNf4ChunkElems * kNf4ChunkElems;
  for (uint64_t c0 = 0; c0 < full; c0 += kNf4ChunkElems) chunk(c0, 8);
  if (full < k) chunk(full, static_cast<int>((k - full) / 16));
  store_tile<MR, NR>(p, n, r0, acc);
}

/// FP8 with one scale per run of columns (the row, or a 2-D block's width C, a multiple of 16),
/// decoded through f16 as on AVX2 (fp8_tile there): an e5m2 code is its value's f16 high byte;
/// an e4m3 code sign-extended to 16 bits, shifted left by 7 and masked with 0xBF80 is its value
/// × 2^-8 as an f16, subnormals too; vcvtph2ps widens 16 at once to normal f32s. Unlike placing
/// the code's bits in an f32 (decode() above), no operand is ever an f32 subnormal, which Intel
/// cores handle with a microcode assist (random codes: 1.0 against ~29 G weights/s).
/// How an FP8 tile applies its factors, scale · 2^8 (e4m3) / scale (e5m2).
enum class Fp8Scaling {
  AtEnd,      ///< one run per row (per channel, per tensor): sums scaled once at the end
  PerRun,     ///< 2-D blocks: each run's sums added to a second set of sums times its factor
  PerVector,  ///< 2-D blocks, no room for a second set (MR × NR > 8): each decoded vector scaled
};

/// AtEnd and PerRun sum the products unscaled: the decoded weights are exact, only the rounding
/// of the sum differs from the reference's rounded code × scale, as on AVX2. PerVector is exact
/// per element. The row's last vector is masked. Returns false (nothing written) when a folded
/// factor overflows: the caller takes tile().
template <Fmt F, int MR, int NR, Fp8Scaling S>
TERN_AVX512_TARGET bool fp8_tile_runs(const QuantGemmProblem& p, int64_t n, int64_t r0) {
  const QuantWeightView& w = p.w;
  const QuantWeightDesc& d = w.desc;
  const uint64_t k = d.cols;
  const float unit = F == Fmt::E4m3 ? 256.0f : 1.0f;
  const uint64_t run = d.granularity == Fp8Granularity::Block ? d.block_cols : k;
  const float* srow[NR];  // the row's scales, one per run
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    if (!fp8_row_scales(w, static_cast<uint64_t>(n + j), unit, &srow[j])) return false;
  }
  const uint64_t ahead = NR * w.layout.row_bytes;  // the next tile's rows, same columns
  const uint8_t* rows[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) rows[j] = w.codes + static_cast<uint64_t>(n + j) * w.layout.row_bytes;
  const float* a[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m512 acc[MR][NR];  // PerRun: the run's unscaled sums
  __m512 total[S == Fp8Scaling::PerRun ? MR : 1][S == Fp8Scaling::PerRun ? NR : 1];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  if constexpr (S == Fp8Scaling::PerRun) {
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) total[r][j] = _mm512_setzero_ps();
    }
  }
  const __m256i e4m3_mask = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
  __m512 fac[NR];
  auto step = [&](uint64_t k0, __mmask16 m) __attribute__((always_inline, target("avx512f,fma"))) {
    __m512 wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[j] + k0));
      const __m256i half = F == Fmt::E4m3
                               ? _mm256_and_si256(
                                     _mm256_slli_epi16(_mm256_cvtepi8_epi16(codes), 7), e4m3_mask)
                               : _mm256_slli_epi16(_mm256_cvtepu8_epi16(codes), 8);
      wv[j] = _mm512_cvtph_ps(half);
      if constexpr (S == Fp8Scaling::PerVector) wv[j] = _mm512_mul_ps(wv[j], fac[j]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_maskz_loadu_ps(m, a[r] + k0);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], av, acc[r][j]);
    }
  };
  uint64_t t = 0;
  for (uint64_t s = 0; s < k; s += run, ++t) {
    const uint64_t e = s + run < k ? s + run : k;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) fac[j] = _mm512_set1_ps(srow[j][t] * unit);
    uint64_t k0 = s;
    for (; k0 + 64 <= e; k0 += 64) {
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(rows[j] + k0 + ahead), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) step(k0 + 16 * static_cast<uint64_t>(v), 0xFFFF);
    }
    for (; k0 + 16 <= e; k0 += 16) step(k0, 0xFFFF);
    // Only the row's end is not a multiple of 16: the padded row holds +0 codes there.
    if (k0 < e) step(k0, static_cast<__mmask16>((1u << (e - k0)) - 1u));
    if constexpr (S == Fp8Scaling::PerRun) {
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
          total[r][j] = _mm512_fmadd_ps(acc[r][j], fac[j], total[r][j]);
          acc[r][j] = _mm512_setzero_ps();
        }
      }
    }
  }
  if constexpr (S == Fp8Scaling::AtEnd) {
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_mul_ps(acc[r][j], fac[j]);
    }
  }
  if constexpr (S == Fp8Scaling::PerRun) {
    store_tile<MR, NR>(p, n, r0, total);
  } else {
    store_tile<MR, NR>(p, n, r0, acc);
  }
  return true;
}

template <Fmt F, int MR, int NR>
TERN_AVX512_TARGET bool fp8_tile(const QuantGemmProblem& p, int64_t n, int64_t r0) {
  if (p.w.desc.granularity != Fp8Granularity::Block) {
    return fp8_tile_runs<F, MR, NR, Fp8Scaling::AtEnd>(p, n, r0);
  }
  constexpr Fp8Scaling kBlocks = MR * NR <= 8 ? Fp8Scaling::PerRun : Fp8Scaling::PerVector;
  return fp8_tile_runs<F, MR, NR, kBlocks>(p, n, r0);
}

template <Fmt F, int MR, int NR>
TERN_AVX512_TARGET void fast_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n,
                                  int64_t r0) {
  if constexpr (F == Fmt::Nf4) {
    switch (p.w.desc.block_size) {
      case 32:
        return nf4_tile<MR, NR, 2>(p, am, n, r0);
      case 64:
        return nf4_tile<MR, NR, 4>(p, am, n, r0);
      default:
        return nf4_tile<MR, NR, 8>(p, am, n, r0);
    }
  } else {
    (void)am;
    if (!fp8_tile<F, MR, NR>(p, n, r0)) tile<F, MR, NR>(p, n, r0);
  }
}

/// Weight rows [n0, n1) against every row of A: tiles of NR weight rows (8 for a GEMV, else 4;
/// single rows at the end) by MR <= 4 rows of A; the NR weight rows stay in L1 across A's rows.
template <Fmt F>
TERN_AVX512_TARGET void fast_rows(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  const Nf4Absmax am(p.w);
  int64_t n = n0;
  if (p.m == 1) {
    for (; n + 8 <= n1; n += 8) fast_tile<F, 1, 8>(p, am, n, 0);
    for (; n < n1; ++n) fast_tile<F, 1, 1>(p, am, n, 0);
    return;
  }
  for (; n < n1;) {
    const bool four = n + 4 <= n1;
    for (int64_t r0 = 0; r0 < p.m; r0 += 4) {
      const int64_t mr = p.m - r0 < 4 ? p.m - r0 : 4;
      if (four) {
        switch (mr) {
          case 4: fast_tile<F, 4, 4>(p, am, n, r0); break;
          case 3: fast_tile<F, 3, 4>(p, am, n, r0); break;
          default: fast_tile<F, 2, 4>(p, am, n, r0); break;
          case 1: fast_tile<F, 1, 4>(p, am, n, r0); break;
        }
      } else {
        switch (mr) {
          case 4: fast_tile<F, 4, 1>(p, am, n, r0); break;
          case 3: fast_tile<F, 3, 1>(p, am, n, r0); break;
          default: fast_tile<F, 2, 1>(p, am, n, r0); break;
          case 1: fast_tile<F, 1, 1>(p, am, n, r0); break;
        }
      }
    }
    n += four ? 4 : 1;
  }
}

void rows_avx512(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  const bool fast = quant_fast_path_ok(p.w);
  switch (p.w.desc.format) {
    case QuantWeightFormat::Nf4:
    case QuantWeightFormat::Nf4DoubleQuant:
      return fast ? fast_rows<Fmt::Nf4>(p, n0, n1) : rows_fmt<Fmt::Nf4>(p, n0, n1);
    case QuantWeightFormat::Fp8E4M3:
      return fast ? fast_rows<Fmt::E4m3>(p, n0, n1) : rows_fmt<Fmt::E4m3>(p, n0, n1);
    case QuantWeightFormat::Fp8E5M2:
      return fast ? fast_rows<Fmt::E5m2>(p, n0, n1) : rows_fmt<Fmt::E5m2>(p, n0, n1);
  }
}

}  // namespace

QuantRowsFn quant_rows_avx512() { return &rows_avx512; }

}  // namespace tern::cpu::quant_detail

#else

namespace tern::cpu::quant_detail {
QuantRowsFn quant_rows_avx512() { return nullptr; }
}  // namespace tern::cpu::quant_detail

#endif
