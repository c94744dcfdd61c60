// The fused inverted bottleneck's driver (bottleneck.h): output rows split into one contiguous
// range per pool thread, each range walked in bands whose expanded input rows fit the band
// budget; rows shared by consecutive bands (the depthwise window's overlap) are moved to the
// front of the band buffer rather than expanded again, so only the first band of a range pays
// for its halo. Never allocates.
#include "backends/cpu/kernels/bottleneck.h"

#include <cstring>

#include "backends/cpu/kernels/depthwise_row.h"
#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu {
namespace {

using gemm_detail::max64;
using gemm_detail::min64;
using gemm_detail::split_point;

/// A task's scratch slot: the band's expanded rows, then its depthwise output.
struct SlotShape {
  int64_t band = 1;      ///< output rows per band
  int64_t e_floats = 0;  ///< expanded rows of one band (0 without expand)
  int64_t d_floats = 0;  ///< depthwise output of one band (0 without project)
  int64_t slot_floats = 0;
};

bool empty(const BottleneckProblem& p) {
  return p.batch <= 0 || p.in_h <= 0 || p.in_w <= 0 || p.in_c <= 0 || p.exp_c <= 0 ||
         p.out_h <= 0 || p.out_w <= 0 || p.out_c <= 0 || p.kernel_h <= 0 || p.kernel_w <= 0 ||
         p.kernel_h > kMaxBottleneckKernel || p.stride_h <= 0 || p.stride_w <= 0;
}

SlotShape slot_shape(const BottleneckProblem& p) {
  SlotShape s;
  const int64_t row = p.in_w * p.exp_c;
  const int64_t rows_fit = bottleneck_band_floats() / max64(1, row);
  s.band = rows_fit > p.kernel_h ? (rows_fit - p.kernel_h) / p.stride_h + 1 : 1;
  s.band = min64(s.band, p.out_h);
  if (p.expand_packed != nullptr) s.e_floats = ((s.band - 1) * p.stride_h + p.kernel_h) * row;
  if (p.project_packed != nullptr) s.d_floats = s.band * p.out_w * p.exp_c;
  s.slot_floats = (s.e_floats + s.d_floats + 15) / 16 * 16;  // slots start on 64 bytes
  return s;
}

int64_t parts_for(const BottleneckProblem& p, int64_t threads) {
  return max64(1, min64(threads, p.batch * p.out_h));
}

/// Whether `parts` row ranges would expand more than ~10% extra rows for their halos (the
/// window rows a range shares with the previous one): then the block runs stage by stage
/// instead, each stage split over the pool (MobileNetV2's 14x14 and 7x7 blocks on 2 threads).
bool layer_mode(const BottleneckProblem& p, int64_t parts) {
  if (p.expand_packed == nullptr || parts <= 1) return false;
  const int64_t halo = max64(0, p.kernel_h - p.stride_h) * min64(parts, p.batch * p.out_h);
  return halo * 10 > p.batch * p.in_h;
}

/// Layer mode's scratch: the whole expanded tensor, then the whole depthwise output (without a
/// project the depthwise output is y).
int64_t layer_e_floats(const BottleneckProblem& p) {
  return (p.batch * p.in_h * p.in_w * p.exp_c + 15) / 16 * 16;
}
int64_t layer_floats(const BottleneckProblem& p) {
  return layer_e_floats(p) +
         (p.project_packed != nullptr ? p.batch * p.out_h * p.out_w * p.exp_c : 0);
}

depthwise_detail::RowFn row_fn() {
  depthwise_detail::RowFn fn = nullptr;
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      fn = depthwise_detail::avx512_row();
      break;
    case GemmIsa::Avx2:
      fn = depthwise_detail::avx2_row();
      break;
    case GemmIsa::Scalar:
      break;
  }
  return fn != nullptr ? fn : depthwise_detail::scalar_row();
}

struct Plan {
  const BottleneckProblem* p = nullptr;
  SlotShape s;
  int64_t parts = 1;
  float* scratch = nullptr;
  depthwise_detail::RowFn row = nullptr;
  ActivationFn dw_act = nullptr;
  // Layer mode: the whole expanded tensor (or x) and where the depthwise rows go.
  const float* e_all = nullptr;
  float* d_all = nullptr;
};

