// AVX2+FMA kernel of the fused quantized GEMM (quant_gemm.h): as the AVX-512 one with each
// 16-lane vector in two ymm halves. NF4: vpermps reads only 3 index bits, so the 16-entry
// codebook is two ymm tables and bit 3 of the index (moved to the sign bit) picks one with
// vblendvps. FP8: 8 sign-extended bytes shifted and masked into f32 bits, times scale · 2^bias
// (per vector), or on the fast path through f16 and vcvtph2ps (F16C, which dispatch requires).
// Fast path (quant_fast_path_ok, fast_rows) as the AVX-512 kernel's: runs sharing one scale,
// NF4 from codebook halves pre-multiplied by the block's absmax, 4 weight rows per tile.
// Compiled with per-function target attributes; runs only when dispatch saw AVX2 and FMA.
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

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))
#define TERN_AVX2_F16C_TARGET __attribute__((target("avx2,fma,f16c")))

namespace tern::cpu::quant_detail {
namespace {

enum class Fmt { Nf4, E4m3, E5m2 };

constexpr uint64_t kPrefetchBytes = 1024;

struct Codebook {
  __m256 lo, hi;
};

/// Half h (lanes 8h..8h+7) of vector v of a chunk.
template <Fmt F>
TERN_AVX2_TARGET inline __m256 decode(const uint8_t* row, uint64_t k0, __m256i words, int v,
                                      int h, const Codebook& cb) {
  if constexpr (F == Fmt::Nf4) {
    (void)row;
    (void)k0;
    (void)h;
    const __m256i idx = _mm256_srli_epi32(words, 4 * v);
    const __m256 a = _mm256_permutevar8x32_ps(cb.lo, idx);
    const __m256 b = _mm256_permutevar8x32_ps(cb.hi, idx);
    return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
  } else {
    (void)words;
    (void)v;
    (void)cb;
    const __m256i sx = _mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + k0 + 8 * h)));
    const int shift = F == Fmt::E4m3 ? kE4m3Shift : kE5m2Shift;
    const int mask = static_cast<int>(F == Fmt::E4m3 ? kE4m3Mask : kE5m2Mask);
    return _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_slli_epi32(sx, shift), _mm256_set1_epi32(mask)));
  }
}

/// Lane mask (all bits set on lanes < valid) for a masked load / blend.
TERN_AVX2_TARGET inline __m256i lane_mask(int64_t valid) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lanes);
}

TERN_AVX2_TARGET inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

template <Fmt F, int MR, int NR>
TERN_AVX2_TARGET void tile(const QuantGemmProblem& p, int64_t n, int64_t r0) {
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
  __m256 acc[MR][NR];
  #pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  Codebook cb;
  cb.lo = _mm256_loadu_ps(quant::kNf4Code);
  cb.hi = _mm256_loadu_ps(quant::kNf4Code + 8);
  constexpr uint64_t kChunk = F == Fmt::Nf4 ? kNf4ChunkElems : 64;
  constexpr int kVectors = static_cast<int>(kChunk / 16);
  alignas(32) float exact[16];
  for (uint64_t c0 = 0; c0 < k; c0 += kChunk) {
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(
                       rows[j] + (F == Fmt::Nf4 ? c0 / kChunk * stride[j] : c0) + kPrefetchBytes),
                   _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) {
      const uint64_t k0 = c0 + 16 * static_cast<uint64_t>(v);
      if (k0 >= k) break;
      float s[NR];
      bool fast[NR];
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        fast[j] = cur[j].vector(w, static_cast<uint64_t>(n + j), k0, &s[j]);
      }
      for (int h = 0; h < 2; ++h) {
        const uint64_t kh = k0 + 8 * static_cast<uint64_t>(h);
        if (kh >= k) break;
        const bool tail = kh + 8 > k;
        __m256 wv[NR];
        #pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) {
          if (fast[j]) {
            const __m256i words =
                F == Fmt::Nf4 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                    rows[j] + c0 / kChunk * stride[j] + 32 * h))
                              : _mm256_setzero_si256();
            wv[j] = _mm256_mul_ps(decode<F>(rows[j], k0, words, v, h, cb), _mm256_set1_ps(s[j]));
          } else {
            quant_fill16(w, static_cast<uint64_t>(n + j), k0, exact);
            wv[j] = _mm256_load_ps(exact + 8 * h);
          }
        }
        if (!tail) {
          #pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            const __m256 av = _mm256_loadu_ps(a[r] + kh);
            #pragma GCC unroll 4
            for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_fmadd_ps(wv[j], av, acc[r][j]);
          }
        } else {
          const __m256i m = lane_mask(static_cast<int64_t>(k - kh));
          const __m256 mf = _mm256_castsi256_ps(m);
          #pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            const __m256 av = _mm256_maskload_ps(a[r] + kh, m);
            #pragma GCC unroll 4
            for (int j = 0; j < NR; ++j) {
              acc[r][j] = _mm256_blendv_ps(acc[r][j], _mm256_fmadd_ps(wv[j], av, acc[r][j]), mf);
            }
          }
        }
      }
    }
  }
  #pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, hsum(acc[r][j]));
    }
  }
}

