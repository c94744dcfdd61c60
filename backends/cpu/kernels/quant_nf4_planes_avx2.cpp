// AVX2 NF4 GEMV / GEMM by byte planes (quant_gemm.h, Nf4Avx2Lookup::BytePlanes), for the fast
// path's layouts (quant_fast_path_ok: rows hold whole blocks, K a multiple of 32).
//
// An f32 codebook value is four bytes, and vpshufb looks up 32 bytes at once in a 16-entry
// byte table per lane. So 32 codes (one nibble of 32 code bytes) become 32 exact codebook
// floats with four vpshufb (one table per byte of the f32) and two rounds of unpacks (bytes to
// 16-bit pairs, pairs to dwords): 12 shuffles per 32 weights, against two vpermps and a blend
// per 8 weights on the Permute path. A vpshufb first transposes each lane's 4 x 4 code bytes
// so that the unpacks' outputs are 8 consecutive columns of the row:
//   chunk layout (quant_weight.h): column 16v + i is nibble v of word i, i.e. byte b of word
//   i holds columns 32b + i (low nibble) and 32b + 16 + i (high nibble); the 32 bytes of words
//   8h..8h+7 transposed give, per nibble, the vectors q = 0..3 of columns 32q + 8h + 16nib + [0, 8).
// The block's absmax is not folded into the table (it would need the four byte tables rebuilt
// per block): GEMV rows (MR = 1) sum code × a per vector group q of the chunk and multiply
// each group's partial sum by its block's absmax once per chunk; GEMM row pairs (MR = 2)
// multiply each decoded vector by the absmax before sharing it between the two rows, as the
// reference does. Measured on AMD Zen 1 (bench/quant_gemv_micro.cpp): 2.2x the Permute path.
#include "backends/cpu/kernels/quant_gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/quant_nf4_planes_rows.h"
#include "runtime/kernels/util/quant_formats.h"

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::quant_detail {
namespace {

struct Planes {
  __m256i byte[4];    ///< byte k (little-endian) of each of the 16 codebook floats, both lanes
  __m256i transpose;  ///< per lane: output byte 4b + l = input byte 4l + b
  __m256i nibble;     ///< 0x0F in every byte
};

TERN_AVX2_TARGET inline Planes make_planes() {
  alignas(32) uint8_t tables[4][32];
  for (int i = 0; i < 16; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &quant::kNf4Code[i], 4);
    for (int k = 0; k < 4; ++k) {
      tables[k][i] = tables[k][i + 16] = static_cast<uint8_t>(bits >> (8 * k));
    }
  }
  Planes pl;
  for (int k = 0; k < 4; ++k) {
    pl.byte[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(tables[k]));
  }
  pl.transpose = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,  //
                                  0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  pl.nibble = _mm256_set1_epi8(0x0F);
  return pl;
}

/// Codebook values of nibble `nib` of 32 transposed code bytes: f[q] = columns 32q + 8h +
/// 16nib + [0, 8) of the chunk (h: which half of the chunk the bytes came from).
TERN_AVX2_TARGET inline void decode(const Planes& pl, __m256i transposed, int nib, __m256 (&f)[4]) {
  const __m256i codes =
      _mm256_and_si256(nib == 0 ? transposed : _mm256_srli_epi16(transposed, 4), pl.nibble);
  const __m256i b0 = _mm256_shuffle_epi8(pl.byte[0], codes);
  const __m256i b1 = _mm256_shuffle_epi8(pl.byte[1], codes);
  const __m256i b2 = _mm256_shuffle_epi8(pl.byte[2], codes);
  const __m256i b3 = _mm256_shuffle_epi8(pl.byte[3], codes);
  const __m256i lo01 = _mm256_unpacklo_epi8(b0, b1), hi01 = _mm256_unpackhi_epi8(b0, b1);
  const __m256i lo23 = _mm256_unpacklo_epi8(b2, b3), hi23 = _mm256_unpackhi_epi8(b2, b3);
  f[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(lo01, lo23));
  f[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(lo01, lo23));
  f[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(hi01, hi23));
  f[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(hi01, hi23));
}

TERN_AVX2_TARGET inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

/// Output columns [n, n + NR) of rows [r0, r0 + MR) of C; G = blocks per chunk (4, 2 or 1 for
/// blocks of 32, 64, >= 128 columns): group q of a chunk lies in its block q * G / 4.
template <int MR, int NR, int G>
TERN_AVX2_TARGET void planes_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n,
                                  int64_t r0) {
  const Planes pl = make_planes();  // ~100 instructions against a tile's 2 x K weights
  const QuantWeightView& w = p.w;
  const uint64_t k = w.desc.cols;
  const uint32_t shift = w.layout.block_shift;
  const uint64_t bpr = k >> shift;
  const uint8_t* rows[NR];  // chunk c of row n + j at rows[j] + c * stride[j] (quant_weight.h)
  uint64_t stride[NR];
  uint64_t b0[NR];
#pragma GCC unroll 2
  for (int j = 0; j < NR; ++j) {
    const uint64_t row = static_cast<uint64_t>(n + j);
    rows[j] = w.codes + nf4_row_offset(w.layout, row);
    stride[j] = nf4_chunk_stride(w.desc, w.layout, row);
    b0[j] = row * bpr;
  }
  const float* a[MR];
#pragma GCC unroll 2
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  __m256 acc[MR][NR];
#pragma GCC unroll 2
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  // Vector groups q < nq of the chunk at c0 (nq < 4 only in a row's short last chunk).
  auto chunk = [&](uint64_t c0, int nq) __attribute__((always_inline, target("avx2,fma"))) {
    float scale[NR][G];
#pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(rows[j] + (c0 / kNf4ChunkElems +
                                                            kNf4PrefetchChunks) * stride[j]),
                   _MM_HINT_T0);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        scale[j][g] = g * 4 < nq * G ? am.at(b0[j] + ((c0 + kNf4ChunkElems / G * g) >> shift)) : 0.0f;
      }
    }
    __m256 part[NR][G];  // MR == 1: code x a per block, scaled once at the chunk's end
    if constexpr (MR == 1) {
#pragma GCC unroll 2
      for (int j = 0; j < NR; ++j) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) part[j][g] = _mm256_setzero_ps();
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
      for (int j = 0; j < NR; ++j) {
        const uint8_t* src = rows[j] + c0 / kNf4ChunkElems * stride[j] + 32 * h;
        const __m256i t = _mm256_shuffle_epi8(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), pl.transpose);
