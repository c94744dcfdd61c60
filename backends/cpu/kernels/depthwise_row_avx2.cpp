// The depthwise row kernel in AVX2+FMA. Channels are the outer loop (8 per ymm; only the tail is
// masked with maskload/maskstore, so nothing past `channels` floats of an input pixel, a weight
// tap or the output is touched: masked ymm moves cost ten plain ones on AMD Zen, measured); along
// the row, pixels go 4 at a time for the common windows (3, 5 or 7 wide, stride 1 or 2; 3 at a
// time for 7 at stride 2, 2 for 5 at stride 2): each input column of a window row is loaded once
// for every pixel that uses it and each weight once for the accumulators; for 5- and 7-wide
// windows the chunks that reach into the padding read its columns as zeros (several
// accumulators, not one chain of up to 49 FMAs per border pixel), 3-wide windows clip each
// border pixel's taps. Other windows go one pixel at a time, border pixels clipped. The store
// applies the row's post-affine and residual. Per-function target attributes: runs only when
// dispatch saw AVX2 and FMA.
#include "backends/cpu/kernels/depthwise_row.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TERN_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace tern::cpu::depthwise_detail {
namespace {

/// Eight floats from p: all of them (F, a full block of channels) or the lanes of m.
template <bool F>
TERN_AVX2_TARGET inline __m256 load(const float* p, __m256i m) {
  return F ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

template <bool F>
TERN_AVX2_TARGET inline __m256 bias_of(const DepthwiseRow& r, int64_t c, __m256i m) {
  return r.bias != nullptr ? load<F>(r.bias + c, m) : _mm256_setzero_ps();
}

/// Clamps NP accumulators (NaN propagates: max(lo, min(hi, x)) returns x when x is NaN), applies
/// the row's post-affine and residual (when set) and stores them to output pixels ox.. (under
/// mask m unless F).
template <bool F, int NP>
TERN_AVX2_TARGET inline void store(const DepthwiseRow& r, int64_t ox, int64_t c, __m256i m,
                                   const __m256 (&acc)[NP]) {
  const __m256 lo = _mm256_set1_ps(r.epi.lo);
  const __m256 hi = _mm256_set1_ps(r.epi.hi);
  const bool affine = r.post_scale != nullptr;
  const __m256 scale = affine ? load<F>(r.post_scale + c, m) : lo;
  const __m256 shift = affine ? load<F>(r.post_shift + c, m) : lo;
  float* out = r.out + ox * r.channels + c;
  const float* res = r.residual != nullptr ? r.residual + ox * r.channels + c : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
    __m256 v = _mm256_max_ps(lo, _mm256_min_ps(hi, acc[p]));
    if (affine) v = _mm256_fmadd_ps(v, scale, shift);
    if (res != nullptr) v = _mm256_add_ps(v, load<F>(res + p * r.channels, m));
    if (F) {
      _mm256_storeu_ps(out + p * r.channels, v);
    } else {
      _mm256_maskstore_ps(out + p * r.channels, m, v);
    }
  }
}

/// One output pixel, channels [c, c + 8) (masked by m unless F), taps [kx_lo, kx_hi) of every
/// non-null row.
template <bool F>
TERN_AVX2_TARGET void pixel(const DepthwiseRow& r, int64_t ox, int64_t kx_lo, int64_t kx_hi,
                            int64_t c, __m256i m) {
  const int64_t ch = r.channels;
  __m256 acc[1] = {bias_of<F>(r, c, m)};
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + (ox * r.stride_w - r.pad_left) * ch + c;
    const float* w = r.w + ky * r.kernel_w * ch + c;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
      acc[0] = _mm256_fmadd_ps(load<F>(in + kx * ch, m), load<F>(w + kx * ch, m), acc[0]);
    }
  }
  store<F, 1>(r, ox, c, m, acc);
}

/// NP interior output pixels from ox for a window KW wide at stride S (both fixed).
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void interior(const DepthwiseRow& r, int64_t ox, int64_t c, __m256i m) {
  constexpr int kCols = (NP - 1) * S + KW;
  const int64_t ch = r.channels;
  const __m256 bias = bias_of<F>(r, c, m);
  __m256 acc[NP];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) acc[p] = bias;
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + (ox * S - r.pad_left) * ch + c;
    __m256 col[kCols];
