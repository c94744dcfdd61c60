// The shallow convolution's row kernel in AVX-512F: output pixels in blocks (8 pixels x 2 panels
// or 12 pixels x 1 panel of 16 channels in zmm accumulators), per tap one weight vector per
// panel and one broadcast input value per pixel; interior blocks skip the bounds checks, border
// pixels go one at a time with them. The last panel's columns are masked, so nothing past
// out_c floats of a pixel of y or the residual is touched. Per-function target attributes: runs
// only when dispatch saw AVX-512F.
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/shallow_conv.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::shallow_detail {
namespace {

struct Row {
  const ConvProblem* p;
  const float* xn;         ///< image n of x
  const float* panels;     ///< the first panel of this block's panels
  int64_t panel_stride;
  float* y;                ///< row oy of y
  const float* residual;   ///< row oy of the residual, or null
  int64_t iy0;             ///< oy * stride_h - pad_top
  __mmask16 mask[2];       ///< columns of each panel of the block
};

/// Every accumulator of an NP x NV block starts at its panel's bias.
template <int NP, int NV>
TERN_AVX512_TARGET inline void init(const Row& r, __m512 (&acc)[NP][NV]) {
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const __m512 bias = _mm512_loadu_ps(r.panels + v * r.panel_stride);
#pragma GCC unroll 12
    for (int q = 0; q < NP; ++q) acc[q][v] = bias;
  }
}

/// Adds the residual, clamps (max(lo, min(hi, x)) returns x when x is NaN: NaN propagates; the
/// maskz forms with a full mask because GCC 12's plain _mm512_max_ps warns of an uninitialized
/// pass-through) and stores an NP x NV block of pixels from ox.
template <int NP, int NV>
TERN_AVX512_TARGET inline void store(const Row& r, int64_t ox, const __m512 (&acc)[NP][NV]) {
  const ConvProblem& p = *r.p;
  const __m512 lo = _mm512_set1_ps(p.out_min);
  const __m512 hi = _mm512_set1_ps(p.out_max);
#pragma GCC unroll 12
  for (int q = 0; q < NP; ++q) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const int64_t at = (ox + q) * p.out_c + v * kPanelWidth;
      __m512 s = acc[q][v];
      if (r.residual != nullptr) {
        s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(r.mask[v], r.residual + at));
      }
      s = _mm512_maskz_max_ps(0xFFFF, lo, _mm512_maskz_min_ps(0xFFFF, hi, s));
      _mm512_mask_storeu_ps(r.y + at, r.mask[v], s);
    }
  }
}

/// NP pixels from ox x NV panels. CHECK: skip taps outside the row (border pixels).
template <int NP, int NV, bool CHECK>
TERN_AVX512_TARGET inline void block(const Row& r, int64_t ox) {
  const ConvProblem& p = *r.p;
  __m512 acc[NP][NV];
  init<NP, NV>(r, acc);
  const int64_t c_n = p.in_c;
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = r.iy0 + ky * p.dilation_h;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = r.xn + iy * p.in_w * c_n;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix0 = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
      const float* w = r.panels + kPanelWidth * (1 + (ky * p.kernel_w + kx) * c_n);
      for (int64_t c = 0; c < c_n; ++c, w += kPanelWidth) {
        __m512 wv[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(w + v * r.panel_stride);
#pragma GCC unroll 12
        for (int q = 0; q < NP; ++q) {
          const int64_t ix = ix0 + q * p.stride_w;
          if (CHECK && (ix < 0 || ix >= p.in_w)) continue;
          const __m512 xv = _mm512_set1_ps(xr[ix * c_n + c]);
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[q][v] = _mm512_fmadd_ps(xv, wv[v], acc[q][v]);
        }
      }
    }
  }
  store<NP, NV>(r, ox, acc);
}