/// Depthwise output row oy of image n from e (image n's rows of in_w x exp_c, starting at input
/// row e_first) into d (the row's out_w x exp_c floats), with the epilogue.
void depthwise_out_row(const Plan& plan, const float* e, int64_t e_first, int64_t oy, float* d) {
  const BottleneckProblem& p = *plan.p;
  const int64_t e_row = p.in_w * p.exp_c;
  const float* taps[kMaxBottleneckKernel];
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t iy = oy * p.stride_h - p.pad_top + ky;
    taps[ky] = iy >= 0 && iy < p.in_h ? e + (iy - e_first) * e_row : nullptr;
  }
  DepthwiseRow dr;
  dr.rows = taps;
  dr.in_w = p.in_w;
  dr.channels = p.exp_c;
  dr.out_w = p.out_w;
  dr.kernel_h = p.kernel_h;
  dr.kernel_w = p.kernel_w;
  dr.stride_w = p.stride_w;
  dr.pad_left = p.pad_left;
  dr.w = p.dw_weight;
  dr.bias = p.dw_bias;
  dr.epi = p.depthwise;
  dr.out = d;
  plan.row(dr);
  if (plan.dw_act != nullptr) plan.dw_act(d, p.out_w * p.exp_c);  // the row is still in L1
}

/// The project GEMM of `rows` output rows starting at output row `first` (of the batch's
/// flattened rows) from d into y, with the residual and the clamp, on `pool`.
void project_rows(const BottleneckProblem& p, const float* d, int64_t first, int64_t rows,
                  pthreadpool_t pool) {
  const int64_t at = first * p.out_w * p.out_c;
  GemmProblem g;
  g.m = rows * p.out_w;
  g.n = p.out_c;
  g.k = p.exp_c;
  g.a = d;
  g.lda = p.exp_c;
  g.packed = p.project_packed;
  g.c = p.y + at;
  g.ldc = p.out_c;
  g.residual = p.residual != nullptr ? p.residual + at : nullptr;
  g.out_min = p.out_min;
  g.out_max = p.out_max;
  packed_gemm(g, pool);
}

/// The expand GEMM of input rows [first, end) of image n into `e` (rows of in_w x exp_c).
void expand_rows(const BottleneckProblem& p, int64_t n, int64_t first, int64_t end, float* e) {
  GemmProblem g;
  g.m = (end - first) * p.in_w;
  g.n = p.exp_c;
  g.k = p.in_c;
  g.a = p.x + ((n * p.in_h + first) * p.in_w) * p.in_c;
  g.lda = p.in_c;
  g.packed = p.expand_packed;
  g.c = e;
  g.ldc = p.exp_c;
  g.activation = p.expand.act;
  g.out_min = p.expand.lo;
  g.out_max = p.expand.hi;
  packed_gemm(g, nullptr);
}

/// Output rows [oy0, oy1) of image n, in bands, on the calling thread.
void run_rows(const Plan& plan, int64_t n, int64_t oy0, int64_t oy1, float* ebuf, float* dbuf) {
  const BottleneckProblem& p = *plan.p;
  const int64_t e_row = p.in_w * p.exp_c;
  const int64_t d_row = p.out_w * p.exp_c;
  int64_t have_lo = 0, have_hi = 0;  // expanded input rows now at the front of ebuf
  for (int64_t oy = oy0; oy < oy1; oy += plan.s.band) {
    const int64_t rows = min64(plan.s.band, oy1 - oy);
    // The input rows this band's windows touch: [lo, hi) (empty when all are padding).
    const int64_t lo = min64(p.in_h, max64(0, oy * p.stride_h - p.pad_top));
    const int64_t hi = max64(lo, min64(p.in_h, (oy + rows - 1) * p.stride_h - p.pad_top + p.kernel_h));
    const float* e = nullptr;  // input row lo
    if (p.expand_packed != nullptr) {
      int64_t start = lo;
      if (lo < have_hi && lo >= have_lo) {  // the rows both bands read: move, not recompute
        std::memmove(ebuf, ebuf + (lo - have_lo) * e_row,
                     static_cast<size_t>((have_hi - lo) * e_row) * sizeof(float));
        start = have_hi;
      }
      if (hi > start) expand_rows(p, n, start, hi, ebuf + (start - lo) * e_row);
      have_lo = lo;
      have_hi = hi;
      e = ebuf;
    } else {
      e = p.x + ((n * p.in_h + lo) * p.in_w) * p.in_c;
    }
    float* d = p.project_packed != nullptr ? dbuf : p.y + ((n * p.out_h + oy) * p.out_w) * p.out_c;
    for (int64_t i = 0; i < rows; ++i) depthwise_out_row(plan, e, lo, oy + i, d + i * d_row);
    if (p.project_packed != nullptr) project_rows(p, dbuf, n * p.out_h + oy, rows, nullptr);
  }
}

