// The fused inverted bottleneck's driver (bottleneck.h): output rows split into one contiguous
// range per pool thread, each range walked in bands whose expanded input rows fit the band
// budget; rows shared by consecutive bands (the depthwise window's overlap) are moved to the
// front of the band buffer rather than expanded again, so only the first band of a range pays
// for its halo. With a banded project the ranges split the output pixels instead (a row cut
// between two ranges has its depthwise output made by both, each projecting only its own
// pixels). Never allocates.
#include "backends/cpu/kernels/bottleneck.h"

#include <cstring>

#include "backends/cpu/kernels/depthwise_row.h"
#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "runtime/kernels/util/simd_dispatch.h"

#if defined(TERN_SIMD_X86_DISPATCH)
#include <immintrin.h>
#endif

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

/// Whether `p` has a squeeze-excitation stage (between its depthwise and its project).
bool has_se(const BottleneckProblem& p) {
  return p.project_packed != nullptr && p.se_squeeze_packed != nullptr &&
         p.se_excite_packed != nullptr && p.se_c > 0;
}

int64_t pad16(int64_t floats) { return (floats + 15) / 16 * 16; }

/// With squeeze-excitation: whether the gate goes into a copy of the project's packed weight
/// (rows scaled) rather than into d (every pixel scaled): whichever is fewer floats per image.
bool se_scales_weight(const BottleneckProblem& p) {
  return static_cast<int64_t>(packed_weight_floats(p.out_c, p.exp_c)) <
         p.out_h * p.out_w * p.exp_c;
}

/// The squeeze-excitation part of the scratch (after the depthwise stage's): d for the whole
/// batch, the channel sums of every output row, the mean, squeeze and gate vectors, and the
/// scaled project weight when se_scales_weight.
int64_t se_d_floats(const BottleneckProblem& p) {
  return pad16(p.batch * p.out_h * p.out_w * p.exp_c);
}
int64_t se_sums_floats(const BottleneckProblem& p) { return pad16(p.batch * p.out_h * p.exp_c); }
int64_t se_floats(const BottleneckProblem& p) {
  return se_d_floats(p) + se_sums_floats(p) + 2 * pad16(p.exp_c) + pad16(p.se_c) +
         (se_scales_weight(p) ? pad16(static_cast<int64_t>(packed_weight_floats(p.out_c, p.exp_c)))
                              : 0);
}

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
  // Without an expand and without a banded project, bands hold nothing: one band per range.
  if (p.expand_packed == nullptr && (p.project_packed == nullptr || has_se(p))) s.band = p.out_h;
  s.band = min64(s.band, p.out_h);
  if (p.expand_packed != nullptr) s.e_floats = ((s.band - 1) * p.stride_h + p.kernel_h) * row;
  if (p.project_packed != nullptr && !has_se(p)) s.d_floats = s.band * p.out_w * p.exp_c;
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

/// The scratch floats of the depthwise stage and what precedes it, for `parts` tasks: the
/// whole expanded tensor in layer mode (and, without squeeze-excitation, the whole depthwise
/// output), else one band slot per task; then the squeeze-excitation's (se_floats).
int64_t scratch_for(const BottleneckProblem& p, int64_t parts) {
  if (!has_se(p)) {
    return layer_mode(p, parts) ? layer_floats(p) : parts * slot_shape(p).slot_floats;
  }
  return (layer_mode(p, parts) ? layer_e_floats(p) : parts * slot_shape(p).slot_floats) +
         se_floats(p);
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
      fn = depthwise_detail::neon_row();  // aarch64 (null elsewhere)
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
  /// Without a project, with a residual: adds it to each depthwise output row (in y).
  bool add_residual = false;
  /// Without a project, with a post-activation affine: applies it to each depthwise output row.
  bool affine = false;
  // Layer mode: the whole expanded tensor (or x) and where the depthwise rows go. With
  // squeeze-excitation (both modes) d_all is the batch's d in the scratch.
  const float* e_all = nullptr;
  float* d_all = nullptr;
  /// Squeeze-excitation: [batch * out_h][exp_c] channel sums of each depthwise output row;
  /// null without.
  float* row_sums = nullptr;
  void (*sums)(const float*, int64_t, int64_t, float*) = nullptr;
  /// Parts split the batch's output pixels, not its rows (banded_project): 19 rows of 19
  /// pixels split 181 / 180 over 2 threads rather than 10 / 9 rows (Xception's 728-channel
  /// separable convs, whose project GEMM is nearly all the work).
  bool pixel_parts = false;
};

