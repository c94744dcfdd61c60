// The direct grouped convolution's row kernels in AVX-512F for narrow groups of equal width in
// and out. Groups of 4 or 8 (ResNeXt's first stages, RegNetY): one zmm holds 16 / CG whole groups
// (lane g·CG + o: output channel o of the vector's group g), which in NHWC are 16 consecutive
// channels of a pixel of x and of y. Per tap and input channel c the pixel's 16 input floats
// are loaded once and lane g·CG + o gets channel c of group g by one permute (vpermps), so every
// FMA does 16 useful multiply-adds — the AVX2 kernel it replaces on AVX-512 machines broadcasts
// one float per FMA into 8 lanes, half of them idle for groups of 4. A call runs a range of
// output rows vector by vector: the vector's taps' weights are gathered once from the groups'
// packed panels into a stack block of 16-float rows (bias first), then every row of the range.
// Interior blocks skip the bounds checks; border blocks check each tap. A last vector of fewer
// groups is masked. Groups of 16 (RegNetX): one group a zmm, see block16.
// Per-function target attributes: runs only when dispatch saw AVX-512F.
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/shallow_conv.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::shallow_detail {
namespace {

/// Most taps (kernel_h · kernel_w) of a window the kernel takes (its weight block is on the stack).
constexpr int64_t kMaxTaps = 25;

template <int CG>
struct Vec {
  const ConvProblem* p;
  const float* x;          ///< image n of x, at the vector's first channel
  float* y;                ///< row oy of y, at the vector's first channel
  const float* residual;   ///< the same in the residual, or null
  int64_t iy0;             ///< oy * stride_h - pad_top
  const float* w;          ///< [1 + taps · CG][16]: the bias, then row tap · CG + c
  __m512i idx[CG];         ///< lane l takes input lane (l / CG) · CG + c
  __mmask16 mask;          ///< the lanes of the vector's groups (fewer in the last vector)
};

/// The NP finished pixels from ox: the residual, then the clamp (max(lo, min(hi, x)) returns x
/// when x is NaN: NaN propagates; the maskz forms with a full mask as in shallow_conv_avx512.cpp),
/// stored in the vector's lanes.
template <int CG, int NP>
TERN_AVX512_TARGET inline void store(const Vec<CG>& v, int64_t ox, __m512 (&acc)[NP]) {
  const ConvProblem& p = *v.p;
  const __m512 lo = _mm512_set1_ps(p.out_min);
  const __m512 hi = _mm512_set1_ps(p.out_max);
#pragma GCC unroll 14
  for (int q = 0; q < NP; ++q) {
    const int64_t at = (ox + q) * p.out_c;
    __m512 s = acc[q];
    if (v.residual != nullptr) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(v.mask, v.residual + at));
    s = _mm512_maskz_max_ps(0xFFFF, lo, _mm512_maskz_min_ps(0xFFFF, hi, s));
    _mm512_mask_storeu_ps(v.y + at, v.mask, s);
  }
}

/// NP pixels from ox. CHECK: skip taps outside the row (border pixels).
template <int CG, int NP, bool CHECK>
TERN_AVX512_TARGET inline void block(const Vec<CG>& v, int64_t ox) {
  const ConvProblem& p = *v.p;
  __m512 acc[NP];
  const __m512 bias = _mm512_loadu_ps(v.w);
#pragma GCC unroll 12
  for (int q = 0; q < NP; ++q) acc[q] = bias;
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = v.iy0 + ky * p.dilation_h;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = v.x + iy * p.in_w * p.in_c;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix0 = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
      const float* w = v.w + kPanelWidth * (1 + (ky * p.kernel_w + kx) * CG);
      __m512 wv[CG];
#pragma GCC unroll 8
      for (int c = 0; c < CG; ++c) wv[c] = _mm512_loadu_ps(w + c * kPanelWidth);
#pragma GCC unroll 12
      for (int q = 0; q < NP; ++q) {
        const int64_t ix = ix0 + q * p.stride_w;
        if (CHECK && (ix < 0 || ix >= p.in_w)) continue;
        const __m512 xv = _mm512_maskz_loadu_ps(v.mask, xr + ix * p.in_c);
#pragma GCC unroll 8
        for (int c = 0; c < CG; ++c) {
          acc[q] = _mm512_fmadd_ps(_mm512_maskz_permutexvar_ps(0xFFFF, v.idx[c], xv), wv[c], acc[q]);
        }
      }
    }
  }
  store(v, ox, acc);
}

