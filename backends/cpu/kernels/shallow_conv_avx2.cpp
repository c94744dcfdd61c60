// The shallow convolution's row kernel in AVX2 + FMA: output channels in groups of NV ymm
// vectors — one packed panel (16 channels, NV = 2) over blocks of 6 output pixels, or, when 17-24
// channels are left, that panel and the first half of the next (NV = 3) over blocks of 4 pixels
// (ShuffleNet's 24-channel stem: no half-empty second panel) — so 12 ymm accumulators, NV weight
// vectors and one broadcast input fill the 16 registers; per tap NV weight vectors and one
// broadcast input value per pixel; interior blocks skip the bounds checks, border pixels go one
// at a time with them. Columns past out_c are masked (maskload / maskstore), so nothing past
// out_c floats of a pixel of y or the residual is touched. Grouped convolutions (the narrow groups
// of RegNet and ResNeXt, dispatched here on AVX2 and AVX-512 machines alike) run group by group:
// the window reads the group's C/G input channels, the group's packed weight and its O/G
// columns of y, one vector (NV = 1, blocks of up to 12 pixels) when a group has at most 8
// columns; a row's blocks are of as equal sizes as they can be (grouped_row).
// Per-function target attributes: runs only when dispatch saw AVX2 and FMA.
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/shallow_conv.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::shallow_detail {
namespace {

static_assert(kPanelWidth == 16, "the AVX2 shallow conv assumes 16-float panels");
constexpr int kMaxVectors = 3;

struct Row {
  const ConvProblem* p;
  const float* xn;                 ///< image n of x, at the group's first input channel
  int64_t group_c;                 ///< input channels the window reads (C / G)
  /// Per vector v: where its 8 columns start in their panel (the panel's 16 bias floats, then
  /// 16 weights per tap): vector v is columns 8v.. of the group.
  const float* w[kMaxVectors];
  float* y;                        ///< row oy of y, from the group's first column
  const float* residual;           ///< the same place in the residual, or null
  int64_t iy0;                     ///< oy * stride_h - pad_top
  bool full;                       ///< every column of the group is < out_c
  bool quad;                       ///< exactly 4 columns (one vector): 128-bit loads and stores
  __m256i mask[kMaxVectors];       ///< lanes of each vector that are < out_c
};

template <int NP, int NV>
TERN_AVX2_TARGET inline void init(const Row& r, __m256 (&acc)[NP][NV]) {
#pragma GCC unroll 3
  for (int v = 0; v < NV; ++v) {
    const __m256 bias = _mm256_loadu_ps(r.w[v]);
#pragma GCC unroll 6
    for (int q = 0; q < NP; ++q) acc[q][v] = bias;
  }
}

/// Adds the residual, clamps (min(hi, x) then max(lo, .): both return their second operand when
/// one is NaN, so NaN propagates) and stores NP pixels from ox.
template <int NP, int NV>
TERN_AVX2_TARGET inline void store(const Row& r, int64_t ox, const __m256 (&acc)[NP][NV]) {
  const ConvProblem& p = *r.p;
  const __m256 lo = _mm256_set1_ps(p.out_min);
  const __m256 hi = _mm256_set1_ps(p.out_max);
#pragma GCC unroll 6
  for (int q = 0; q < NP; ++q) {
#pragma GCC unroll 3
    for (int h = 0; h < NV; ++h) {
      const int64_t at = (ox + q) * p.out_c + h * 8;
      __m256 s = acc[q][h];
      if (r.quad) {  // ResNeXt's groups of 4: an xmm each (AMD's masked ymm moves are slow)
        __m128 v = _mm256_castps256_ps128(s);
        if (r.residual != nullptr) v = _mm_add_ps(v, _mm_loadu_ps(r.residual + at));
        v = _mm_max_ps(_mm256_castps256_ps128(lo), _mm_min_ps(_mm256_castps256_ps128(hi), v));
        _mm_storeu_ps(r.y + at, v);
        continue;
      }
      if (r.residual != nullptr) {
        s = _mm256_add_ps(s, r.full ? _mm256_loadu_ps(r.residual + at)
                                    : _mm256_maskload_ps(r.residual + at, r.mask[h]));
      }
      s = _mm256_max_ps(lo, _mm256_min_ps(hi, s));
      if (r.full) {
        _mm256_storeu_ps(r.y + at, s);
      } else {
        _mm256_maskstore_ps(r.y + at, r.mask[h], s);
      }
    }
  }
}

/// NP pixels from ox. CHECK: skip taps outside the row (border pixels).
template <int NP, int NV, bool CHECK>
TERN_AVX2_TARGET inline void block(const Row& r, int64_t ox) {
  const ConvProblem& p = *r.p;
  __m256 acc[NP][NV];
  init<NP, NV>(r, acc);
  const int64_t c_n = p.in_c;  // floats per input pixel
  const int64_t g_c = r.group_c;
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = r.iy0 + ky * p.dilation_h;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = r.xn + iy * p.in_w * c_n;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix0 = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
      int64_t tap = kPanelWidth * (1 + (ky * p.kernel_w + kx) * g_c);
      for (int64_t c = 0; c < g_c; ++c, tap += kPanelWidth) {
        __m256 wv[NV];
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) wv[v] = _mm256_loadu_ps(r.w[v] + tap);
#pragma GCC unroll 6
        for (int q = 0; q < NP; ++q) {
          const int64_t ix = ix0 + q * p.stride_w;
          if (CHECK && (ix < 0 || ix >= p.in_w)) continue;
          const __m256 xv = _mm256_broadcast_ss(xr + ix * c_n + c);
#pragma GCC unroll 3
          for (int v = 0; v < NV; ++v) acc[q][v] = _mm256_fmadd_ps(xv, wv[v], acc[q][v]);
        }
      }
    }
  }
  store<NP, NV>(r, ox, acc);
}