/// Whether the project GEMM runs band by band, from each band's depthwise output in the task's
/// slot (a project without squeeze-excitation, whose gate must wait for every row).
bool banded_project(const BottleneckProblem& p) {
  return p.project_packed != nullptr && !has_se(p);
}

/// sums[c] = Σ_px row[px * channels + c] over `pixels` pixels (a row still in L1), in pixel
/// order whatever the ISA (so the gate does not depend on it beyond the kernels' rounding).
using ChannelSumsFn = void (*)(const float*, int64_t, int64_t, float*);

void channel_sums_scalar(const float* row, int64_t pixels, int64_t channels, float* sums) {
  for (int64_t c = 0; c < channels; ++c) sums[c] = 0.0f;
  for (int64_t px = 0; px < pixels; ++px) {
    const float* r = row + px * channels;
    for (int64_t c = 0; c < channels; ++c) sums[c] += r[c];
  }
}

#if defined(TERN_SIMD_X86_DISPATCH)
/// 64 channels at a time in four accumulators, the tail masked.
TERN_SIMD_TARGET_AVX512 void channel_sums_avx512(const float* row, int64_t pixels,
                                                 int64_t channels, float* sums) {
  int64_t c = 0;
  for (; c + 64 <= channels; c += 64) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t px = 0; px < pixels; ++px) {
      const float* r = row + px * channels + c;
      a0 = _mm512_add_ps(a0, _mm512_loadu_ps(r));
      a1 = _mm512_add_ps(a1, _mm512_loadu_ps(r + 16));
      a2 = _mm512_add_ps(a2, _mm512_loadu_ps(r + 32));
      a3 = _mm512_add_ps(a3, _mm512_loadu_ps(r + 48));
    }
    _mm512_storeu_ps(sums + c, a0);
    _mm512_storeu_ps(sums + c + 16, a1);
    _mm512_storeu_ps(sums + c + 32, a2);
    _mm512_storeu_ps(sums + c + 48, a3);
  }
  for (; c < channels; c += 16) {
    const int64_t left = channels - c;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xFFFF)
                                   : static_cast<__mmask16>((1u << left) - 1u);
    __m512 a = _mm512_setzero_ps();
    for (int64_t px = 0; px < pixels; ++px) {
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, row + px * channels + c));
    }
    _mm512_mask_storeu_ps(sums + c, m, a);
  }
}

/// 32 channels at a time in four accumulators, the tail scalar.
TERN_SIMD_TARGET_AVX2 void channel_sums_avx2(const float* row, int64_t pixels, int64_t channels,
                                             float* sums) {
  int64_t c = 0;
  for (; c + 32 <= channels; c += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t px = 0; px < pixels; ++px) {
      const float* r = row + px * channels + c;
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(r));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(r + 8));
      a2 = _mm256_add_ps(a2, _mm256_loadu_ps(r + 16));
      a3 = _mm256_add_ps(a3, _mm256_loadu_ps(r + 24));
    }
    _mm256_storeu_ps(sums + c, a0);
    _mm256_storeu_ps(sums + c + 8, a1);
    _mm256_storeu_ps(sums + c + 16, a2);
    _mm256_storeu_ps(sums + c + 24, a3);
  }
  for (; c < channels; ++c) {
    float a = 0.0f;
    for (int64_t px = 0; px < pixels; ++px) a += row[px * channels + c];
    sums[c] = a;
  }
}
#endif

ChannelSumsFn channel_sums_fn() {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      return &channel_sums_avx512;
    case GemmIsa::Avx2:
      return &channel_sums_avx2;
    case GemmIsa::Scalar:
      break;
  }
