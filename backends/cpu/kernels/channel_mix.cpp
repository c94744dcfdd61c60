// The linear map along an inner dim (channel_mix.h): the inner dim cut into tiles of kTile
// floats; per tile and output row j, the K input rows' tiles weighed and summed into a local
// accumulator, a fixed-length loop the compiler vectorizes. With the softmax first, tiles of
// 16 columns: AVX-512 / AVX2 intrinsics, plain loops elsewhere, picked at run time.
#include "backends/cpu/kernels/channel_mix.h"

#include "backends/cpu/kernels/exp_poly.h"  // simd_dispatch.h, <immintrin.h> on x86
#include "backends/cpu/kernels/row_bands.h"
#include "runtime/kernels/util/vector_math.h"

namespace tern::cpu {
namespace {

constexpr int64_t kTile = 64;
/// The most inputs a column may have (the blob's kMaxChannelMixWidth; checked there).
constexpr int64_t kMaxChannelMixK = 64;

/// One tile of `n` floats (n <= kTile) at offset i of sample o, every output row.
template <int64_t N>
void mix_tile(const ChannelMixProblem& p, int64_t o, int64_t i, int64_t n) {
  const int64_t len = N > 0 ? N : n;
  const float* x0 = p.x + o * p.k * p.inner + i;
  float* y0 = p.y + o * p.j * p.inner + i;
  for (int64_t r = 0; r < p.j; ++r) {
    const float* w = p.w + r * p.k;
    float acc[kTile];
    const float w0 = w[0];
    for (int64_t t = 0; t < len; ++t) acc[t] = w0 * x0[t];
    for (int64_t c = 1; c < p.k; ++c) {
      const float wc = w[c];
      const float* __restrict xc = x0 + c * p.inner;
      for (int64_t t = 0; t < len; ++t) {
        const float prod = wc * xc[t];
        acc[t] += prod;
      }
    }
    float* __restrict y = y0 + r * p.inner;
    const float b = p.bias != nullptr ? p.bias[r] : 0.0f;
    if (p.bias != nullptr) {
      for (int64_t t = 0; t < len; ++t) y[t] = acc[t] + b;
    } else {
      for (int64_t t = 0; t < len; ++t) y[t] = acc[t];
    }
  }
}

/// With a softmax first: one tile of kSoftmaxTile columns at offset i of sample o (the last
/// tile's missing columns computed from zeros and not stored). The numerators e^(x - max) of
/// the k inputs go to a local [k][kSoftmaxTile] buffer (at most 64 x 16 floats), are mixed as
/// mix_tile mixes x, and each output divided by their sum once (not each probability: k
/// divisions a column were most of the time). Fixed trip counts over the tile's columns: the loops vectorize in every
/// instruction-set variant below.
constexpr int64_t kSoftmaxTile = 16;

TERN_SIMD_INLINE void softmax_mix_tile(const ChannelMixProblem& p, int64_t o, int64_t i,
                                       int64_t n) {
  namespace vmath = portable::vmath;
  constexpr int64_t T = kSoftmaxTile;
  alignas(64) float prob[kMaxChannelMixK][T];
  alignas(64) float mx[T];
  alignas(64) float sum[T];
  const float* x0 = p.x + o * p.k * p.inner + i;
  // The tile's columns of every input (zeros past the last column), and their maximum.
  for (int64_t c = 0; c < p.k; ++c) {
    const float* xc = x0 + c * p.inner;
    if (n == T) {
      for (int64_t t = 0; t < T; ++t) prob[c][t] = xc[t];
    } else {
      for (int64_t t = 0; t < T; ++t) prob[c][t] = t < n ? xc[t] : 0.0f;
    }
    if (c == 0) {
      for (int64_t t = 0; t < T; ++t) mx[t] = prob[0][t];
    } else {
      for (int64_t t = 0; t < T; ++t) mx[t] = prob[c][t] > mx[t] ? prob[c][t] : mx[t];
    }
  }
  for (int64_t t = 0; t < T; ++t) sum[t] = 0.0f;
  for (int64_t c = 0; c < p.k; ++c) {
    for (int64_t t = 0; t < T; ++t) {
      const float e = vmath::exp_nonpositive(prob[c][t] - mx[t]);
      prob[c][t] = e;
      sum[t] += e;
    }
  }
  float* y0 = p.y + o * p.j * p.inner + i;
  for (int64_t r = 0; r < p.j; ++r) {
    const float* w = p.w + r * p.k;
    alignas(64) float acc[T];
    for (int64_t t = 0; t < T; ++t) acc[t] = w[0] * prob[0][t];
    for (int64_t c = 1; c < p.k; ++c) {
      const float wc = w[c];
      for (int64_t t = 0; t < T; ++t) {
        const float prod = wc * prob[c][t];
        acc[t] += prod;
      }
    }
    const float b = p.bias != nullptr ? p.bias[r] : 0.0f;
    for (int64_t t = 0; t < T; ++t) acc[t] = acc[t] / sum[t];
    float* y = y0 + r * p.inner;
    for (int64_t t = 0; t < n; ++t) y[t] = p.bias != nullptr ? acc[t] + b : acc[t];
  }
}

TERN_SIMD_INLINE void softmax_mix_tiles(const ChannelMixProblem& p, int64_t begin, int64_t end) {
  const int64_t tiles = (p.inner + kSoftmaxTile - 1) / kSoftmaxTile;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t o = t / tiles, i = (t % tiles) * kSoftmaxTile;
    softmax_mix_tile(p, o, i, p.inner - i < kSoftmaxTile ? p.inner - i : kSoftmaxTile);
  }
}

void softmax_mix_baseline(const ChannelMixProblem& p, int64_t begin, int64_t end) {
  softmax_mix_tiles(p, begin, end);
}

#if defined(TERN_SIMD_X86_DISPATCH)
// The same in intrinsics, the tile's maximum, sum and accumulator in registers (the plain
// loops above keep them in memory across the k inputs: a store-to-load chain per input).
// AVX-512: one 16-lane vector a tile, the last one masked.
TERN_SIMD_TARGET_AVX512 void softmax_mix_avx512(const ChannelMixProblem& p, int64_t begin,
                                                int64_t end) {
  static_assert(kSoftmaxTile == 16, "one AVX-512 vector a tile");
  constexpr __mmask16 kAll = 0xFFFF;
  alignas(64) float prob[kMaxChannelMixK * kSoftmaxTile];
  const int64_t tiles = (p.inner + kSoftmaxTile - 1) / kSoftmaxTile;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t o = t / tiles, i = (t % tiles) * kSoftmaxTile;
    const int64_t n = p.inner - i < kSoftmaxTile ? p.inner - i : kSoftmaxTile;
    const __mmask16 m = n == kSoftmaxTile ? kAll : static_cast<__mmask16>((1u << n) - 1u);
    const float* x0 = p.x + o * p.k * p.inner + i;
    __m512 mx = _mm512_maskz_loadu_ps(m, x0);
    for (int64_t c = 1; c < p.k; ++c) {
      mx = _mm512_maskz_max_ps(kAll, _mm512_maskz_loadu_ps(m, x0 + c * p.inner), mx);
    }
    __m512 sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < p.k; ++c) {
      const __m512 e = exp_poly::exp_nonpositive_avx512(
          _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x0 + c * p.inner), mx));
      _mm512_store_ps(prob + c * kSoftmaxTile, e);
      sum = _mm512_add_ps(sum, e);
    }
    float* y0 = p.y + o * p.j * p.inner + i;
    for (int64_t r = 0; r < p.j; ++r) {
      const float* w = p.w + r * p.k;
      __m512 acc = _mm512_mul_ps(_mm512_set1_ps(w[0]), _mm512_load_ps(prob));
      for (int64_t c = 1; c < p.k; ++c) {  // each product rounded, then added (mix_tile)
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(w[c]),
                                               _mm512_load_ps(prob + c * kSoftmaxTile)));
      }
      acc = _mm512_div_ps(acc, sum);
      if (p.bias != nullptr) acc = _mm512_add_ps(acc, _mm512_set1_ps(p.bias[r]));
      _mm512_mask_storeu_ps(y0 + r * p.inner, m, acc);
    }
  }
}