#pragma GCC unroll 2
        for (int nib = 0; nib < 2; ++nib) {
          __m256 f[4];
          decode(pl, t, nib, f);
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            if (q >= nq) break;
            const uint64_t col = c0 + 32 * static_cast<uint64_t>(q) + 8 * h + 16 * nib;
            if constexpr (MR == 1) {
              part[j][q * G / 4] =
                  _mm256_fmadd_ps(f[q], _mm256_loadu_ps(a[0] + col), part[j][q * G / 4]);
            } else {
              const __m256 wv = _mm256_mul_ps(f[q], _mm256_broadcast_ss(&scale[j][q * G / 4]));
#pragma GCC unroll 2
              for (int r = 0; r < MR; ++r) {
                acc[r][j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(a[r] + col), acc[r][j]);
              }
            }
          }
        }
      }
    }
    if constexpr (MR == 1) {
#pragma GCC unroll 2
      for (int j = 0; j < NR; ++j) {
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          acc[0][j] = _mm256_fmadd_ps(part[j][g], _mm256_set1_ps(scale[j][g]), acc[0][j]);
        }
      }
    }
  };
  const uint64_t full = k / kNf4ChunkElems * kNf4ChunkElems;
  for (uint64_t c0 = 0; c0 < full; c0 += kNf4ChunkElems) chunk(c0, 4);
  if (full < k) chunk(full, static_cast<int>((k - full) / 32));
#pragma GCC unroll 2
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
#pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, hsum(acc[r][j]));
    }
  }
}

/// Tile<MR, NR, G> for quant_nf4_planes_rows.h.
template <int MR, int NR, int G>
struct Tile {
  static void run(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n, int64_t r0) {
    planes_tile<MR, NR, G>(p, am, n, r0);
  }
};

}  // namespace

void nf4_planes_rows_avx2(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  nf4_planes_rows<Tile>(p, n0, n1);
}

}  // namespace tern::cpu::quant_detail

#endif