/// Layer mode, task r: depthwise output row r of the batch's flattened rows.
void layer_row(void* context, size_t r) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const BottleneckProblem& p = *plan.p;
  const int64_t n = static_cast<int64_t>(r) / p.out_h, oy = static_cast<int64_t>(r) % p.out_h;
  const int64_t in_image = p.expand_packed != nullptr ? p.in_h * p.in_w * p.exp_c
                                                      : p.in_h * p.in_w * p.in_c;
  depthwise_out_row(plan, plan.e_all + n * in_image, 0, oy,
                    plan.d_all + static_cast<int64_t>(r) * p.out_w * p.exp_c);
}

/// Layer mode: the expand GEMM over the pool into the scratch, the depthwise rows over the
/// pool, the project GEMM over the pool.
void run_layers(Plan* plan, pthreadpool_t pool) {
  const BottleneckProblem& p = *plan->p;
  plan->e_all = p.x;
  if (p.expand_packed != nullptr) {
    GemmProblem g;
    g.m = p.batch * p.in_h * p.in_w;
    g.n = p.exp_c;
    g.k = p.in_c;
    g.a = p.x;
    g.lda = p.in_c;
    g.packed = p.expand_packed;
    g.c = plan->scratch;
    g.ldc = p.exp_c;
    g.activation = p.expand.act;
    g.out_min = p.expand.lo;
    g.out_max = p.expand.hi;
    packed_gemm(g, pool);
    plan->e_all = plan->scratch;
  }
  plan->d_all = p.project_packed != nullptr ? plan->scratch + layer_e_floats(p) : p.y;
  gemm_detail::run_tasks(pool, &layer_row, plan, p.batch * p.out_h);
  if (p.project_packed != nullptr) project_rows(p, plan->d_all, 0, p.batch * p.out_h, pool);
}

/// Task `part`: its share of the batch's output rows (possibly spanning images).
void run_part(void* context, size_t part) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const BottleneckProblem& p = *plan.p;
  const int64_t total = p.batch * p.out_h;
  const int64_t r1 = split_point(total, plan.parts, static_cast<int64_t>(part) + 1);
  float* slot = plan.scratch + static_cast<int64_t>(part) * plan.s.slot_floats;
  for (int64_t r = split_point(total, plan.parts, static_cast<int64_t>(part)); r < r1;) {
    const int64_t n = r / p.out_h, oy0 = r % p.out_h;
    const int64_t oy1 = min64(p.out_h, oy0 + (r1 - r));
    run_rows(plan, n, oy0, oy1, slot, slot + plan.s.e_floats);
    r += oy1 - oy0;
  }
}

}  // namespace

int64_t& bottleneck_band_floats() {
  static int64_t floats = 64 << 10;
  return floats;
}

uint64_t bottleneck_scratch_floats(const BottleneckProblem& p, int64_t threads) {
  if (empty(p)) return 0;
  // Enough for every pool size up to `threads` (the mode depends on the actual one).
  int64_t most = 0;
  for (int64_t t = 1; t <= max64(1, threads); ++t) {
    const int64_t parts = parts_for(p, t);
    most = max64(most, layer_mode(p, parts) ? layer_floats(p) : parts * slot_shape(p).slot_floats);
  }
  return static_cast<uint64_t>(most);
}

void bottleneck_nhwc(const BottleneckProblem& p, float* scratch, pthreadpool_t pool) {
  if (empty(p)) return;
  Plan plan;
  plan.p = &p;
  plan.s = slot_shape(p);
  plan.parts = parts_for(p, gemm_detail::pool_threads(pool));
  plan.scratch = scratch;
  plan.row = row_fn();
  plan.dw_act = gemm_activation_fn(p.depthwise.act);
  if (layer_mode(p, plan.parts)) {
    run_layers(&plan, pool);
    return;
  }
  gemm_detail::run_tasks(pool, &run_part, &plan, plan.parts);
}

void depthwise_row(const DepthwiseRow& r) {
  if (r.out_w <= 0 || r.channels <= 0) return;
  row_fn()(r);
  const ActivationFn act = gemm_activation_fn(r.epi.act);
  if (act != nullptr) act(r.out, r.out_w * r.channels);
}

}  // namespace tern::cpu
