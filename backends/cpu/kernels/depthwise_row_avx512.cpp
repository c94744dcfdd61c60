// The depthwise row kernel in AVX-512F. Channels are the outer loop (16 per zmm, the tail
// masked, so nothing past `channels` floats of an input pixel, a weight tap or the output is
// touched); along the row, interior pixels (whole window inside the row) go 8 at a time: each
// tap's weight vector is loaded once for 8 independent accumulators, so loads stay near one
// per FMA and the FMA latency is hidden. For 5- and 7-wide windows (stride 1 or 2) the chunks
// that reach into the padding read its columns as zeros, so border pixels keep several
// accumulators too (ConvMixer's 7x7 over 32 columns: 6 border pixels one at a time, a chain of 49
// dependent FMAs each, took longer than the 26 interior ones); other windows clip each border
// pixel's taps one pixel at a time. The store applies the row's post-affine and residual.
// Per-function target attributes: no special flags, runs only when dispatch saw AVX-512F.
#include "backends/cpu/kernels/depthwise_row.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX512_TARGET __attribute__((target("avx512f,fma")))

namespace tern::cpu::depthwise_detail {
namespace {

/// Every accumulator starts at the bias of channels [c, c + 16) (masked by m; zeros without one).
template <int NP>
TERN_AVX512_TARGET inline void init(const DepthwiseRow& r, int64_t c, __mmask16 m,
                                    __m512 (&acc)[NP]) {
  const __m512 bias = r.bias != nullptr ? _mm512_maskz_loadu_ps(m, r.bias + c) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) acc[p] = bias;
}

/// Clamps NP accumulators, applies the row's post-affine and residual (when set) and stores them
/// to output pixels ox.. under mask m. max(lo, min(hi, x)) returns x when x is NaN: NaN
/// propagates. (The maskz forms with a full mask: GCC 12's plain _mm512_max_ps warns of an
/// uninitialized pass-through.)
template <int NP>
TERN_AVX512_TARGET inline void store(const DepthwiseRow& r, int64_t ox, int64_t c, __mmask16 m,
                                     const __m512 (&acc)[NP]) {
  const __m512 lo = _mm512_set1_ps(r.epi.lo);
  const __m512 hi = _mm512_set1_ps(r.epi.hi);
  const bool affine = r.post_scale != nullptr;
  const __m512 scale = affine ? _mm512_maskz_loadu_ps(m, r.post_scale + c) : lo;
  const __m512 shift = affine ? _mm512_maskz_loadu_ps(m, r.post_shift + c) : lo;
  float* out = r.out + ox * r.channels + c;
  const float* res = r.residual != nullptr ? r.residual + ox * r.channels + c : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    __m512 y = _mm512_maskz_max_ps(0xFFFF, lo, _mm512_maskz_min_ps(0xFFFF, hi, acc[p]));
    if (affine) y = _mm512_fmadd_ps(y, scale, shift);
    if (res != nullptr) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, res + p * r.channels));
    _mm512_mask_storeu_ps(out + p * r.channels, m, y);
  }
}

/// NP consecutive output pixels from ox, channels [c, c + 16) masked by m, taps [kx_lo, kx_hi)
/// of every non-null row (the caller checked they are inside the row for every pixel).
template <int NP>
TERN_AVX512_TARGET inline void pixels(const DepthwiseRow& r, int64_t ox, int64_t kx_lo,
                                      int64_t kx_hi, int64_t c, __mmask16 m) {
  const int64_t ch = r.channels;
  const int64_t step = r.stride_w * ch;  // from one output pixel's input to the next's
  __m512 acc[NP];
  init<NP>(r, c, m, acc);
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + (ox * r.stride_w - r.pad_left) * ch + c;
    const float* w = r.w + ky * r.kernel_w * ch + c;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
      const __m512 wv = _mm512_maskz_loadu_ps(m, w + kx * ch);
      const float* ip = in + kx * ch;
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        acc[p] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, ip + p * step), wv, acc[p]);
      }
    }
  }
  store<NP>(r, ox, c, m, acc);
}

