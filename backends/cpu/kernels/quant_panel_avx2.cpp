// AVX2 (+FMA, F16C) decode of the quantized GEMM's f32 panels (quant_panel_gemm.cpp): for each
// vector of 16 columns, the 16 weight rows of the panel are decoded a row at a time into a
// 16 x 16 tile (NF4: vpermps of the codebook halves scaled by the block's absmax and a blend on
// the index's bit 3; FP8: the codes as f16 bits and vcvtph2ps, times scale · 2^8 (e4m3) /
// scale (e5m2)), then four 8 x 8 transposes write the tile as 16 panel rows. Each value is the
// reference's code value × scale with one f32 rounding, as the generic decode gives it.
// Compiled with per-function target attributes; used only when dispatch saw AVX2 and F16C.
#include "backends/cpu/kernels/quant_gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include "runtime/kernels/util/quant_formats.h"

#define TERN_PANEL_TARGET __attribute__((target("avx2,fma,f16c")))

namespace tern::cpu::quant_detail {
namespace {

/// dst[c * dst_stride + r] = src[r * src_stride + c] for r, c in [0, 8).
TERN_PANEL_TARGET inline void transpose8(const float* src, int64_t src_stride, float* dst,
                                         int64_t dst_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

/// Columns [v, v + 16) of NF4 weight row `row` into out[0..16).
TERN_PANEL_TARGET inline void nf4_vector(const QuantWeightView& w, uint64_t row, uint64_t v,
                                         float* out) {
  const uint8_t* chunk = w.codes + nf4_chunk_offset(w.desc, w.layout, row, v / kNf4ChunkElems);
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(4 * ((v % kNf4ChunkElems) / 16)));
  const __m256 absmax =
      _mm256_set1_ps(nf4_absmax_at(w, (row * w.desc.cols + v) >> w.layout.block_shift));
  const __m256 lo = _mm256_mul_ps(_mm256_loadu_ps(quant::kNf4Code), absmax);
  const __m256 hi = _mm256_mul_ps(_mm256_loadu_ps(quant::kNf4Code + 8), absmax);
  for (int h = 0; h < 2; ++h) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32 * h));
    const __m256i idx = _mm256_srl_epi32(words, shift);
    const __m256 sel = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
    _mm256_storeu_ps(out + 8 * h, _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx),
                                                   _mm256_permutevar8x32_ps(hi, idx), sel));
  }
}

/// Columns [v, v + 16) of FP8 weight row `row` into out[0..16) (codes past the row's end are
/// its +0 padding). False when scale · 2^8 overflows: the caller decodes the vector exactly.
TERN_PANEL_TARGET inline bool fp8_vector(const QuantWeightView& w, uint64_t row, uint64_t v,
                                         float* out) {
  const bool e4m3 = w.desc.format == QuantWeightFormat::Fp8E4M3;
  const float scale = quant_scale_at(w, row, v);
  const float factor = scale * (e4m3 ? 256.0f : 1.0f);
  if (factor - factor != 0.0f && scale - scale == 0.0f) return false;
  const __m128i codes =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.codes + row * w.layout.row_bytes + v));
  __m128i lo = _mm_unpacklo_epi8(_mm_setzero_si128(), codes);
  __m128i hi = _mm_unpackhi_epi8(_mm_setzero_si128(), codes);
  if (e4m3) {
    // Sign at bit 15, exponent and mantissa at bits 13..7: the value × 2^-8 as an f16.
    const __m128i mask = _mm_set1_epi16(static_cast<int16_t>(0xBF80));
    lo = _mm_and_si128(_mm_srai_epi16(lo, 1), mask);
    hi = _mm_and_si128(_mm_srai_epi16(hi, 1), mask);
  }
  const __m256 f = _mm256_set1_ps(factor);
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtph_ps(lo), f));
  _mm256_storeu_ps(out + 8, _mm256_mul_ps(_mm256_cvtph_ps(hi), f));
  return true;
}

TERN_PANEL_TARGET void decode_panel_avx2(const QuantWeightView& w, const float* fp8,
                                         uint64_t n0, int64_t cols, uint64_t k0, uint64_t k1,
                                         float* rows) {
  alignas(32) float tile[16][16];
  for (int64_t j = cols; j < 16; ++j) {
    for (int i = 0; i < 16; ++i) tile[j][i] = 0.0f;
  }
  const bool nf4 = w.desc.format == QuantWeightFormat::Nf4 ||
                   w.desc.format == QuantWeightFormat::Nf4DoubleQuant;
  for (uint64_t v = k0; v < k1; v += 16) {
    for (int64_t j = 0; j < cols; ++j) {
      const uint64_t row = n0 + static_cast<uint64_t>(j);
      if (nf4) {
        nf4_vector(w, row, v, tile[j]);
      } else if (!fp8_vector(w, row, v, tile[j])) {
        const float scale = quant_scale_at(w, row, v);
        for (uint64_t i = 0; i < 16; ++i) {
          tile[j][i] = v + i < w.desc.cols ? fp8[w.codes[row * w.layout.row_bytes + v + i]] * scale
                                           : 0.0f;
        }
      }
    }
    float* out = rows + (v - k0) * 16;
    transpose8(&tile[0][0], 16, out, 16);
    transpose8(&tile[8][0], 16, out + 8, 16);
    transpose8(&tile[0][8], 16, out + 8 * 16, 16);
    transpose8(&tile[8][8], 16, out + 8 * 16 + 8, 16);
  }
}

}  // namespace

PanelDecodeFn panel_decode_avx2() {
  return __builtin_cpu_supports("avx2") && cpu_has_f16c() ? &decode_panel_avx2 : nullptr;
}

}  // namespace tern::cpu::quant_detail

#else

namespace tern::cpu::quant_detail {
PanelDecodeFn panel_decode_avx2() { return nullptr; }
}  // namespace tern::cpu::quant_detail

#endif
