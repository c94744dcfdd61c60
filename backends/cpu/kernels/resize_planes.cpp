// Per task a band of output rows of one image, a chunk of columns at a time: the column taps
// computed once per chunk, each source row the band reads interpolated along the columns once
// (for every channel, into one of two row caches on the stack), then each output row of each
// channel a blend of two cached rows (contiguous: vectorized). Arithmetic as the portable
// kernel: th.w0 * (tw.w0 * r0[i0] + tw.w1 * r0[i1]) + th.w1 * (tw.w0 * r1[i0] + tw.w1 * r1[i1]),
// the two inner terms being the cached rows.
#include "backends/cpu/kernels/resize_planes.h"


#include "backends/cpu/kernels/pool_flags.h"
#include "runtime/kernels/util/bilinear_taps.h"

namespace tern::cpu {
namespace {

using portable::BilinearTaps;
using portable::bilinear_taps;

float area_scale(int64_t in, int64_t out, bool align_corners) {
  if (align_corners) {
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  }
  return static_cast<float>(in) / static_cast<float>(out);
}

constexpr int64_t kRowsPerTask = 16;
constexpr int64_t kColumnChunk = 256;      // most columns of taps computed at once
constexpr int64_t kRowCacheFloats = 4096;  // one interpolated source row's chunk, all channels

struct Plan {
  const ResizePlanesProblem* p = nullptr;
  float scale_h = 0.0f, scale_w = 0.0f;
  int64_t bands = 1;  // row bands per image
  int64_t chunk = 1;  // columns a chunk: chunk · C floats fit a row cache
};

/// Source row `r` of `image` interpolated along the columns [j0, j0 + cols) for every channel,
/// into h[ch · cols + j]: tw.w0 · x[r, i0] + tw.w1 · x[r, i1] as the portable kernel's inner
/// terms.
void horizontal(const float* image, int64_t r, int64_t w, int64_t c, int64_t cols,
                const int64_t* at0, const int64_t* at1, const float* cw0, const float* cw1,
                float* h) {
  const float* row = image + r * w * c;
  for (int64_t ch = 0; ch < c; ++ch) {
    const float* a = row + ch;
    float* d = h + ch * cols;
    for (int64_t j = 0; j < cols; ++j) d[j] = cw0[j] * a[at0[j]] + cw1[j] * a[at1[j]];
  }
}

void run_band(void* context, size_t task) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const ResizePlanesProblem& p = *plan.p;
  const int64_t n = static_cast<int64_t>(task) / plan.bands;
  const int64_t band = static_cast<int64_t>(task) % plan.bands;
  const int64_t i0 = band * kRowsPerTask;
  const int64_t i1 = i0 + kRowsPerTask < p.out_h ? i0 + kRowsPerTask : p.out_h;
  const int64_t c = p.channels, w = p.in_w;
  const float* image = p.x + n * p.in_h * w * c;
  float* out = p.y + n * c * p.out_h * p.out_w;
  int64_t at0[kColumnChunk], at1[kColumnChunk];  // the taps' offsets in a row: column · C
  float cw0[kColumnChunk], cw1[kColumnChunk];
  // Two source rows interpolated along the chunk's columns (an upsampling by k reads each
  // for k output rows): the rows they hold, -1 for none.
  alignas(64) float cache[2][kRowCacheFloats];
  for (int64_t j0 = 0; j0 < p.out_w; j0 += plan.chunk) {
    const int64_t cols = p.out_w - j0 < plan.chunk ? p.out_w - j0 : plan.chunk;
    for (int64_t j = 0; j < cols; ++j) {
      const BilinearTaps tw = bilinear_taps(j0 + j, w, p.out_w, plan.scale_w, p.align_corners);
      at0[j] = tw.i0 * c;
      at1[j] = tw.i1 * c;
      cw0[j] = tw.w0;
      cw1[j] = tw.w1;
    }
    int64_t held[2] = {-1, -1};
    auto row_of = [&](int64_t r, int64_t keep) -> const float* {
      for (int s = 0; s < 2; ++s) {
        if (held[s] == r) return cache[s];
      }
      const int s = held[0] == keep ? 1 : 0;  // never evict the other row of this output row
      horizontal(image, r, w, c, cols, at0, at1, cw0, cw1, cache[s]);
      held[s] = r;
      return cache[s];
    };
    for (int64_t i = i0; i < i1; ++i) {
      const BilinearTaps th = bilinear_taps(i, p.in_h, p.out_h, plan.scale_h, p.align_corners);
      const float* h0 = row_of(th.i0, th.i1);
      const float* h1 = row_of(th.i1, th.i0);
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* a = h0 + ch * cols;
        const float* b = h1 + ch * cols;
        float* row = out + (ch * p.out_h + i) * p.out_w + j0;
        for (int64_t j = 0; j < cols; ++j) row[j] = th.w0 * a[j] + th.w1 * b[j];
      }
    }
  }
}

}  // namespace

void resize_bilinear_to_planes(const ResizePlanesProblem& p, pthreadpool_t pool) {
  if (p.batch <= 0 || p.in_h <= 0 || p.in_w <= 0 || p.channels <= 0 || p.out_h <= 0 ||
      p.out_w <= 0 || p.channels > kResizePlanesMaxChannels) {
    return;
  }
  Plan plan;
  plan.p = &p;
  plan.scale_h = area_scale(p.in_h, p.out_h, p.align_corners);
  plan.scale_w = area_scale(p.in_w, p.out_w, p.align_corners);
  plan.bands = (p.out_h + kRowsPerTask - 1) / kRowsPerTask;
  const int64_t fit = kRowCacheFloats / p.channels;
  plan.chunk = fit < 1 ? 1 : (fit < kColumnChunk ? fit : kColumnChunk);
  static_assert(kResizePlanesMaxChannels <= kRowCacheFloats, "a row cache holds every channel");
  const size_t tasks = static_cast<size_t>(p.batch * plan.bands);
  if (pool == nullptr || tasks <= 1) {
    for (size_t t = 0; t < tasks; ++t) run_band(&plan, t);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_band, &plan, tasks, kPoolFlags);
}

}  // namespace tern::cpu