/// An interior block with the window width KW, channels C and stride S fixed (dilation 1): every
/// input offset is a constant from the block's first tap, so the loops unroll completely.
template <int NP, int NV, int KW, int C, int S>
TERN_AVX2_TARGET inline void fixed_block(const Row& r, int64_t ox) {
  const ConvProblem& p = *r.p;
  __m256 acc[NP][NV];
  init<NP, NV>(r, acc);
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = r.iy0 + ky;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = r.xn + (iy * p.in_w + ox * S - p.pad_left) * C;
    const int64_t row_tap = kPanelWidth * (1 + ky * KW * C);
#pragma GCC unroll 16
    for (int t = 0; t < KW * C; ++t) {  // tap t = kx * C + c: input offset t from a pixel's start
      __m256 wv[NV];
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) wv[v] = _mm256_loadu_ps(r.w[v] + row_tap + t * kPanelWidth);
#pragma GCC unroll 6
      for (int q = 0; q < NP; ++q) {
        const __m256 xv = _mm256_broadcast_ss(xr + q * S * C + t);
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) acc[q][v] = _mm256_fmadd_ps(xv, wv[v], acc[q][v]);
      }
    }
  }
  store<NP, NV>(r, ox, acc);
}

/// 16 zeros: where a grouped block's border pixel reads a tap outside the row.
alignas(64) const float kZeroPixel[16] = {};

/// A block of NP pixels of a grouped conv with CG input channels a group (4, 8 or 16): the
/// channel loop unrolled, each pixel's input through its own pointer, so the accumulators stay in
/// registers (with a run-time channel count and pixel stride GCC keeps them on the stack).
/// CHECK: a tap outside the row reads zeros instead (border pixels; no branch in the loop).
template <int NP, int NV, int CG, bool CHECK>
TERN_AVX2_TARGET inline void grouped_block(const Row& r, int64_t ox) {
  const ConvProblem& p = *r.p;
  __m256 acc[NP][NV];
  init<NP, NV>(r, acc);
  const int64_t pixel_step = p.stride_w * p.in_c;
  constexpr bool kBases = !CHECK && NP > 6;
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = r.iy0 + ky * p.dilation_h;
    if (iy < 0 || iy >= p.in_h) continue;
    const float* xr = r.xn + iy * p.in_w * p.in_c;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix0 = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
      // Each pixel's input (or the zero pixel) in xq; in interior blocks of more than 6 pixels
      // (one vector: 12 pointers would not fit the general registers) pixel q is read at base
      // q / 3 (pixels 0, 3, 6 and 9) plus q % 3 pixel steps instead, an addressing mode.
      const float* xq[NP];
      const float* xb[4];
      if constexpr (kBases) {
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) xb[b] = xr + ix0 * p.in_c + 3 * b * pixel_step;
      } else {
#pragma GCC unroll 12
        for (int q = 0; q < NP; ++q) {
          if (CHECK) {
            const int64_t ix = ix0 + q * p.stride_w;
            xq[q] = ix >= 0 && ix < p.in_w ? xr + ix * p.in_c : kZeroPixel;
          } else {
            xq[q] = xr + ix0 * p.in_c + q * pixel_step;
          }
        }
      }
      const float* w = r.w[0] + kPanelWidth * (1 + (ky * p.kernel_w + kx) * CG);