/// NP output pixels from ox for a window KW wide at stride S (both fixed): each input column of
/// a row is loaded once and used by every pixel whose window covers it. With Clip, columns
/// outside [0, in_w) read as zeros (border pixels, still NP accumulators deep); without, the
/// caller checked every window lies inside the row.
template <int NP, int KW, int S, bool Clip>
TERN_AVX512_TARGET inline void window(const DepthwiseRow& r, int64_t ox, int64_t c, __mmask16 m) {
  constexpr int kCols = (NP - 1) * S + KW;
  const int64_t ch = r.channels;
  const int64_t ix0 = ox * S - r.pad_left;
  __m512 acc[NP];
  init<NP>(r, c, m, acc);
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    // Running pointers (not j * ch offsets: 14 of those spill out of the general registers).
    const float* in = row + ix0 * ch + c;
    __m512 col[kCols];
#pragma GCC unroll 32
    for (int j = 0; j < kCols; ++j, in += ch) {
      // A column outside the row loads under an empty mask: zeros, no fault, no branch.
      const bool inside = !Clip || (ix0 + j >= 0 && ix0 + j < r.in_w);
      col[j] = _mm512_maskz_loadu_ps(inside ? m : static_cast<__mmask16>(0), in);
    }
    const float* w = r.w + ky * KW * ch + c;
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx, w += ch) {
      const __m512 wv = _mm512_maskz_loadu_ps(m, w);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = _mm512_fmadd_ps(col[p * S + kx], wv, acc[p]);
    }
  }
  store<NP>(r, ox, c, m, acc);
}

/// NP pixels from ox: the unclipped window when all NP lie in the interior [in0, in1).
template <int NP, int KW, int S>
TERN_AVX512_TARGET inline void chunk(const DepthwiseRow& r, int64_t ox, int64_t in0, int64_t in1,
                                     int64_t c, __mmask16 m) {
  if (ox >= in0 && ox + NP <= in1) {
    window<NP, KW, S, false>(r, ox, c, m);
  } else {
    window<NP, KW, S, true>(r, ox, c, m);
  }
}

/// n pixels from ox (8, 4, 2 or 1).
template <int KW, int S>
TERN_AVX512_TARGET inline void chunk_of(int64_t n, const DepthwiseRow& r, int64_t ox, int64_t in0,
                                        int64_t in1, int64_t c, __mmask16 m) {
  if (n == 8) {
    chunk<8, KW, S>(r, ox, in0, in1, c, m);
  } else if (n == 4) {
    chunk<4, KW, S>(r, ox, in0, in1, c, m);
  } else if (n == 2) {
    chunk<2, KW, S>(r, ox, in0, in1, c, m);
  } else {
    chunk<1, KW, S>(r, ox, in0, in1, c, m);
  }
}

/// The chunk sizes 1, 2, 4, 8: the least >= n (8 past it), the greatest <= n.
inline int64_t size_at_least(int64_t n) { return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8; }
inline int64_t size_at_most(int64_t n) { return n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1; }

/// The whole row with the window and stride fixed: the left border [0, in0) in chunks reaching
/// into the padding (its columns read as zeros), the interior 8 pixels at a time, then what is
/// left in chunks of 8, 4, 2, 1 (clipped where they reach the right border).
template <int KW, int S>
TERN_AVX512_TARGET inline void row_run(const DepthwiseRow& r, int64_t in0, int64_t in1, int64_t c,
                                       __mmask16 m) {
  int64_t ox = 0;
  while (ox < in0) {
    int64_t n = size_at_least(in0 - ox);
    if (n > r.out_w - ox) n = size_at_most(r.out_w - ox);
    chunk_of<KW, S>(n, r, ox, in0, in1, c, m);
    ox += n;
  }
  for (; ox + 8 <= in1; ox += 8) window<8, KW, S, false>(r, ox, c, m);
  while (ox < r.out_w) {
    const int64_t n = size_at_most(r.out_w - ox);
    chunk_of<KW, S>(n, r, ox, in0, in1, c, m);
    ox += n;
  }
}

/// Channels [c, c + 16) of a row whose window is 5 or 7 wide at stride 1 or 2 (kept out of
/// line: inlined, it slows the 3-wide rows down).
__attribute__((noinline)) TERN_AVX512_TARGET void wide_block(const DepthwiseRow& r, int64_t c,
                                                             __mmask16 m, int64_t in0,
                                                             int64_t in1) {
  if (r.kernel_w == 5) {
    if (r.stride_w == 1) {
      row_run<5, 1>(r, in0, in1, c, m);
    } else {
      row_run<5, 2>(r, in0, in1, c, m);
    }
  } else if (r.stride_w == 1) {  // 14 columns + 8 accumulators of the 32 zmm
    row_run<7, 1>(r, in0, in1, c, m);
  } else {  // 21 columns + 8 accumulators
    row_run<7, 2>(r, in0, in1, c, m);
  }
}