#endif
  return &channel_sums_scalar;
}

/// r's rows by `row`, then the activation `act` (null: none). Without one, the post-affine and
/// the residual go in the row kernel's store; with one they must follow it, so they become
/// passes over the finished rows (still in L1 or L2).
void rows_with_epilogue(depthwise_detail::RowFn row, ActivationFn act, const DepthwiseRow& r) {
  if (act == nullptr) {
    row(r);
    return;
  }
  DepthwiseRow bare = r;
  bare.post_scale = bare.post_shift = bare.residual = nullptr;
  row(bare);
  const int64_t pixels = r.out_rows * r.out_w;
  act(r.out, 1, pixels * r.channels, 0, 0.0f);
  if (r.post_scale != nullptr) {
    gemm_affine_fn()(r.out, r.post_scale, r.post_shift, pixels, r.channels, r.channels);
  }
  if (r.residual != nullptr) gemm_add_fn()(r.out, r.residual, 1, pixels * r.channels, 0);
}

/// Output rows a depthwise call takes at once (DepthwiseRow::out_rows): each channel block's
/// input columns are read from L2 once per call rather than once per output row.
constexpr int64_t kDepthwiseRows = 4;
/// Row pointers a depthwise call can take: (rows - 1) · stride_h + kernel_h of them.
constexpr int64_t kTapSlots = 64;

/// The output rows one depthwise call takes for p: kDepthwiseRows, fewer when its windows' rows
/// would not fit kTapSlots (a stride near the kernel's bound).
int64_t rows_per_call(const BottleneckProblem& p) {
  return min64(kDepthwiseRows, (kTapSlots - p.kernel_h) / p.stride_h + 1);
}