#pragma GCC unroll 16
      for (int c = 0; c < CG; ++c) {
        __m256 wv[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) wv[v] = _mm256_loadu_ps(w + c * kPanelWidth + 8 * v);
#pragma GCC unroll 12
        for (int q = 0; q < NP; ++q) {
          const __m256 xv = _mm256_broadcast_ss(
              kBases ? xb[q / 3] + (q % 3) * pixel_step + c : xq[q] + c);
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[q][v] = _mm256_fmadd_ps(xv, wv[v], acc[q][v]);
        }
      }
    }
  }
  store<NP, NV>(r, ox, acc);
}

/// NP pixels from ox of a grouped conv: CHECK when the block reaches outside the interior.
template <int NP, int NV, int CG>
TERN_AVX2_TARGET inline void grouped_pixels(const Row& r, int64_t ox, int64_t in0, int64_t in1) {
  if (ox < in0 || ox + NP > in1) {
    grouped_block<NP, NV, CG, true>(r, ox);
  } else {
    grouped_block<NP, NV, CG, false>(r, ox);
  }
}

/// NP pixels from ox for a block size np (1 <= np <= NP) known at run time.
template <int NV, int CG, int NP = 12 / NV>
TERN_AVX2_TARGET inline void grouped_pixels_n(const Row& r, int np, int64_t ox, int64_t in0,
                                              int64_t in1) {
  if constexpr (NP > 1) {
    if (np < NP) return grouped_pixels_n<NV, CG, NP - 1>(r, np, ox, in0, in1);
  }
  grouped_pixels<NP, NV, CG>(r, ox, in0, in1);
}

/// A whole row of a grouped conv with CG channels a group: as few blocks as the 12 accumulators
/// allow (12 / NV pixels at most), their sizes as equal as possible — 14 pixels of two vectors
/// are blocks of 5, 5 and 4, not 6, 6, 1 and 1. A block's accumulators are its independent FMA
/// chains: with fewer than 8 (two FMA pipes, four cycles of latency) the block waits on the
/// latency, a one-pixel block of one vector 8x longer per FMA than a full one. Border blocks
/// read zeros outside the row.
template <int NV, int CG>
TERN_AVX2_TARGET void grouped_row(const Row& r, int64_t in0, int64_t in1) {
  constexpr int kBlock = 12 / NV;
  const int64_t out_w = r.p->out_w;
  if (out_w <= 0) return;
  const int64_t blocks = (out_w + kBlock - 1) / kBlock;
  const int64_t base = out_w / blocks, extra = out_w % blocks;
  int64_t ox = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int np = static_cast<int>(base + (b < extra ? 1 : 0));
    grouped_pixels_n<NV, CG>(r, np, ox, in0, in1);
    ox += np;
  }
}