template <Fmt F, int MR>
TERN_AVX2_TARGET void tile_nr(const QuantGemmProblem& p, int64_t n, int64_t nr, int64_t r0) {
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
TERN_AVX2_TARGET void rows_fmt(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; n += 4) {
    const int64_t nr = n1 - n < 4 ? n1 - n : 4;
    for (int64_t r0 = 0; r0 < p.m; r0 += 2) {
      if (p.m - r0 >= 2) {
        tile_nr<F, 2>(p, n, nr, r0);
      } else {
        tile_nr<F, 1>(p, n, nr, r0);
      }
    }
  }
}

// ---- Fast path (quant_fast_path_ok): runs of columns sharing one scale, no per-vector checks.

template <int MR, int NR>
TERN_AVX2_TARGET inline void store_tile(const QuantGemmProblem& p, int64_t n, int64_t r0,
                                        const __m256 (&acc)[MR][NR]) {
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, hsum(acc[r][j]));
    }
  }
}

/// NF4, blocks aligned to rows: per block and weight row the two codebook halves are multiplied
/// by the block's absmax once (exactly the reference's code × absmax), so half h of vector v is
/// two vpermps of the scaled halves and a blend on index bit 3 (words << (28 - 4v) puts it in
/// the sign bit). VPB = vectors per block inside a chunk (at most 8).
template <int MR, int NR, int VPB>
TERN_AVX2_TARGET void nf4_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n,
                               int64_t r0) {
  const QuantWeightView& w = p.w;
  const uint64_t k = w.desc.cols;
  const uint32_t shift = w.layout.block_shift;
  const uint64_t block_mask = (uint64_t{1} << shift) - 1;
  const uint64_t bpr = k >> shift;
  // Each row's codes are prefetched kNf4PrefetchChunks chunks ahead (the tile's rows share one
  // group of interleaved rows, quant_weight.h, when it starts at a multiple of its height).
  const uint8_t* rows[NR];
  uint64_t stride[NR];
  uint64_t b0[NR];
#pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) {
    const uint64_t row = static_cast<uint64_t>(n + j);
    rows[j] = w.codes + nf4_row_offset(w.layout, row);
    stride[j] = nf4_chunk_stride(w.desc, w.layout, row);
    b0[j] = row * bpr;
  }
  const float* a[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m256 acc[MR][NR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const __m256 code_lo = _mm256_loadu_ps(quant::kNf4Code);
  const __m256 code_hi = _mm256_loadu_ps(quant::kNf4Code + 8);
  Codebook cb[NR];
#pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) cb[j] = Codebook{code_lo, code_hi};
  auto chunk = [&](uint64_t c0, int nvec) __attribute__((always_inline, target("avx2,fma"))) {
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(rows[j] + (c0 / kNf4ChunkElems +
                                                            kNf4PrefetchChunks) * stride[j]),
                   _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      if (v >= nvec) break;
      const uint64_t k0 = c0 + 16 * static_cast<uint64_t>(v);
      if (v % VPB == 0 && (VPB < 8 || (c0 & block_mask) == 0)) {
#pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) {
          const __m256 s = _mm256_set1_ps(am.at(b0[j] + (k0 >> shift)));
          cb[j].lo = _mm256_mul_ps(code_lo, s);
          cb[j].hi = _mm256_mul_ps(code_hi, s);
        }
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256 wv[NR];
#pragma GCC unroll 4
        for (int j = 0; j < NR; ++j) {
          const __m256i words =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                  rows[j] + c0 / kNf4ChunkElems * stride[j] + 32 * h));
          const __m256i idx = _mm256_srli_epi32(words, 4 * v);
          const __m256 sel = _mm256_castsi256_ps(_mm256_slli_epi32(words, 28 - 4 * v));
          wv[j] = _mm256_blendv_ps(_mm256_permutevar8x32_ps(cb[j].lo, idx),
                                   _mm256_permutevar8x32_ps(cb[j].hi, idx), sel);
        }
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const __m256 av = _mm256_loadu_ps(a[r] + k0 + 8 * h);
#pragma GCC unroll 4
          for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_fmadd_ps(wv[j], av, acc[r][j]);
        }
      }
    }
  };
  const uint64_t full = k / kNf4ChunkElems * kNf4ChunkElems;
  for (uint64_t c0 = 0; c0 < full; c0 += kNf4ChunkElems) chunk(c0, 8);
  if (full < k) chunk(full, static_cast<int>((k - full) / 16));
  store_tile<MR, NR>(p, n, r0, acc);
}

