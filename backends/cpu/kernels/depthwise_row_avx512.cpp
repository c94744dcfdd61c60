// The depthwise row kernel in AVX-512F. Channels are the outer loop (16 per zmm, the tail
// masked, so nothing past `channels` floats of an input pixel, a weight tap or the output is
// touched); along the row, interior pixels (whole window inside the row) go 8 at a time: each
// tap's weight vector is loaded once for 8 independent accumulators, so loads stay near one
// per FMA and the FMA latency is hidden. Border pixels go one at a time with the window clipped.
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

/// Clamps NP accumulators and stores them to output pixels ox.. under mask m. max(lo, min(hi,
/// x)) returns x when x is NaN: NaN propagates. (The maskz forms with a full mask: GCC 12's plain
/// _mm512_max_ps warns of an uninitialized pass-through.)
template <int NP>
TERN_AVX512_TARGET inline void store(const DepthwiseRow& r, int64_t ox, int64_t c, __mmask16 m,
                                     const __m512 (&acc)[NP]) {
  const __m512 lo = _mm512_set1_ps(r.epi.lo);
  const __m512 hi = _mm512_set1_ps(r.epi.hi);
  float* out = r.out + ox * r.channels + c;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    const __m512 y = _mm512_maskz_max_ps(0xFFFF, lo, _mm512_maskz_min_ps(0xFFFF, hi, acc[p]));
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

/// NP interior output pixels from ox for a window KW wide at stride S (both fixed): each input
/// column of a row is loaded once and used by every pixel whose window covers it.
template <int NP, int KW, int S>
TERN_AVX512_TARGET inline void interior(const DepthwiseRow& r, int64_t ox, int64_t c,
                                        __mmask16 m) {
  constexpr int kCols = (NP - 1) * S + KW;
  const int64_t ch = r.channels;
  __m512 acc[NP];
  init<NP>(r, c, m, acc);
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + (ox * S - r.pad_left) * ch + c;
    __m512 col[kCols];
#pragma GCC unroll 32
    for (int j = 0; j < kCols; ++j) col[j] = _mm512_maskz_loadu_ps(m, in + j * ch);
    const float* w = r.w + ky * KW * ch + c;
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) {
      const __m512 wv = _mm512_maskz_loadu_ps(m, w + kx * ch);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = _mm512_fmadd_ps(col[p * S + kx], wv, acc[p]);
    }
  }
  store<NP>(r, ox, c, m, acc);
}

/// Interior pixels [ox, end) with the window and stride fixed: 8 at a time, then 4, 2, 1.
template <int KW, int S>
TERN_AVX512_TARGET inline void interior_run(const DepthwiseRow& r, int64_t ox, int64_t end,
                                            int64_t c, __mmask16 m) {
  for (; ox + 8 <= end; ox += 8) interior<8, KW, S>(r, ox, c, m);
  if (ox + 4 <= end) {
    interior<4, KW, S>(r, ox, c, m);
    ox += 4;
  }
  if (ox + 2 <= end) {
    interior<2, KW, S>(r, ox, c, m);
    ox += 2;
  }
  if (ox < end) interior<1, KW, S>(r, ox, c, m);
}

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
    int64_t ix0, kx_lo, kx_hi;
    for (int64_t ox = 0; ox < in0; ++ox) {
      tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
      pixels<1>(r, ox, kx_lo, kx_hi, c, m);
    }
    const int64_t kw = r.kernel_w, sw = r.stride_w;
    if (kw == 3 && sw == 1) {
      interior_run<3, 1>(r, in0, in1, c, m);
    } else if (kw == 3 && sw == 2) {
      interior_run<3, 2>(r, in0, in1, c, m);
    } else if (kw == 5 && sw == 1) {
      interior_run<5, 1>(r, in0, in1, c, m);
    } else if (kw == 5 && sw == 2) {
      interior_run<5, 2>(r, in0, in1, c, m);
    } else if (kw == 7 && sw == 1) {  // 14 columns + 8 accumulators of the 32 zmm
      interior_run<7, 1>(r, in0, in1, c, m);
    } else if (kw == 7 && sw == 2) {  // 21 columns + 8 accumulators
      interior_run<7, 2>(r, in0, in1, c, m);
    } else {
      int64_t ox = in0;
      for (; ox + 8 <= in1; ox += 8) pixels<8>(r, ox, 0, kw, c, m);
      for (; ox < in1; ++ox) pixels<1>(r, ox, 0, kw, c, m);
    }
    for (int64_t ox = in1; ox < r.out_w; ++ox) {
      tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
      pixels<1>(r, ox, kx_lo, kx_hi, c, m);
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