// AVX2: two 8-lane halves a tile; a partial last tile goes through the plain loops.
TERN_SIMD_TARGET_AVX2 void softmax_mix_avx2(const ChannelMixProblem& p, int64_t begin,
                                            int64_t end) {
  static_assert(kSoftmaxTile == 16, "two AVX2 vectors a tile");
  alignas(32) float prob[kMaxChannelMixK * kSoftmaxTile];
  const int64_t tiles = (p.inner + kSoftmaxTile - 1) / kSoftmaxTile;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t o = t / tiles, i = (t % tiles) * kSoftmaxTile;
    if (p.inner - i < kSoftmaxTile) {
      softmax_mix_tile(p, o, i, p.inner - i);
      continue;
    }
    const float* x0 = p.x + o * p.k * p.inner + i;
    __m256 mx0 = _mm256_loadu_ps(x0), mx1 = _mm256_loadu_ps(x0 + 8);
    for (int64_t c = 1; c < p.k; ++c) {
      mx0 = _mm256_max_ps(_mm256_loadu_ps(x0 + c * p.inner), mx0);
      mx1 = _mm256_max_ps(_mm256_loadu_ps(x0 + c * p.inner + 8), mx1);
    }
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (int64_t c = 0; c < p.k; ++c) {
      const float* xc = x0 + c * p.inner;
      const __m256 e0 = exp_poly::exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(xc), mx0));
      const __m256 e1 = exp_poly::exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(xc + 8), mx1));
      _mm256_store_ps(prob + c * kSoftmaxTile, e0);
      _mm256_store_ps(prob + c * kSoftmaxTile + 8, e1);
      s0 = _mm256_add_ps(s0, e0);
      s1 = _mm256_add_ps(s1, e1);
    }
    float* y0 = p.y + o * p.j * p.inner + i;
    for (int64_t r = 0; r < p.j; ++r) {
      const float* w = p.w + r * p.k;
      const __m256 w0 = _mm256_set1_ps(w[0]);
      __m256 a0 = _mm256_mul_ps(w0, _mm256_load_ps(prob));
      __m256 a1 = _mm256_mul_ps(w0, _mm256_load_ps(prob + 8));
      for (int64_t c = 1; c < p.k; ++c) {
        const __m256 wc = _mm256_set1_ps(w[c]);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(wc, _mm256_load_ps(prob + c * kSoftmaxTile)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(wc, _mm256_load_ps(prob + c * kSoftmaxTile + 8)));
      }
      a0 = _mm256_div_ps(a0, s0);
      a1 = _mm256_div_ps(a1, s1);
      if (p.bias != nullptr) {
        a0 = _mm256_add_ps(a0, _mm256_set1_ps(p.bias[r]));
        a1 = _mm256_add_ps(a1, _mm256_set1_ps(p.bias[r]));
      }
      _mm256_storeu_ps(y0 + r * p.inner, a0);
      _mm256_storeu_ps(y0 + r * p.inner + 8, a1);
    }
  }
}
#endif