/// One group of NV vectors over the row: blocks of 12 / NV pixels (12 accumulators), then a half
/// block, then (one vector) blocks of 3 pixels.
template <int NV>
TERN_AVX2_TARGET void group_of_row(const Row& r, int64_t in0, int64_t in1) {
  constexpr int kBlock = 12 / NV;
  constexpr int kHalf = kBlock / 2;
  const ConvProblem& p = *r.p;
  // RegNetX's and ResNeXt's widest groups (16 channels in, 16 out), RegNetY's (8) and ResNeXt's
  // narrowest (4; half of each vector idle).
  if (p.groups > 1) {
    if (NV == 2 && r.group_c == 16 && r.full) return grouped_row<2, 16>(r, in0, in1);
    if (NV == 1 && r.group_c == 8) return grouped_row<1, 8>(r, in0, in1);
    if (NV == 1 && r.group_c == 4) return grouped_row<1, 4>(r, in0, in1);
  }
  // Border pixels check each tap; wide borders (a window dilated across whole rows: folded
  // 3-D convs, packed_conv.cpp) in whole blocks too.
  int64_t ox = 0;
  for (; ox + kBlock <= in0; ox += kBlock) block<kBlock, NV, true>(r, ox);
  for (; ox < in0; ++ox) block<1, NV, true>(r, ox);
  ox = in0;
  // The stems of MobileNet and friends (3x3/2 on RGB): the whole window fixed.
  if (p.kernel_w == 3 && p.in_c == 3 && p.groups == 1 && p.stride_w == 2 && p.dilation_w == 1 &&
      p.dilation_h == 1) {
    for (; ox + kBlock <= in1; ox += kBlock) fixed_block<kBlock, NV, 3, 3, 2>(r, ox);
  }
  for (; ox + kBlock <= in1; ox += kBlock) block<kBlock, NV, false>(r, ox);
  if (ox + kHalf <= in1) {
    block<kHalf, NV, false>(r, ox);
    ox += kHalf;
  }
  if (NV == 1) {
    for (; ox + 3 <= in1; ox += 3) block<3, NV, false>(r, ox);
  }
  for (; ox < in1; ++ox) block<1, NV, false>(r, ox);
  for (ox = in1; ox + kBlock <= p.out_w; ox += kBlock) block<kBlock, NV, true>(r, ox);
  for (; ox < p.out_w; ++ox) block<1, NV, true>(r, ox);
}

TERN_AVX2_TARGET void row_avx2(const ConvProblem& p, int64_t n, int64_t oy) {
  const int64_t g_c = p.in_c / p.groups, g_o = p.out_c / p.groups;
  const int64_t k = p.kernel_h * p.kernel_w * g_c;
  const int64_t panels = (g_o + kPanelWidth - 1) / kPanelWidth;  // per group
  const int64_t panel_stride = kPanelWidth * (k + 1);
  const int64_t at = (n * p.out_h + oy) * p.out_w * p.out_c;
  Row r;
  r.p = &p;
  r.group_c = g_c;
  r.iy0 = oy * p.stride_h - p.pad_top;
  int64_t in0, in1;
  interior_columns(p, &in0, &in1);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t g = 0; g < p.groups; ++g) {
    r.xn = p.x + n * p.in_h * p.in_w * p.in_c + g * g_c;
    const float* packed = p.packed + g * panels * panel_stride;
    for (int64_t j = 0; j < panels;) {
      const int64_t cols = g_o - j * kPanelWidth;
      // 17-24 columns left: this panel and the first half of the next in one pass; at most 8:
      // one vector.
      const int nv = cols <= 8 ? 1 : cols > kPanelWidth && cols <= kPanelWidth + 8 ? 3 : 2;
      const float* panel = packed + j * panel_stride;
      r.w[0] = panel;
      r.w[1] = nv >= 2 ? panel + 8 : nullptr;
      r.w[2] = nv == 3 ? panel + panel_stride : nullptr;
      const int64_t col0 = g * g_o + j * kPanelWidth;  // the pass's first column of y
      r.y = p.y + at + col0;
      r.residual = p.residual != nullptr ? p.residual + at + col0 : nullptr;
      r.full = cols >= 8 * nv;
      r.quad = cols == 4;
      // Lane l of vector v is column 8v + l: kept when < cols.
      for (int v = 0; v < kMaxVectors; ++v) {
        const int64_t left = cols - 8 * v;
        const int32_t n_lanes = static_cast<int32_t>(left < 0 ? 0 : (left > 8 ? 8 : left));
        r.mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_lanes), lanes);
      }
      if (nv == 3) {
        group_of_row<3>(r, in0, in1);
      } else if (nv == 2) {
        group_of_row<2>(r, in0, in1);
      } else {
        group_of_row<1>(r, in0, in1);
      }
      j += nv == 3 ? 2 : 1;
    }
  }
}

}  // namespace

RowFn avx2_row() { return &row_avx2; }

}  // namespace tern::cpu::shallow_detail

#else  // !__x86_64__

namespace tern::cpu::shallow_detail {
RowFn avx2_row() { return nullptr; }
}  // namespace tern::cpu::shallow_detail

#endif