/// NP pixels from ox, with the bounds checks when the block reaches outside the interior.
template <int CG, int NP>
TERN_AVX512_TARGET inline void pixels(const Vec<CG>& v, int64_t ox, int64_t in0, int64_t in1) {
  if (ox < in0 || ox + NP > in1) {
    block<CG, NP, true>(v, ox);
  } else {
    block<CG, NP, false>(v, ox);
  }
}

/// A row of one vector: blocks of kBlock pixels (12 accumulators for groups of 4, 8 for groups
/// of 8, which keep 8 weight and 8 index vectors in registers too), then a half block, then
/// pairs, then a single pixel. Border blocks check each tap (narrow rows, such as 7 pixels, are
/// mostly border).
template <int CG>
TERN_AVX512_TARGET void vector_row(const Vec<CG>& v, int64_t in0, int64_t in1) {
  constexpr int kBlock = CG == 4 ? 12 : 8;
  const int64_t out_w = v.p->out_w;
  int64_t ox = 0;
  for (; ox + kBlock <= out_w; ox += kBlock) pixels<CG, kBlock>(v, ox, in0, in1);
  if (ox + kBlock / 2 <= out_w) {
    pixels<CG, kBlock / 2>(v, ox, in0, in1);
    ox += kBlock / 2;
  }
  for (; ox + 2 <= out_w; ox += 2) pixels<CG, 2>(v, ox, in0, in1);
  if (ox < out_w) pixels<CG, 1>(v, ox, in0, in1);
}

/// Output rows [r0, r1) (over the batch) of p, vector by vector: each vector's weights are
/// gathered once for all the rows.
template <int CG>
TERN_AVX512_TARGET void grouped_rows(const ConvProblem& p, int64_t r0, int64_t r1) {
  constexpr int64_t kGroups = 16 / CG;  // whole groups a vector holds
  const int64_t taps = p.kernel_h * p.kernel_w;
  const int64_t k = taps * CG;
  const int64_t panel_stride = kPanelWidth * (k + 1);  // one panel a group (CG <= 16 columns)
  alignas(64) float w[(1 + kMaxTaps * CG) * kPanelWidth];
  Vec<CG> v;
  v.p = &p;
  v.w = w;
  const __m512i group_first = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
  const __m512i pair_first = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
  for (int c = 0; c < CG; ++c) {
    v.idx[c] = _mm512_add_epi32(CG == 4 ? group_first : pair_first, _mm512_set1_epi32(c));
  }
  int64_t in0, in1;
  interior_columns(p, &in0, &in1);
  for (int64_t g0 = 0; g0 < p.groups; g0 += kGroups) {
    // Row r (the bias, then tap · CG + c) lane g · CG + o: row r, column o of group g0 + g's panel.
    // The last vector may hold fewer groups (an odd count of groups of 8): its other lanes are
    // masked off in x, y and the residual, and their weights are zeros.
    const int64_t groups = p.groups - g0 < kGroups ? p.groups - g0 : kGroups;
    v.mask = static_cast<__mmask16>(groups == kGroups ? 0xFFFFu : (1u << (groups * CG)) - 1u);
    if (groups < kGroups) std::memset(w, 0, sizeof(float) * (k + 1) * kPanelWidth);
    for (int64_t g = 0; g < groups; ++g) {
      const float* panel = p.packed + (g0 + g) * panel_stride;
      for (int64_t r = 0; r <= k; ++r) {
        std::memcpy(w + r * kPanelWidth + g * CG, panel + r * kPanelWidth, CG * sizeof(float));
      }
    }
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / p.out_h, oy = row % p.out_h;
      const int64_t at = row * p.out_w * p.out_c;
      v.iy0 = oy * p.stride_h - p.pad_top;
      v.x = p.x + n * p.in_h * p.in_w * p.in_c + g0 * CG;
      v.y = p.y + at + g0 * CG;
      v.residual = p.residual != nullptr ? p.residual + at + g0 * CG : nullptr;
      vector_row<CG>(v, in0, in1);
    }
  }
}

alignas(64) constexpr float kZeros16[16] = {};

