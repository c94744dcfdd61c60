// NEON kernel of the fused quantized GEMM (quant_gemm.h) for FP8 weights on the run-based fast
// path (quant_fast_path_ok): what the generic kernel runs for them on aarch64. As AVX2's FP8
// path: an e5m2 code is the high byte of its value's f16, an e4m3 code in a 16-bit lane's high
// byte shifted right by one (arithmetic) and masked with 0xBF80 is its value × 2^-8 as an f16,
// exact for subnormals; fcvtl widens 4 at a time. Each run of columns sharing a scale is summed
// unscaled and multiplied by scale · 2^8 (e4m3) / scale (e5m2) once at its end. Tiles of 4
// weight rows × up to 2 rows of A; the row's last 16 columns are masked on A (the padded row
// holds +0 codes). False when a tile's folded factor overflows: the caller then computes the
// whole row range again on the exact per-vector path (which overwrites every output).
#include "backends/cpu/kernels/quant_gemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

namespace tern::cpu::quant_detail {
namespace {

/// The 16 f16 values (× 2^-8 for e4m3) of 16 codes, as 4 float32x4.
inline void widen16(uint8x16_t codes, bool e4m3, float32x4_t out[4]) {
  uint16x8_t lo = vshll_n_u8(vget_low_u8(codes), 8);
  uint16x8_t hi = vshll_high_n_u8(codes, 8);
  if (e4m3) {
    const uint16x8_t mask = vdupq_n_u16(0xBF80);
    lo = vandq_u16(vreinterpretq_u16_s16(vshrq_n_s16(vreinterpretq_s16_u16(lo), 1)), mask);
    hi = vandq_u16(vreinterpretq_u16_s16(vshrq_n_s16(vreinterpretq_s16_u16(hi), 1)), mask);
  }
  const float16x8_t hl = vreinterpretq_f16_u16(lo);
  const float16x8_t hh = vreinterpretq_f16_u16(hi);
  out[0] = vcvt_f32_f16(vget_low_f16(hl));
  out[1] = vcvt_high_f32_f16(hl);
  out[2] = vcvt_f32_f16(vget_low_f16(hh));
  out[3] = vcvt_high_f32_f16(hh);
}

/// 16 floats of A from a (valid < 16: the rest zeros, nothing read past them).
inline void load_a16(const float* a, int valid, float32x4_t out[4]) {
  if (valid == 16) {
    for (int i = 0; i < 4; ++i) out[i] = vld1q_f32(a + 4 * i);
    return;
  }
  float tmp[16] = {};
  for (int i = 0; i < valid; ++i) tmp[i] = a[i];
  for (int i = 0; i < 4; ++i) out[i] = vld1q_f32(tmp + 4 * i);
}

template <int MR, int NR>
bool tile(const QuantGemmProblem& p, int64_t n, int64_t r0) {
  const QuantWeightView& w = p.w;
  const QuantWeightDesc& d = w.desc;
  const uint64_t k = d.cols;
  const bool e4m3 = d.format == QuantWeightFormat::Fp8E4M3;
  const float unit = e4m3 ? 256.0f : 1.0f;
  const bool blocked = d.granularity == Fp8Granularity::Block;
  const uint64_t run = blocked ? d.block_cols : k;
  const float* srow[NR];
  for (int j = 0; j < NR; ++j) {
    if (!fp8_row_scales(w, static_cast<uint64_t>(n + j), unit, &srow[j])) return false;
  }
  const uint8_t* rows[NR];
  for (int j = 0; j < NR; ++j) rows[j] = w.codes + static_cast<uint64_t>(n + j) * w.layout.row_bytes;
  float32x4_t total[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) total[r][j] = vdupq_n_f32(0.0f);
  }
  uint64_t t = 0;
  for (uint64_t s = 0; s < k; s += run, ++t) {
    const uint64_t e = s + run < k ? s + run : k;
    float32x4_t acc[MR][NR];
    for (int r = 0; r < MR; ++r) {
      for (int j = 0; j < NR; ++j) acc[r][j] = vdupq_n_f32(0.0f);
    }
    for (uint64_t k0 = s; k0 < e; k0 += 16) {
      const int valid = e - k0 < 16 ? static_cast<int>(e - k0) : 16;
      float32x4_t a[MR][4];
      for (int r = 0; r < MR; ++r) load_a16(p.a + (r0 + r) * p.lda + k0, valid, a[r]);
      for (int j = 0; j < NR; ++j) {
        float32x4_t wv[4];
        widen16(vld1q_u8(rows[j] + k0), e4m3, wv);
        for (int r = 0; r < MR; ++r) {
          for (int i = 0; i < 4; ++i) acc[r][j] = vfmaq_f32(acc[r][j], wv[i], a[r][i]);
        }
      }
    }
    for (int j = 0; j < NR; ++j) {
      const float32x4_t fac = vdupq_n_f32(srow[j][t] * unit);
      for (int r = 0; r < MR; ++r) total[r][j] = vfmaq_f32(total[r][j], acc[r][j], fac);
    }
  }
  for (int r = 0; r < MR; ++r) {
    float* c = p.c + (r0 + r) * p.ldc + n;
    for (int j = 0; j < NR; ++j) c[j] = quant_output(p, n + j, vaddvq_f32(total[r][j]));
  }
  return true;
}

template <int MR>
bool tile_nr(const QuantGemmProblem& p, int64_t n, int64_t nr, int64_t r0) {
  return nr == 4 ? tile<MR, 4>(p, n, r0) : tile<MR, 1>(p, n, r0);
}

}  // namespace

bool fp8_rows_neon(const QuantGemmProblem& p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1;) {
    const int64_t nr = n1 - n >= 4 ? 4 : 1;
    for (int64_t r0 = 0; r0 < p.m; r0 += 2) {
      const bool ok = p.m - r0 >= 2 ? tile_nr<2>(p, n, nr, r0) : tile_nr<1>(p, n, nr, r0);
      if (!ok) return false;
    }
    n += nr;
  }
  return true;
}

}  // namespace tern::cpu::quant_detail

#endif