#pragma GCC unroll 16
    for (int j = 0; j < kCols; ++j) col[j] = load<F>(in + j * ch, m);
    const float* w = r.w + ky * KW * ch + c;
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) {
      const __m256 wv = load<F>(w + kx * ch, m);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = _mm256_fmadd_ps(col[p * S + kx], wv, acc[p]);
    }
  }
  store<F, NP>(r, ox, c, m, acc);
}

/// NP output pixels from ox, some reaching into the padding: columns outside [0, in_w) read as
/// zeros (several accumulators where one pixel at a time would be a chain of up to 49 FMAs).
/// interior's body with the column loads checked: kept apart because one template for both
/// (a Clip parameter, as the AVX-512 file has) made GCC's code for the 3-wide rows ~10 % slower.
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void clipped(const DepthwiseRow& r, int64_t ox, int64_t c, __m256i m) {
  constexpr int kCols = (NP - 1) * S + KW;
  const int64_t ch = r.channels;
  const int64_t ix0 = ox * S - r.pad_left;
  const __m256 bias = bias_of<F>(r, c, m);
  __m256 acc[NP];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) acc[p] = bias;
  for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
    const float* row = r.rows[ky];
    if (row == nullptr) continue;
    const float* in = row + ix0 * ch + c;
    __m256 col[kCols];
#pragma GCC unroll 16
    for (int j = 0; j < kCols; ++j) {
      const bool inside = ix0 + j >= 0 && ix0 + j < r.in_w;
      col[j] = inside ? load<F>(in + j * ch, m) : _mm256_setzero_ps();
    }
    const float* w = r.w + ky * KW * ch + c;
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) {
      const __m256 wv = load<F>(w + kx * ch, m);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[p] = _mm256_fmadd_ps(col[p * S + kx], wv, acc[p]);
    }
  }
  store<F, NP>(r, ox, c, m, acc);
}

/// NP pixels from ox: the unclipped window when all NP lie in the interior [in0, in1).
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void chunk(const DepthwiseRow& r, int64_t ox, int64_t in0, int64_t in1,
                                   int64_t c, __m256i m) {
  if (ox >= in0 && ox + NP <= in1) {
    interior<F, NP, KW, S>(r, ox, c, m);
  } else {
    clipped<F, NP, KW, S>(r, ox, c, m);
  }
}

/// n pixels from ox (NP, 2 or 1).
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void chunk_of(int64_t n, const DepthwiseRow& r, int64_t ox, int64_t in0,
                                      int64_t in1, int64_t c, __m256i m) {
  if (n == NP) {
    chunk<F, NP, KW, S>(r, ox, in0, in1, c, m);
  } else if (n == 2) {
    chunk<F, 2, KW, S>(r, ox, in0, in1, c, m);
  } else {
    chunk<F, 1, KW, S>(r, ox, in0, in1, c, m);
  }
}

/// 5- and 7-wide windows: the left border [0, in0) in chunks reaching into the padding (its
/// columns read as zeros: several accumulators rather than one chain of up to 49 FMAs per
/// pixel), the interior NP pixels at a time (NP chosen so the columns and accumulators fit the
/// 16 ymm registers), then what is left in chunks of NP, 2, 1 (clipped where they reach the
/// right border).
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void row_run(const DepthwiseRow& r, int64_t in0, int64_t in1, int64_t c,
                                     __m256i m) {
  const auto at_most = [](int64_t n) -> int64_t { return n >= NP ? NP : n >= 2 ? 2 : 1; };
  int64_t ox = 0;
  while (ox < in0) {
    const int64_t need = in0 - ox;
    int64_t n = need <= 1 ? 1 : need <= 2 ? 2 : NP;
    if (n > r.out_w - ox) n = at_most(r.out_w - ox);
    chunk_of<F, NP, KW, S>(n, r, ox, in0, in1, c, m);
    ox += n;
  }
  for (; ox + NP <= in1; ox += NP) interior<F, NP, KW, S>(r, ox, c, m);
  while (ox < r.out_w) {
    const int64_t n = at_most(r.out_w - ox);
    chunk_of<F, NP, KW, S>(n, r, ox, in0, in1, c, m);
    ox += n;
  }
}