/// 3-wide windows: border pixels one at a time with their taps clipped (a chain of at most 9
/// FMAs: shorter than a clipped chunk's set-up), the interior 8 pixels at a time, then 4, 2, 1.
template <int S>
TERN_AVX512_TARGET inline void row_run_narrow(const DepthwiseRow& r, int64_t in0, int64_t in1,
                                              int64_t c, __mmask16 m) {
  int64_t ix0, kx_lo, kx_hi;
  for (int64_t ox = 0; ox < in0; ++ox) {
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    pixels<1>(r, ox, kx_lo, kx_hi, c, m);
  }
  int64_t ox = in0;
  for (; ox + 8 <= in1; ox += 8) window<8, 3, S, false>(r, ox, c, m);
  if (ox + 4 <= in1) {
    window<4, 3, S, false>(r, ox, c, m);
    ox += 4;
  }
  if (ox + 2 <= in1) {
    window<2, 3, S, false>(r, ox, c, m);
    ox += 2;
  }
  if (ox < in1) window<1, 3, S, false>(r, ox, c, m);
  for (ox = in1; ox < r.out_w; ++ox) {
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    pixels<1>(r, ox, kx_lo, kx_hi, c, m);
  }
}

/// Channels [c, c + 16) (masked by m) of one output row; interior pixels [in0, in1).
TERN_AVX512_TARGET void channel_block(const DepthwiseRow& r, int64_t c, __mmask16 m, int64_t in0,
                                      int64_t in1) {
  const int64_t kw = r.kernel_w, sw = r.stride_w;
  if (kw == 3 && sw == 1) {
    row_run_narrow<1>(r, in0, in1, c, m);
  } else if (kw == 3 && sw == 2) {
    row_run_narrow<2>(r, in0, in1, c, m);
  } else if ((kw == 5 || kw == 7) && (sw == 1 || sw == 2)) {
    wide_block(r, c, m, in0, in1);
  } else {
    int64_t ix0, kx_lo, kx_hi;
    for (int64_t ox = 0; ox < in0; ++ox) {
      tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
      pixels<1>(r, ox, kx_lo, kx_hi, c, m);
    }
    int64_t ox = in0;
    for (; ox + 8 <= in1; ox += 8) pixels<8>(r, ox, 0, kw, c, m);
    for (; ox < in1; ++ox) pixels<1>(r, ox, 0, kw, c, m);
    for (ox = in1; ox < r.out_w; ++ox) {
      tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
      pixels<1>(r, ox, kx_lo, kx_hi, c, m);
    }
  }
}

/// Channel blocks outer, then the output rows: a block's input columns stay in L1 from one
/// output row to the next.
TERN_AVX512_TARGET void row_avx512(const DepthwiseRow& r) {
  // Interior pixels [in0, in1): the whole window lies inside the row.
  int64_t in0 = (r.pad_left + r.stride_w - 1) / r.stride_w;
  int64_t in1 = r.in_w + r.pad_left - r.kernel_w;
  in1 = in1 < 0 ? 0 : in1 / r.stride_w + 1;
  if (in1 > r.out_w) in1 = r.out_w;
  if (in0 > in1) in0 = in1;
  for (int64_t c = 0; c < r.channels; c += 16) {
    const int64_t left = r.channels - c;
    const __mmask16 m = left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1u);
    if (r.out_rows == 1) {
      channel_block(r, c, m, in0, in1);
    } else {
      for (int64_t i = 0; i < r.out_rows; ++i) channel_block(row_of(r, i), c, m, in0, in1);
    }
  }
}

}  // namespace

RowFn avx512_row() { return &row_avx512; }

}  // namespace tern::cpu::depthwise_detail

#else  // !__x86_64__

namespace tern::cpu::depthwise_detail {
RowFn avx512_row() { return nullptr; }
}  // namespace tern::cpu::depthwise_detail

#endif