/// Groups of 16 channels in and out (RegNetX): one group a zmm, so no lane shuffles — per tap and
/// input channel c one weight vector (row tap · 16 + c of the group's packed panel, read in
/// place) and, per pixel, one FMA whose input is channel c broadcast from memory (an embedded
/// broadcast: a load, not a shuffle; the permutes of the narrower kernel would be 16 per pixel
/// and tap on the one shuffle port). NP pixels from ox; CHECK: taps outside the row read zeros.
template <int NP, bool CHECK>
TERN_AVX512_TARGET inline void block16(const Vec<16>& v, int64_t ox) {
  const ConvProblem& p = *v.p;
  __m512 acc[NP];
  const __m512 bias = _mm512_loadu_ps(v.w);
#pragma GCC unroll 14
  for (int q = 0; q < NP; ++q) acc[q] = bias;
  const int64_t step = p.stride_w * p.in_c;  // floats from one pixel's input to the next's
  // Hidden from the optimiser: knowing the zeros, GCC turned the border FMAs into selects.
  const float* zeros = kZeros16;
  asm("" : "+r"(zeros));
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = v.iy0 + ky * p.dilation_h;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = v.x + iy * p.in_w * p.in_c;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix0 = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
      const float* w = v.w + kPanelWidth * (1 + (ky * p.kernel_w + kx) * 16);
      // Pixel q's 16 input channels of this tap; outside the row (border blocks) 16 zeros, so
      // the FMAs run without a branch.
      const float* px[NP];
#pragma GCC unroll 14
      for (int q = 0; q < NP; ++q) {
        const int64_t ix = ix0 + q * p.stride_w;
        px[q] = !CHECK ? xr + ix0 * p.in_c + q * step
                       : (ix < 0 || ix >= p.in_w ? zeros : xr + ix * p.in_c);
      }
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        const __m512 wv = _mm512_loadu_ps(w + c * kPanelWidth);
#pragma GCC unroll 14
        for (int q = 0; q < NP; ++q) acc[q] = _mm512_fmadd_ps(_mm512_set1_ps(px[q][c]), wv, acc[q]);
      }
    }
  }
  store(v, ox, acc);
}

template <int NP>
TERN_AVX512_TARGET inline void pixels16(const Vec<16>& v, int64_t ox, int64_t in0, int64_t in1) {
  if (ox < in0 || ox + NP > in1) {
    block16<NP, true>(v, ox);
  } else {
    block16<NP, false>(v, ox);
  }
}

/// Output rows [r0, r1) of p, group by group (a group's panel, 9.3 KiB for 3x3, stays in L1
/// over its rows); each row in blocks of 14 pixels (14 accumulators), then 7, then pairs, then one.
TERN_AVX512_TARGET void grouped16_rows(const ConvProblem& p, int64_t r0, int64_t r1) {
  const int64_t k = p.kernel_h * p.kernel_w * 16;
  int64_t in0, in1;
  interior_columns(p, &in0, &in1);
  Vec<16> v;
  v.p = &p;
  v.mask = 0xFFFF;
  for (int64_t g = 0; g < p.groups; ++g) {
    v.w = p.packed + g * kPanelWidth * (k + 1);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / p.out_h, oy = row % p.out_h;
      const int64_t at = row * p.out_w * p.out_c + g * 16;
      v.iy0 = oy * p.stride_h - p.pad_top;
      v.x = p.x + n * p.in_h * p.in_w * p.in_c + g * 16;
      v.y = p.y + at;
      v.residual = p.residual != nullptr ? p.residual + at : nullptr;
      const int64_t out_w = p.out_w;
      int64_t ox = 0;
      for (; ox + 14 <= out_w; ox += 14) pixels16<14>(v, ox, in0, in1);
      if (ox + 7 <= out_w) {
        pixels16<7>(v, ox, in0, in1);
        ox += 7;
      }
      for (; ox + 2 <= out_w; ox += 2) pixels16<2>(v, ox, in0, in1);
      if (ox < out_w) pixels16<1>(v, ox, in0, in1);
    }
  }
}

}  // namespace

RowsFn avx512_grouped_rows(const ConvProblem& p) {
  if (p.groups <= 1 || p.in_c % p.groups != 0 || p.out_c % p.groups != 0) return nullptr;
  const int64_t cg = p.in_c / p.groups;
  if (p.out_c / p.groups != cg || (cg != 4 && cg != 8 && cg != 16)) return nullptr;
  if (cg == 16) return &grouped16_rows;  // weights read in place: any window size
  if (p.kernel_h * p.kernel_w > kMaxTaps) return nullptr;
  return cg == 4 ? &grouped_rows<4> : &grouped_rows<8>;
}

}  // namespace tern::cpu::shallow_detail

#else  // !__x86_64__

namespace tern::cpu::shallow_detail {
RowsFn avx512_grouped_rows(const ConvProblem&) { return nullptr; }
}  // namespace tern::cpu::shallow_detail

#endif
