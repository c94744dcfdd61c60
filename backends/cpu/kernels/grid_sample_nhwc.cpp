#include "backends/cpu/kernels/grid_sample_nhwc.h"

#include <cmath>

#include "backends/cpu/kernels/pool_flags.h"
#include "runtime/kernels/util/grid_sample_coords.h"

namespace tern::cpu {
namespace {

using portable::BilinearTaps;
using portable::GridInterp;
using portable::GridPadding;

/// Output row r = n * ho + i: its wo pixels.
void sample_row(const GridSampleProblem& p, int64_t r) {
  const int64_t b = r / p.ho;
  const float* xb = p.x + b * p.h * p.w * p.c;
  const float* g = p.grid + r * p.wo * 2;
  float* y = p.y + r * p.wo * p.c;
  const GridPadding padding = static_cast<GridPadding>(p.padding);
  const bool bilinear = static_cast<GridInterp>(p.mode) == GridInterp::Bilinear;
  const int64_t c = p.c;
  for (int64_t j = 0; j < p.wo; ++j, y += c) {
    const float ix = portable::grid_source_index(g[2 * j], p.w, padding, p.align_corners);
    const float iy = portable::grid_source_index(g[2 * j + 1], p.h, padding, p.align_corners);
    if (!portable::grid_index_usable(ix) || !portable::grid_index_usable(iy)) {
      // As the portable kernel: far outside reads nothing; a non-finite point gives NaN when
      // bilinear (ATen's products with its weights), zeros when nearest.
      const float fill = bilinear && !(std::isfinite(ix) && std::isfinite(iy)) ? NAN : 0.0f;
      for (int64_t ch = 0; ch < c; ++ch) y[ch] = fill;
      continue;
    }
    if (!bilinear) {
      const int64_t xn = static_cast<int64_t>(std::nearbyint(ix));
      const int64_t yn = static_cast<int64_t>(std::nearbyint(iy));
      if (!portable::grid_in_bounds(yn, xn, p.h, p.w)) {
        for (int64_t ch = 0; ch < c; ++ch) y[ch] = 0.0f;
        continue;
      }
      const float* src = xb + (yn * p.w + xn) * c;
      for (int64_t ch = 0; ch < c; ++ch) y[ch] = src[ch];
      continue;
    }
    const BilinearTaps t = portable::grid_bilinear_taps(ix, iy, p.h, p.w);
    for (int64_t ch = 0; ch < c; ++ch) y[ch] = 0.0f;
    for (int k = 0; k < 4; ++k) {  // the portable kernel's order of the four products
      if (!t.inside[k]) continue;
      const float* src = xb + t.offset[k] * c;
      const float wk = t.weight[k];
      for (int64_t ch = 0; ch < c; ++ch) y[ch] += src[ch] * wk;
    }
  }
}

void run_row(void* context, size_t r) {
  sample_row(*static_cast<const GridSampleProblem*>(context), static_cast<int64_t>(r));
}

}  // namespace

void grid_sample_nhwc(const GridSampleProblem& p, pthreadpool_t pool) {
  const int64_t rows = p.n * p.ho;
  if (pool == nullptr || rows <= 1 || rows * p.wo * p.c < 16384 ||
      pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t r = 0; r < rows; ++r) sample_row(p, r);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_row, const_cast<GridSampleProblem*>(&p),
                             static_cast<size_t>(rows), kPoolFlags);
}

}  // namespace tern::cpu
