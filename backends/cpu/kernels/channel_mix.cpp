// The linear map along an inner dim (channel_mix.h): the inner dim cut into tiles of kTile
// floats; per tile and output row j, the K input rows' tiles weighed and summed into a local
// accumulator, a fixed-length loop the compiler vectorizes.
#include "backends/cpu/kernels/channel_mix.h"

#include "backends/cpu/kernels/row_bands.h"

namespace tern::cpu {
namespace {

constexpr int64_t kTile = 64;

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

/// Tiles [begin, end) of the ChannelMixProblem `context` (tile = o * tiles + the tile of o).
void mix_range(const void* context, int64_t begin, int64_t end) {
  const ChannelMixProblem& p = *static_cast<const ChannelMixProblem*>(context);
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
  if (p.outer <= 0 || p.j <= 0 || p.k <= 0 || p.inner <= 0) return;
  const int64_t tiles = (p.inner + kTile - 1) / kTile;
  detail::run_row_bands(pool, p.outer * tiles, p.j * kTile, &mix_range, &p);
}

}  // namespace tern::cpu