/// `count` (<= rows_per_call(p)) depthwise output rows from oy of image n from e (image n's rows of
/// in_w x exp_c, starting at input row e_first) into d (rows of out_w x exp_c floats), with the
/// epilogue; without a project, the residual's rows from y_row (of the batch's flattened output
/// rows) are added after it.
void depthwise_out_rows(const Plan& plan, const float* e, int64_t e_first, int64_t oy,
                        int64_t count, float* d, int64_t y_row) {
  const BottleneckProblem& p = *plan.p;
  const int64_t e_row = p.in_w * p.exp_c;
  const float* taps[kTapSlots];
  const int64_t n_taps = (count - 1) * p.stride_h + p.kernel_h;
  for (int64_t t = 0; t < n_taps; ++t) {
    const int64_t iy = oy * p.stride_h - p.pad_top + t;
    taps[t] = iy >= 0 && iy < p.in_h ? e + (iy - e_first) * e_row : nullptr;
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
  dr.out_rows = count;
  dr.stride_h = p.stride_h;
  dr.w = p.dw_weight;
  dr.bias = p.dw_bias;
  dr.epi = p.depthwise;
  dr.out = d;
  if (plan.affine) {
    dr.post_scale = p.post_scale;
    dr.post_shift = p.post_shift;
  }
  if (plan.add_residual) dr.residual = p.residual + y_row * p.out_w * p.out_c;
  rows_with_epilogue(plan.row, plan.dw_act, dr);
}

/// The project GEMM of `pixels` output pixels starting at pixel `first` (of the batch's
/// flattened pixels) from d (their depthwise output) into y, with the residual and the clamp,
/// on `pool`; `packed` is the project's weight (null: p's).
void project_pixels(const BottleneckProblem& p, const float* d, int64_t first, int64_t pixels,
                    pthreadpool_t pool, const float* packed = nullptr) {
  const int64_t at = first * p.out_c;
  GemmProblem g;
  g.m = pixels;
  g.n = p.out_c;
  g.k = p.exp_c;
  g.a = d;
  g.lda = p.exp_c;
  g.packed = packed != nullptr ? packed : p.project_packed;
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

/// Output rows [oy0, oy1) of image n, in bands, on the calling thread; a banded project writes
/// only the pixels in [px0, px1) of the batch's flattened pixels.
void run_rows(const Plan& plan, int64_t n, int64_t oy0, int64_t oy1, int64_t px0, int64_t px1,
              float* ebuf, float* dbuf) {
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
    // Where the band's depthwise rows go: the band buffer for the project, the batch's d in
    // the scratch with squeeze-excitation (the project waits for the gate), else y.
    const bool banded = banded_project(p);
    float* d = banded                ? dbuf
               : plan.row_sums != nullptr ? plan.d_all + ((n * p.out_h + oy) * p.out_w) * p.exp_c
                                          : p.y + ((n * p.out_h + oy) * p.out_w) * p.out_c;
    const int64_t per_call = rows_per_call(p);
    for (int64_t i = 0; i < rows; i += per_call) {
      const int64_t count = min64(per_call, rows - i);
      depthwise_out_rows(plan, e, lo, oy + i, count, d + i * d_row, n * p.out_h + oy + i);
      for (int64_t j = i; plan.row_sums != nullptr && j < i + count; ++j) {
        plan.sums(d + j * d_row, p.out_w, p.exp_c, plan.row_sums + (n * p.out_h + oy + j) * p.exp_c);
      }
    }
    if (banded) {
      const int64_t b0 = (n * p.out_h + oy) * p.out_w;
      const int64_t first = max64(b0, px0), end = min64(b0 + rows * p.out_w, px1);
      if (end > first) project_pixels(p, dbuf + (first - b0) * p.exp_c, first, end - first, nullptr);
    }
  }
}

/// Layer mode, task r: depthwise output row r of the batch's flattened rows.
void layer_row(void* context, size_t r) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const BottleneckProblem& p = *plan.p;
  const int64_t n = static_cast<int64_t>(r) / p.out_h, oy = static_cast<int64_t>(r) % p.out_h;
  const int64_t in_image = p.expand_packed != nullptr ? p.in_h * p.in_w * p.exp_c
                                                      : p.in_h * p.in_w * p.in_c;
  float* d = plan.d_all + static_cast<int64_t>(r) * p.out_w * p.exp_c;
  depthwise_out_rows(plan, plan.e_all + n * in_image, 0, oy, 1, d, static_cast<int64_t>(r));
  if (plan.row_sums != nullptr) {
    plan.sums(d, p.out_w, p.exp_c, plan.row_sums + static_cast<int64_t>(r) * p.exp_c);
  }
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
  // With squeeze-excitation the project waits for the gate (run_se).
  if (banded_project(p)) project_pixels(p, plan->d_all, 0, p.batch * p.out_h * p.out_w, pool);
}

/// One stage of the squeeze-excitation's vectors: out = epi(in · Wᵀ + b) for one row, on the
/// calling thread.
void se_gemv(const float* in, int64_t k, const float* packed, int64_t n,
             const StageEpilogue& epi, float* out) {
  GemmProblem g;
  g.m = 1;
  g.n = n;
  g.k = k;
  g.a = in;
  g.lda = k;
  g.packed = packed;
  g.c = out;
  g.ldc = n;
  g.activation = epi.act;
  g.out_min = epi.lo;
  g.out_max = epi.hi;
  packed_gemm(g, nullptr);
}