/// Channels [c, c + 8) of a row whose window is 5 or 7 wide at stride 1 or 2.
template <bool F>
__attribute__((noinline)) TERN_AVX2_TARGET void wide_block(const DepthwiseRow& r, int64_t c,
                                                           __m256i m, int64_t in0, int64_t in1) {
  if (r.kernel_w == 5) {
    if (r.stride_w == 1) {
      row_run<F, 4, 5, 1>(r, in0, in1, c, m);
    } else {
      row_run<F, 2, 5, 2>(r, in0, in1, c, m);
    }
  } else if (r.stride_w == 1) {  // ConvNeXt's, FastViT's: 10 columns + 4 accumulators
    row_run<F, 4, 7, 1>(r, in0, in1, c, m);
  } else {  // 11 columns + 3 accumulators
    row_run<F, 3, 7, 2>(r, in0, in1, c, m);
  }
}

/// Interior pixels [ox, end), NP at a time (NP chosen so the columns and accumulators fit the
/// 16 ymm registers), then 2, then 1.
template <bool F, int NP, int KW, int S>
TERN_AVX2_TARGET inline void interior_run(const DepthwiseRow& r, int64_t ox, int64_t end,
                                          int64_t c, __m256i m) {
  for (; ox + NP <= end; ox += NP) interior<F, NP, KW, S>(r, ox, c, m);
  if (NP > 2 && ox + 2 <= end) {
    interior<F, 2, KW, S>(r, ox, c, m);
    ox += 2;
  }
  if (ox < end) interior<F, 1, KW, S>(r, ox, c, m);
}

/// Channels [c, c + 8) of the whole row (masked by m unless F); interior pixels [in0, in1).
template <bool F>
TERN_AVX2_TARGET void channel_block(const DepthwiseRow& r, int64_t c, __m256i m, int64_t in0,
                                    int64_t in1) {
  const int64_t kw = r.kernel_w, sw = r.stride_w;
  if (kw == 5 || kw == 7) {  // kept out of line: inlined, they slow the 3-wide rows down ~5 %
    if (sw == 1 || sw == 2) {
      wide_block<F>(r, c, m, in0, in1);
      return;
    }
  }
  // 3-wide (and other) windows: border pixels one at a time with their taps clipped (a chain of
  // at most 9 FMAs for 3-wide ones).
  int64_t ix0, kx_lo, kx_hi;
  for (int64_t ox = 0; ox < in0; ++ox) {
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    pixel<F>(r, ox, kx_lo, kx_hi, c, m);
  }
  if (kw == 3 && sw == 1) {
    interior_run<F, 4, 3, 1>(r, in0, in1, c, m);
  } else if (kw == 3 && sw == 2) {
    interior_run<F, 4, 3, 2>(r, in0, in1, c, m);
  } else {
    for (int64_t ox = in0; ox < in1; ++ox) pixel<F>(r, ox, 0, kw, c, m);
  }
  for (int64_t ox = in1; ox < r.out_w; ++ox) {
    tap_range(r, ox, &ix0, &kx_lo, &kx_hi);
    pixel<F>(r, ox, kx_lo, kx_hi, c, m);
  }
}

TERN_AVX2_TARGET void row_avx2(const DepthwiseRow& r) {
  // Interior pixels [in0, in1): the whole window lies inside the row.
  int64_t in0 = (r.pad_left + r.stride_w - 1) / r.stride_w;
  int64_t in1 = r.in_w + r.pad_left - r.kernel_w;
  in1 = in1 < 0 ? 0 : in1 / r.stride_w + 1;
  if (in1 > r.out_w) in1 = r.out_w;
  if (in0 > in1) in0 = in1;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Channel blocks outer, then the output rows: a block's input columns stay in L1 from one
  // output row to the next.
  int64_t c = 0;
  for (; c + 8 <= r.channels; c += 8) {
    if (r.out_rows == 1) {
      channel_block<true>(r, c, _mm256_set1_epi32(-1), in0, in1);
      continue;
    }
    for (int64_t i = 0; i < r.out_rows; ++i) {
      channel_block<true>(row_of(r, i), c, _mm256_set1_epi32(-1), in0, in1);
    }
  }
  if (c < r.channels) {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(r.channels - c)), lanes);
    for (int64_t i = 0; i < r.out_rows; ++i) channel_block<false>(row_of(r, i), c, m, in0, in1);
  }
}

}  // namespace

RowFn avx2_row() { return &row_avx2; }

}  // namespace tern::cpu::depthwise_detail

#else  // !__x86_64__

namespace tern::cpu::depthwise_detail {
RowFn avx2_row() { return nullptr; }
}  // namespace tern::cpu::depthwise_detail

#endif