/// An interior block with the window width KW, channels C and stride S fixed (dilation 1): every
/// input offset is a constant from the block's first tap, so the loops unroll completely.
template <int NP, int NV, int KW, int C, int S>
TERN_AVX512_TARGET inline void fixed_block(const Row& r, int64_t ox) {
  const ConvProblem& p = *r.p;
  __m512 acc[NP][NV];
  init<NP, NV>(r, acc);
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = r.iy0 + ky;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = r.xn + (iy * p.in_w + ox * S - p.pad_left) * C;
    const float* w = r.panels + kPanelWidth * (1 + ky * KW * C);
#pragma GCC unroll 16
    for (int t = 0; t < KW * C; ++t) {  // tap t = kx * C + c: input offset t from a pixel's start
      __m512 wv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(w + t * kPanelWidth + v * r.panel_stride);
#pragma GCC unroll 12
      for (int q = 0; q < NP; ++q) {
        const __m512 xv = _mm512_set1_ps(xr[q * S * C + t]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[q][v] = _mm512_fmadd_ps(xv, wv[v], acc[q][v]);
      }
    }
  }
  store<NP, NV>(r, ox, acc);
}

template <int NV>
TERN_AVX512_TARGET void panels_of_row(const Row& r, int64_t in0, int64_t in1) {
  constexpr int kBlock = NV == 2 ? 8 : 12;
  const ConvProblem& p = *r.p;
  // Border pixels check each tap; wide borders (a window dilated across whole rows: folded
  // 3-D convs, packed_conv.cpp) in whole blocks too.
  int64_t ox = 0;
  for (; ox + kBlock <= in0; ox += kBlock) block<kBlock, NV, true>(r, ox);
  for (; ox < in0; ++ox) block<1, NV, true>(r, ox);
  ox = in0;
  // The stems of MobileNet (3x3/2 on RGB): the whole window fixed.
  if (p.kernel_w == 3 && p.in_c == 3 && p.stride_w == 2 && p.dilation_w == 1 &&
      p.dilation_h == 1) {
    for (; ox + kBlock <= in1; ox += kBlock) fixed_block<kBlock, NV, 3, 3, 2>(r, ox);
  }
  // DLA's stem (7x7/1 on RGB, 16 outputs).
  if (p.kernel_w == 7 && p.in_c == 3 && p.stride_w == 1 && p.dilation_w == 1 &&
      p.dilation_h == 1) {
    for (; ox + kBlock <= in1; ox += kBlock) fixed_block<kBlock, NV, 7, 3, 1>(r, ox);
  }
  for (; ox + kBlock <= in1; ox += kBlock) block<kBlock, NV, false>(r, ox);
  if (ox + 4 <= in1) {
    block<4, NV, false>(r, ox);
    ox += 4;
  }
  for (; ox < in1; ++ox) block<1, NV, false>(r, ox);
  for (ox = in1; ox + kBlock <= p.out_w; ox += kBlock) block<kBlock, NV, true>(r, ox);
  for (; ox < p.out_w; ++ox) block<1, NV, true>(r, ox);
}

TERN_AVX512_TARGET void row_avx512(const ConvProblem& p, int64_t n, int64_t oy) {
  const int64_t k = p.kernel_h * p.kernel_w * p.in_c;
  const int64_t panels = (p.out_c + kPanelWidth - 1) / kPanelWidth;
  const int64_t at = (n * p.out_h + oy) * p.out_w * p.out_c;
  Row r;
  r.p = &p;
  r.xn = p.x + n * p.in_h * p.in_w * p.in_c;
  r.panel_stride = kPanelWidth * (k + 1);
  r.iy0 = oy * p.stride_h - p.pad_top;
  int64_t in0, in1;
  interior_columns(p, &in0, &in1);
  for (int64_t j = 0; j < panels; j += 2) {
    const int64_t nv = panels - j >= 2 ? 2 : 1;
    r.panels = p.packed + j * r.panel_stride;
    r.y = p.y + at + j * kPanelWidth;
    r.residual = p.residual != nullptr ? p.residual + at + j * kPanelWidth : nullptr;
    for (int64_t v = 0; v < nv; ++v) {
      const int64_t cols = p.out_c - (j + v) * kPanelWidth;
      r.mask[v] = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1u);
    }
    if (nv == 2) {
      panels_of_row<2>(r, in0, in1);
    } else {
      panels_of_row<1>(r, in0, in1);
    }
  }
}

}  // namespace

RowFn avx512_row() { return &row_avx512; }

}  // namespace tern::cpu::shallow_detail

#else  // !__x86_64__

namespace tern::cpu::shallow_detail {
RowFn avx512_row() { return nullptr; }
}  // namespace tern::cpu::shallow_detail

#endif
