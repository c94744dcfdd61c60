// NEON NF4 GEMV / GEMM by byte planes (aarch64), for the fast path's layouts
// (quant_fast_path_ok: rows hold whole blocks, K a multiple of 32): the AVX2 BytePlanes kernel's
// method (quant_nf4_planes_avx2.cpp) with 128-bit registers. tbl looks up 16 bytes in a
// 16-entry byte table, so 16 codes become 16 exact codebook floats with four tbl (one table per
// byte of the f32) and two rounds of zips (bytes to 16-bit pairs, pairs to words).
//   chunk layout (quant_weight.h): byte b of word i holds columns 32b + i (low nibble) and
//   32b + 16 + i (high nibble). The 16 bytes of words 4g..4g+3, transposed 4 x 4 by one tbl,
//   give per nibble the vectors q = 0..3 of columns 32q + 4g + 16nib + [0, 4).
// GEMV rows (MR = 1) sum code × a per block and scale each block's partial sum once per chunk;
// GEMM row pairs (MR = 2) scale each decoded vector before sharing it, as the reference does.
#include "backends/cpu/kernels/quant_gemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/kernels/quant_nf4_planes_rows.h"
#include "runtime/kernels/util/quant_formats.h"

namespace tern::cpu::quant_detail {
namespace {

struct Planes {
  uint8x16_t byte[4];    ///< byte k (little-endian) of each of the 16 codebook floats
  uint8x16_t transpose;  ///< output byte 4b + l = input byte 4l + b
};

inline Planes make_planes() {
  uint8_t tables[4][16];
  for (int i = 0; i < 16; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &quant::kNf4Code[i], 4);
    for (int k = 0; k < 4; ++k) tables[k][i] = static_cast<uint8_t>(bits >> (8 * k));
  }
  static const uint8_t kTranspose[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  Planes pl;
  for (int k = 0; k < 4; ++k) pl.byte[k] = vld1q_u8(tables[k]);
  pl.transpose = vld1q_u8(kTranspose);
  return pl;
}

/// Codebook values of nibble `nib` of 16 transposed code bytes: f[q] = columns 32q + 4g +
/// 16nib + [0, 4) of the chunk (g: which 16 bytes of the chunk).
inline void decode(const Planes& pl, uint8x16_t transposed, int nib, float32x4_t (&f)[4]) {
  const uint8x16_t codes = nib == 0 ? vandq_u8(transposed, vdupq_n_u8(0x0F))
                                    : vshrq_n_u8(transposed, 4);
  const uint8x16_t b0 = vqtbl1q_u8(pl.byte[0], codes);
  const uint8x16_t b1 = vqtbl1q_u8(pl.byte[1], codes);
  const uint8x16_t b2 = vqtbl1q_u8(pl.byte[2], codes);
  const uint8x16_t b3 = vqtbl1q_u8(pl.byte[3], codes);
  const uint16x8_t lo01 = vreinterpretq_u16_u8(vzip1q_u8(b0, b1));
  const uint16x8_t hi01 = vreinterpretq_u16_u8(vzip2q_u8(b0, b1));
  const uint16x8_t lo23 = vreinterpretq_u16_u8(vzip1q_u8(b2, b3));
  const uint16x8_t hi23 = vreinterpretq_u16_u8(vzip2q_u8(b2, b3));
  f[0] = vreinterpretq_f32_u16(vzip1q_u16(lo01, lo23));
  f[1] = vreinterpretq_f32_u16(vzip2q_u16(lo01, lo23));
  f[2] = vreinterpretq_f32_u16(vzip1q_u16(hi01, hi23));
  f[3] = vreinterpretq_f32_u16(vzip2q_u16(hi01, hi23));
}

/// Output columns [n, n + NR) of rows [r0, r0 + MR) of C; G = blocks per chunk (4, 2 or 1 for
/// blocks of 32, 64, >= 128 columns): group q of a chunk lies in its block q * G / 4.
template <int MR, int NR, int G>
void planes_tile(const QuantGemmProblem& p, const Nf4Absmax& am, int64_t n, int64_t r0) {
  const Planes pl = make_planes();  // a few dozen instructions against a tile's 2 x K weights
  const QuantWeightView& w = p.w;
  const uint64_t k = w.desc.cols;
  const uint32_t shift = w.layout.block_shift;
  const uint64_t bpr = k >> shift;
  const uint8_t* rows[NR];  // chunk c of row n + j at rows[j] + c * stride[j] (quant_weight.h)
  uint64_t stride[NR];
  uint64_t b0[NR];
  for (int j = 0; j < NR; ++j) {
    const uint64_t row = static_cast<uint64_t>(n + j);
    rows[j] = w.codes + nf4_row_offset(w.layout, row);
    stride[j] = nf4_chunk_stride(w.desc, w.layout, row);
    b0[j] = row * bpr;
  }
  const float* a[MR];
  for (int r = 0; r < MR; ++r) a[r] = p.a + (r0 + r) * p.lda;
  float32x4_t acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) acc[r][j] = vdupq_n_f32(0.0f);
  }
  // Vector groups q < nq of the chunk at c0 (nq < 4 only in a row's short last chunk).
  auto chunk = [&](uint64_t c0, int nq) __attribute__((always_inline)) {
    float scale[NR][G];
    for (int j = 0; j < NR; ++j) {
      for (int g = 0; g < G; ++g) {
        scale[j][g] = g * 4 < nq * G ? am.at(b0[j] + ((c0 + kNf4ChunkElems / G * g) >> shift)) : 0.0f;
      }
    }
    float32x4_t part[NR][G];  // MR == 1: code x a per block, scaled once at the chunk's end
    if constexpr (MR == 1) {
      for (int j = 0; j < NR; ++j) {
        for (int g = 0; g < G; ++g) part[j][g] = vdupq_n_f32(0.0f);
      }
    }
#pragma GCC unroll 4
    for (int g4 = 0; g4 < 4; ++g4) {
#pragma GCC unroll 2
      for (int j = 0; j < NR; ++j) {
        const uint8_t* src = rows[j] + c0 / kNf4ChunkElems * stride[j] + 16 * g4;
        const uint8x16_t t = vqtbl1q_u8(vld1q_u8(src), pl.transpose);
#pragma GCC unroll 2
        for (int nib = 0; nib < 2; ++nib) {
          float32x4_t f[4];
          decode(pl, t, nib, f);
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            if (q >= nq) break;
            const uint64_t col = c0 + 32 * static_cast<uint64_t>(q) + 4 * g4 + 16 * nib;
            if constexpr (MR == 1) {
              part[j][q * G / 4] = vfmaq_f32(part[j][q * G / 4], f[q], vld1q_f32(a[0] + col));
            } else {
              const float32x4_t wv = vmulq_n_f32(f[q], scale[j][q * G / 4]);
              for (int r = 0; r < MR; ++r) acc[r][j] = vfmaq_f32(acc[r][j], wv, vld1q_f32(a[r] + col));
            }
          }
        }
      }
    }
    if constexpr (MR == 1) {
      for (int j = 0; j < NR; ++j) {
        for (int g = 0; g < G; ++g) acc[0][j] = vfmaq_n_f32(acc[0][j], part[j][g], scale[j][g]);
      }
    }
  };
  const uint64_t full = k / kNf4ChunkElems * kNf4ChunkElems;
  for (uint64_t c0 = 0; c0 < full; c0 += kNf4ChunkElems) chunk(c0, 4);
  if (full < k) chunk(full, static_cast<int>((k - full) / 32));
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
    for (int j = 0; j < NR; ++j) {
      c[j] = quant_output(p, n + j, vaddvq_f32(acc[r][j]));
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

void nf4_planes_rows_neon(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  nf4_planes_rows<Tile>(p, n0, n1);
}

}  // namespace tern::cpu::quant_detail

#endif