/// After the depthwise stage of a problem with squeeze-excitation (d and its row sums in the
/// scratch): per image, the mean, the squeeze and the gate on the calling thread, then the gate
/// into the project's weight rows (a scaled copy) or into d, and the project over the pool.
void run_se(const Plan& plan, pthreadpool_t pool) {
  const BottleneckProblem& p = *plan.p;
  const int64_t e = p.exp_c, pixels = p.out_h * p.out_w;
  float* mean = plan.row_sums + se_sums_floats(p);
  float* squeezed = mean + pad16(e);
  float* gate = squeezed + pad16(p.se_c);
  float* scaled = gate + pad16(e);  // the scaled project weight (se_scales_weight)
  const bool scale_weight = se_scales_weight(p);
  const float inv = 1.0f / static_cast<float>(pixels);
  for (int64_t n = 0; n < p.batch; ++n) {
    const float* sums = plan.row_sums + n * p.out_h * e;
    for (int64_t c = 0; c < e; ++c) mean[c] = sums[c];
    for (int64_t oy = 1; oy < p.out_h; ++oy) {
      for (int64_t c = 0; c < e; ++c) mean[c] += sums[oy * e + c];
    }
    for (int64_t c = 0; c < e; ++c) mean[c] *= inv;
    se_gemv(mean, e, p.se_squeeze_packed, p.se_c, p.se_squeeze, squeezed);
    se_gemv(squeezed, p.se_c, p.se_excite_packed, e, p.se_gate, gate);
    float* d = plan.d_all + n * pixels * e;
    if (scale_weight) {  // panels of [16 bias][e rows of 16]: row r scaled by gate[r]
      const int64_t panels = (p.out_c + kPanelWidth - 1) / kPanelWidth;
      const int64_t stride = kPanelWidth * (e + 1);
      for (int64_t q = 0; q < panels; ++q) {
        const float* src = p.project_packed + q * stride;
        float* dst = scaled + q * stride;
        for (int64_t j = 0; j < kPanelWidth; ++j) dst[j] = src[j];
        for (int64_t r = 0; r < e; ++r) {
          const float gr = gate[r];
          const float* s = src + kPanelWidth * (r + 1);
          float* t = dst + kPanelWidth * (r + 1);
          for (int64_t j = 0; j < kPanelWidth; ++j) t[j] = s[j] * gr;
        }
      }
      project_pixels(p, d, n * pixels, pixels, pool, scaled);
    } else {
      for (int64_t px = 0; px < pixels; ++px) {
        float* row = d + px * e;
        for (int64_t c = 0; c < e; ++c) row[c] *= gate[c];
      }
      project_pixels(p, d, n * pixels, pixels, pool);
    }
  }
}

/// Task `part`: its share of the batch's output rows (possibly spanning images), or with
/// pixel_parts its share of the output pixels and the rows they lie in.
void run_part(void* context, size_t part) {
  const Plan& plan = *static_cast<const Plan*>(context);
  const BottleneckProblem& p = *plan.p;
  const int64_t i = static_cast<int64_t>(part);
  const int64_t total = p.batch * p.out_h;
  int64_t r0 = split_point(total, plan.parts, i), r1 = split_point(total, plan.parts, i + 1);
  int64_t px0 = r0 * p.out_w, px1 = r1 * p.out_w;
  if (plan.pixel_parts) {
    px0 = split_point(total * p.out_w, plan.parts, i);
    px1 = split_point(total * p.out_w, plan.parts, i + 1);
    r0 = px0 / p.out_w;
    r1 = gemm_detail::ceil_div(px1, p.out_w);
  }
  float* slot = plan.scratch + i * plan.s.slot_floats;
  for (int64_t r = r0; r < r1;) {
    const int64_t n = r / p.out_h, oy0 = r % p.out_h;
    const int64_t oy1 = min64(p.out_h, oy0 + (r1 - r));
    run_rows(plan, n, oy0, oy1, px0, px1, slot, slot + plan.s.e_floats);
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
    most = max64(most, scratch_for(p, parts_for(p, t)));
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
  plan.add_residual = p.residual != nullptr && p.project_packed == nullptr;
  plan.affine = p.post_scale != nullptr && p.project_packed == nullptr;
  plan.pixel_parts = banded_project(p);
  const bool layers = layer_mode(p, plan.parts);
  if (has_se(p)) {  // the batch's d after the depthwise stage's scratch, then its row sums
    plan.d_all = scratch + (layers ? layer_e_floats(p) : plan.parts * plan.s.slot_floats);
    plan.row_sums = plan.d_all + se_d_floats(p);
    plan.sums = channel_sums_fn();
  }
  if (layers) {
    run_layers(&plan, pool);
  } else {
    gemm_detail::run_tasks(pool, &run_part, &plan, plan.parts);
  }
  if (plan.row_sums != nullptr) run_se(plan, pool);
}

void depthwise_row(const DepthwiseRow& r) {
  if (r.out_w <= 0 || r.channels <= 0) return;
  rows_with_epilogue(row_fn(), gemm_activation_fn(r.epi.act), r);
}

}  // namespace tern::cpu