/// FP8 with one scale per run of columns (the row, or a 2-D block's width C, a multiple of 16),
/// decoded through f16 (F16C): an e5m2 code is the high byte of the f16 of its value, and an
/// e4m3 code's sign, exponent and mantissa moved to f16 bits 15, 13..7 (one arithmetic shift
/// of the code in the high byte and a mask) give its value × 2^-8 exactly, subnormals too, so
/// vcvtph2ps decodes 8 codes in one instruction. Products with A are summed per run and the sum
/// multiplied by scale · 2^8 (e4m3) / scale (e5m2) at the run's end: the decoded weights are
/// exact, only the rounding of the sum differs from the reference's rounded code × scale.
/// The row's last 16 columns are masked on A (the padded row holds +0 codes). Returns false
/// (nothing written) when the folded factor overflows: the caller takes tile().
template <Fmt F, int MR, int NR>
TERN_AVX2_F16C_TARGET bool fp8_tile(const QuantGemmProblem& p, int64_t n, int64_t r0) {
  const QuantWeightView& w = p.w;
  const QuantWeightDesc& d = w.desc;
  const uint64_t k = d.cols;
  const float unit = F == Fmt::E4m3 ? 256.0f : 1.0f;
  const bool blocked = d.granularity == Fp8Granularity::Block;
  const uint64_t run = blocked ? d.block_cols : k;
  const float* srow[NR];
#pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) {
    if (!fp8_row_scales(w, static_cast<uint64_t>(n + j), unit, &srow[j])) return false;
  }
  const uint64_t ahead = NR * w.layout.row_bytes;  // the next tile's rows, same columns
  const uint8_t* rows[NR];
#pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) rows[j] = w.codes + static_cast<uint64_t>(n + j) * w.layout.row_bytes;
  const float* a[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m256 acc[MR][NR];
  float total[MR][NR] = {};
  const __m128i e4m3_mask = _mm_set1_epi16(static_cast<int16_t>(0xBF80));
  // The f16 bits of eight codes, given the codes in the high bytes of 16-bit lanes.
  auto to_half = [&](__m128i high) __attribute__((always_inline, target("avx2,fma,f16c"))) {
    return F == Fmt::E4m3 ? _mm_and_si128(_mm_srai_epi16(high, 1), e4m3_mask) : high;
  };
  // Sixteen columns from k0; `valid` < 16 only at the row's end. One weight row's two decoded
  // vectors live at a time (MR = 2, NR = 4: 8 sums, 4 A vectors, 2 weights in 16 registers).
  auto step = [&](uint64_t k0, int valid) __attribute__((always_inline, target("avx2,fma,f16c"))) {
    __m256 a0[MR], a1[MR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      if (valid == 16) {
        a0[r] = _mm256_loadu_ps(a[r] + k0);
        a1[r] = _mm256_loadu_ps(a[r] + k0 + 8);
      } else {
        a0[r] = _mm256_maskload_ps(a[r] + k0, lane_mask(valid));
        a1[r] = _mm256_maskload_ps(a[r] + k0 + 8, lane_mask(valid - 8));
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[j] + k0));
      const __m256 lo = _mm256_cvtph_ps(to_half(_mm_unpacklo_epi8(_mm_setzero_si128(), codes)));
      const __m256 hi = _mm256_cvtph_ps(to_half(_mm_unpackhi_epi8(_mm_setzero_si128(), codes)));
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = _mm256_fmadd_ps(lo, a0[r], acc[r][j]);
        acc[r][j] = _mm256_fmadd_ps(hi, a1[r], acc[r][j]);
      }
    }
  };
  uint64_t t = 0;
  for (uint64_t s = 0; s < k; s += run, ++t) {
    const uint64_t e = s + run < k ? s + run : k;
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
    }
    uint64_t k0 = s;
    for (; k0 + 64 <= e; k0 += 64) {
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(rows[j] + k0 + ahead), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) step(k0 + 16 * static_cast<uint64_t>(v), 16);
    }
    for (; k0 + 16 <= e; k0 += 16) step(k0, 16);
    if (k0 < e) step(k0, static_cast<int>(e - k0));
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      const float fac = srow[j][t] * unit;
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) total[r][j] += hsum(acc[r][j]) * fac;
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) c[j] = quant_output(p, n + j, total[r][j]);
  }
  return true;
}

template <Fmt F, int MR, int NR>
TERN_AVX2_TARGET void fast_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n,
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

/// Weight rows [n0, n1): tiles of NR weight rows (single rows at the end) by MR <= 2 rows of
/// A.
template <Fmt F>
TERN_AVX2_TARGET void fast_rows(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  constexpr int NR = 4;
  const Nf4Absmax am(p.w);
  for (int64_t n = n0; n < n1;) {
    const bool full = n + NR <= n1;
    for (int64_t r0 = 0; r0 < p.m; r0 += 2) {
      const bool two = p.m - r0 >= 2;
      if (full) {
        if (two) {
          fast_tile<F, 2, NR>(p, am, n, r0);
        } else {
          fast_tile<F, 1, NR>(p, am, n, r0);
        }
      } else if (two) {
        fast_tile<F, 2, 1>(p, am, n, r0);
      } else {
        fast_tile<F, 1, 1>(p, am, n, r0);
      }
    }
    n += full ? NR : 1;
  }
}

void rows_avx2(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  const bool fast = quant_fast_path_ok(p.w);
  switch (p.w.desc.format) {
    case QuantWeightFormat::Nf4:
    case QuantWeightFormat::Nf4DoubleQuant:
      if (!fast) return rows_fmt<Fmt::Nf4>(p, n0, n1);
      return quant_nf4_avx2_lookup() == Nf4Avx2Lookup::BytePlanes ? nf4_planes_rows_avx2(p, n0, n1)
                                                                  : fast_rows<Fmt::Nf4>(p, n0, n1);
    case QuantWeightFormat::Fp8E4M3:
      return fast ? fast_rows<Fmt::E4m3>(p, n0, n1) : rows_fmt<Fmt::E4m3>(p, n0, n1);
    case QuantWeightFormat::Fp8E5M2:
      return fast ? fast_rows<Fmt::E5m2>(p, n0, n1) : rows_fmt<Fmt::E5m2>(p, n0, n1);
  }
}

}  // namespace

QuantRowsFn quant_rows_avx2() {
  // Every AVX2 processor so far has F16C (the fast FP8 path's vcvtph2ps); one without it takes
  // the generic kernel.
  return cpu_has_f16c() ? &rows_avx2 : nullptr;
}

}  // namespace tern::cpu::quant_detail

#else

namespace tern::cpu::quant_detail {
QuantRowsFn quant_rows_avx2() { return nullptr; }
}  // namespace tern::cpu::quant_detail

#endif