/// Tiles [begin, end) of the ChannelMixProblem `context` (tile = o * tiles + the tile of o).
void mix_range(const void* context, int64_t begin, int64_t end) {
  const ChannelMixProblem& p = *static_cast<const ChannelMixProblem*>(context);
  if (p.softmax) {
#if defined(TERN_SIMD_X86_DISPATCH)
    switch (portable::simd_level()) {
      case portable::SimdLevel::Avx512:
        softmax_mix_avx512(p, begin, end);
        return;
      case portable::SimdLevel::Avx2:
        softmax_mix_avx2(p, begin, end);
        return;
      default:
        break;
    }
#endif
    softmax_mix_baseline(p, begin, end);
    return;
  }
  const int64_t tiles = (p.inner + kTile - 1) / kTile;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t o = t / tiles, i = (t % tiles) * kTile;
    const int64_t n = p.inner - i < kTile ? p.inner - i : kTile;
    if (n == kTile) {
      mix_tile<kTile>(p, o, i, n);
    } else {
      mix_tile<0>(p, o, i, n);
    }
  }
}

}  // namespace

void channel_mix(const ChannelMixProblem& p, pthreadpool_t pool) {
  if (p.outer <= 0 || p.j <= 0 || p.k <= 0 || p.inner <= 0 || p.k > kMaxChannelMixK) return;
  const int64_t tile = p.softmax ? kSoftmaxTile : kTile;
  const int64_t tiles = (p.inner + tile - 1) / tile;
  detail::run_row_bands(pool, p.outer * tiles, p.j * tile, &mix_range, &p);
}

}  // namespace tern::cpu
