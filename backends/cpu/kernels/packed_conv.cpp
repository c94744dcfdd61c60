// The NHWC convolution driver (implicit GEMM on the packed GEMM's microkernels). Never allocates.
//
// Rows of the implicit A are output pixels, columns the K = KD·KH·KW·C taps in (kd, kh, kw, c)
// order (KD = 1 for a 2-D convolution). A row's K range splits into runs that are contiguous in
// x: with dilation_w == 1 and one group one run is a whole kernel row (KW·C floats: the taps kw =
// 0..KW-1 read neighbouring input pixels), else one tap (the group's C/G floats); the part of a
// run outside the image is zeros. Kernel rows are (kd, kh) pairs, kh fastest.
// Each group is its own implicit GEMM (its channel slice of x, its packed weight, its columns of
// y). Tasks = (group, M block, N group) triples over all of K (tasks never share outputs). A task
// runs: for each K block (kc rows: the gathered tile fits the stack buffer, the task's B block kc ×
// its columns stays in L2), for each M tile (max_rows output pixels): gather the tile's A rows for
// the block into the stack buffer, then for each N tile of the group: microkernel (first block from
// the bias, later ones from y's partial sums, the last adds the optional residual, then clamps: all
// in the microkernel's final store, so the residual costs no pass of its own). One gather serves
// every column panel.
#include "backends/cpu/kernels/packed_conv.h"

#include <cstring>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/shallow_conv.h"

namespace tern::cpu {
namespace gemm_detail {

ConvBlocking& conv_blocking() {
  static ConvBlocking blocking;
  return blocking;
}

}  // namespace gemm_detail

namespace {

using gemm_detail::kConvABufferFloats;
using gemm_detail::MicrokernelSet;
using gemm_detail::TileArgs;
using gemm_detail::TileKernel;

using gemm_detail::ceil_div;
using gemm_detail::max64;
using gemm_detail::min64;
using gemm_detail::split_point;

struct ConvPlan {
  const ConvProblem* p = nullptr;
  const MicrokernelSet* ks = nullptr;
  int64_t m = 0;                   // output pixels
  int64_t k = 0;                   // KD * KH * KW * C / G
  int64_t pixels = 0;              // out_d * out_h * out_w
  int64_t frame_pixels = 0;        // out_h * out_w
  int64_t image_floats = 0;        // in_d * in_h * in_w * in_c
  int64_t group_c = 0;             // C / G: input channels a group reads
  int64_t group_o = 0;             // O / G: output channels a group writes
  int64_t group_packed = 0;        // floats of one group's packed weight
  int64_t run_len = 0;             // floats per contiguous run of a row's K range
  bool row_runs = false;           // dilation_w == 1, one group: a run is a kernel row (KW taps)
  int64_t span_d = 0, span_h = 0, span_w = 0;  // (K - 1) · dilation: a receptive field's extent - 1
  int64_t row_step = 0;    // floats from one kernel row's input to the next: dh · in_w · C
  int64_t depth_jump = 0;  // floats from past kernel row (kd, KH - 1) to (kd + 1, 0)
  int64_t panels = 0;
  int64_t panel_stride = 0;
  int last_cols = 16;
  int64_t tile_panels = 1;
  int64_t m_tiles = 1, n_tiles = 1, k_blocks = 1, m_blocks = 1, n_groups = 1;
  int64_t groups = 1;    // conv groups
  int64_t g_blocks = 1;  // tasks split the conv groups into this many blocks
  int64_t lda = 0;       // row stride of the gathered A tile
  bool m_outer = false;  // a task finishes each M tile over all of K (its group's B fits in L2)
  bool skip_taps = false;  // each tile runs only the part of the window its pixels can reach
  ActivationFn activation = nullptr;  // the epilogue's, or null
};

inline void zero_floats(float* d, int64_t n) {
  const float zeros[16] = {};
  for (; n >= 16; n -= 16, d += 16) std::memcpy(d, zeros, 64);
  if (n >= 8) {
    std::memcpy(d, zeros, 32);
    n -= 8, d += 8;
  }
  if (n >= 4) {
    std::memcpy(d, zeros, 16);
    n -= 4, d += 4;
  }
  for (; n > 0; --n) *d++ = 0.0f;
}

/// copy(d, s, n) with the short runs of grouped convs (a tap of 4, 8 or 16 channels) inlined.
inline void copy_run(gemm_detail::CopyKernel copy, float* d, const float* s, int64_t n) {
  switch (n) {
    case 4:
      std::memcpy(d, s, 16);
      return;
    case 8:
      std::memcpy(d, s, 32);
      return;
    case 16:
      std::memcpy(d, s, 64);
      return;
    default:
      copy(d, s, n);
  }
}

/// The taps [lo, hi) of one window dimension (kernel k, stride s, dilation d, padding pad, input
/// extent n) that land inside the input for some output index in [o0, o1]: tap t lands for o iff
/// 0 <= o·s - pad + t·d < n, so the first tap that lands for o only falls and the past-the-last
/// only falls as o grows, and [first for o1, past-the-last for o0) holds every tap that lands
/// (perhaps a few that do not, which the gather fills with zeros). lo >= hi: none lands.
struct TapRange {
  int64_t lo = 0, hi = 0;
};
TapRange live_taps(int64_t o0, int64_t o1, int64_t k, int64_t s, int64_t d, int64_t pad,
                   int64_t n) {
  const int64_t need = pad - o1 * s;   // t·d >= need
  const int64_t below = n + pad - o0 * s;  // t·d < below
  TapRange r;
  r.lo = need <= 0 ? 0 : ceil_div(need, d);
  r.hi = below <= 0 ? 0 : min64(k, ceil_div(below, d));
  return r;
}

/// Of the window work of every output index of one dimension, the fraction whose taps land
/// inside the input.
double live_fraction(int64_t out, int64_t k, int64_t s, int64_t d, int64_t pad, int64_t n) {
  int64_t live = 0;
  for (int64_t o = 0; o < out; ++o) {
    const TapRange r = live_taps(o, o, k, s, d, pad, n);
    live += max64(0, r.hi - r.lo);
  }
  return static_cast<double>(live) / static_cast<double>(out * k);
}

/// The part of the window a register tile's output pixels can reach: kernel frames [d.lo, d.hi),
/// rows [h.lo, h.hi) and columns [w.lo, w.hi), and the K range [first, end) it spans.
struct TapWindow {
  TapRange d, h, w;
  int64_t first = 0, end = 0;
  bool empty() const { return d.lo >= d.hi || h.lo >= h.hi || w.lo >= w.hi; }
};

/// The window of output pixels [r0, r1) (of one image, frame or row where they lie in one; else
/// the whole extent of the dimensions they wrap over).
TapWindow tile_window(const ConvPlan& plan, int64_t r0, int64_t r1) {
  const ConvProblem& p = *plan.p;
  struct At {
    int64_t img, od, oh, ow;
  };
  const auto at = [&](int64_t r) {
    At a;
    a.img = r / plan.pixels;
    const int64_t in_image = r - a.img * plan.pixels;
    a.od = in_image / plan.frame_pixels;
    const int64_t in_frame = in_image - a.od * plan.frame_pixels;
    a.oh = in_frame / p.out_w;
    a.ow = in_frame - a.oh * p.out_w;
    return a;
  };
  const At a = at(r0), b = at(r1 - 1);
  int64_t od0 = 0, od1 = p.out_d - 1, oh0 = 0, oh1 = p.out_h - 1, ow0 = 0, ow1 = p.out_w - 1;
  if (a.img == b.img) {
    od0 = a.od, od1 = b.od;
    if (od0 == od1) {
      oh0 = a.oh, oh1 = b.oh;
      if (oh0 == oh1) ow0 = a.ow, ow1 = b.ow;
    }
  }
  TapWindow w;
  w.d = live_taps(od0, od1, p.kernel_d, p.stride_d, p.dilation_d, p.pad_front, p.in_d);
  w.h = live_taps(oh0, oh1, p.kernel_h, p.stride_h, p.dilation_h, p.pad_top, p.in_h);
  w.w = live_taps(ow0, ow1, p.kernel_w, p.stride_w, p.dilation_w, p.pad_left, p.in_w);
  if (!w.empty()) {
    const int64_t c = plan.group_c;
    w.first = ((w.d.lo * p.kernel_h + w.h.lo) * p.kernel_w + w.w.lo) * c;
    w.end = (((w.d.hi - 1) * p.kernel_h + w.h.hi - 1) * p.kernel_w + w.w.hi) * c;
  }
  return w;
}

/// Calls fn(a, b) for the K ranges of a non-empty window in increasing order: one per kernel row
/// (kd, kh) of it, its columns' taps (KW·C/G floats of each row, [w.lo, w.hi) of them), rows that
/// follow one another in K merged.
template <typename Fn>
void for_each_window_run(const ConvPlan& plan, const TapWindow& w, Fn&& fn) {
  const ConvProblem& p = *plan.p;
  const int64_t c = plan.group_c;
  int64_t a = -1, b = -1;  // the run being merged
  for (int64_t kd = w.d.lo; kd < w.d.hi; ++kd) {
    for (int64_t kh = w.h.lo; kh < w.h.hi; ++kh) {
      const int64_t row = (kd * p.kernel_h + kh) * p.kernel_w;
      const int64_t s = (row + w.w.lo) * c, e = (row + w.w.hi) * c;
      if (s == b) {
        b = e;
        continue;
      }
      if (a >= 0) fn(a, b);
      a = s, b = e;
    }
  }
  fn(a, b);
}

/// Writes the A rows [r0, r0 + rows) (output pixels) at K columns [k0, k0 + kc) of the group
/// whose first input channel is at x to the tile buffer (row r at dst + r * lda). Divisions
/// happen once per tile, not per row or run.
void gather_tile(const ConvPlan& plan, const float* x, int64_t r0, int64_t rows, int64_t k0,
                 int64_t kc, float* dst, int64_t lda) {
  const ConvProblem& p = *plan.p;
  const gemm_detail::CopyKernel copy = plan.ks->copy;
  const int64_t c = plan.group_c;
  const int64_t pixel = p.in_c;  // floats from one input pixel to the next
  int64_t img = r0 / plan.pixels;
  const int64_t in_frame = r0 - img * plan.pixels;
  int64_t od = in_frame / plan.frame_pixels;
  int64_t oh = (in_frame - od * plan.frame_pixels) / p.out_w;
  int64_t ow = in_frame - od * plan.frame_pixels - oh * p.out_w;
  // The run holding k0 and its kernel row (kd, kh) and first kw.
  const int64_t run0 = k0 / plan.run_len;
  const int64_t off0 = k0 - run0 * plan.run_len;
  const int64_t krow0 = plan.row_runs ? run0 : run0 / p.kernel_w;
  const int64_t kd0 = krow0 / p.kernel_h;
  const int64_t kh0 = krow0 - kd0 * p.kernel_h;
  const int64_t kw00 = plan.row_runs ? 0 : run0 - krow0 * p.kernel_w;
  const int64_t plane = p.in_h * p.in_w;  // pixels of one input frame
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t id0 = od * p.stride_d - p.pad_front;
    const int64_t ih0 = oh * p.stride_h - p.pad_top;
    const int64_t iw0 = ow * p.stride_w - p.pad_left;
    const float* image = x + img * plan.image_floats;
    float* d = dst + r * lda;
    int64_t left = kc;  // floats of this row still to write
    int64_t off = off0, kd = kd0, kh = kh0, kw0 = kw00;
    if (id0 >= 0 && id0 + plan.span_d < p.in_d && ih0 >= 0 && ih0 + plan.span_h < p.in_h &&
        iw0 >= 0 && iw0 + plan.span_w < p.in_w) {
      // Every tap inside the image (most pixels).
      if (plan.row_runs) {
        // Kernel row (kd, kh) is the KW·C floats at x[img, id0 + kd·dd, ih0 + kh·dh, iw0, 0];
        // consecutive kernel rows are dh input rows apart, and dd frames at a kd step.
        const float* run =
            image + (((id0 + kd * p.dilation_d) * p.in_h + ih0 + kh * p.dilation_h) * p.in_w +
                     iw0) * c;
        while (left > 0) {
          const int64_t n = min64(plan.run_len - off, left);
          copy(d, run + off, n);
          d += n;
          left -= n;
          off = 0;
          if (left == 0) break;
          run += plan.row_step;
          if (++kh == p.kernel_h) {
            kh = 0;
            run += plan.depth_jump;
          }
        }
      } else {
        // Tap (kd, kh, kw) is the group's C/G floats at x[img, id0 + kd·dd, ih0 + kh·dh,
        // iw0 + kw·dw, g·C/G].
        while (left > 0) {
          const float* run = image + (((id0 + kd * p.dilation_d) * p.in_h + ih0 +
                                       kh * p.dilation_h) * p.in_w + iw0 + kw0 * p.dilation_w) *
                                         pixel;
          const int64_t n = min64(plan.run_len - off, left);
          copy_run(copy, d, run + off, n);
          d += n;
          left -= n;
          off = 0;
          if (++kw0 == p.kernel_w) {
            kw0 = 0;
            if (++kh == p.kernel_h) {
              kh = 0;
              ++kd;
            }
          }
        }
      }
      left = 0;
    }
    while (left > 0) {
      const int64_t end = plan.run_len - off < left ? plan.run_len : off + left;
      const int64_t id = id0 + kd * p.dilation_d;
      const int64_t ih = ih0 + kh * p.dilation_h;
      const int64_t iw = iw0 + kw0 * p.dilation_w;  // input column of the run's first tap
      int64_t lo = 0, hi = 0;                       // floats of the run inside the image
      if (id >= 0 && id < p.in_d && ih >= 0 && ih < p.in_h) {
        if (plan.row_runs) {
          const int64_t first = iw < 0 ? -iw : 0;               // first tap inside
          const int64_t last = min64(p.kernel_w, p.in_w - iw);  // one past the last inside
          if (last > first) {
            lo = first * c;
            hi = last * c;
          }
        } else if (iw >= 0 && iw < p.in_w) {
          hi = c;
        }
      }
      const int64_t c0 = max64(off, lo), c1 = min64(end, hi);
      if (c1 > c0) {
        zero_floats(d, c0 - off);
        // Run float j is x[img, id, ih, iw + j / C, j % C] (one group: a row run may span
        // taps), else the group's channel j of tap (id, ih, iw): index ((id * in_h + ih) *
        // in_w + iw) * in_c + j (>= 0 for j >= lo).
        copy_run(copy, d + (c0 - off), image + (id * plane + ih * p.in_w + iw) * pixel + c0,
                 c1 - c0);
        zero_floats(d + (c1 - off), end - c1);
      } else {
        zero_floats(d, end - off);
      }
      d += end - off;
      left -= end - off;
      off = 0;
      if (plan.row_runs || ++kw0 == p.kernel_w) {
        kw0 = 0;
        if (++kh == p.kernel_h) {
          kh = 0;
          ++kd;
        }
      }
    }
    if (++ow == p.out_w) {
      ow = 0;
      if (++oh == p.out_h) {
        oh = 0;
        if (++od == p.out_d) {
          od = 0;
          ++img;
        }
      }
    }
  }
}

void run_task(const ConvPlan& plan, int64_t task) {
  const ConvProblem& p = *plan.p;
  const int64_t per_block = plan.m_blocks * plan.n_groups;
  const int64_t gb = task / per_block;
  const int64_t mb = (task - gb * per_block) / plan.n_groups;
  const int64_t ng = task % plan.n_groups;
  const int64_t g0 = split_point(plan.groups, plan.g_blocks, gb);
  const int64_t g1 = split_point(plan.groups, plan.g_blocks, gb + 1);
  const int64_t t0 = split_point(plan.m_tiles, plan.m_blocks, mb);
  const int64_t t1 = split_point(plan.m_tiles, plan.m_blocks, mb + 1);
  const int64_t j0 = split_point(plan.n_tiles, plan.n_groups, ng);
  const int64_t j1 = split_point(plan.n_tiles, plan.n_groups, ng + 1);

  alignas(64) float abuf[kConvABufferFloats];
  TileArgs args;
  args.a = abuf;
  args.lda = plan.lda;
  args.panel_stride = plan.panel_stride;
  args.ldc = p.out_c;
  args.out_min = p.out_min;
  args.out_max = p.out_max;
  // One piece of a (conv group, M tile) over K range [k0, k1): gather the tile's A rows from the
  // group's channels, then every N tile of the task's column range of the group (`first`: the
  // tile's first piece, started from the bias; `last`: its final one).
  auto piece = [&](int64_t g, int64_t r0, int64_t r1, int64_t k0, int64_t k1, bool first,
                   bool last) {
    const float* packed = p.packed + g * plan.group_packed;
    float* y = p.y + g * plan.group_o;  // the group's first output channel
    args.kc = k1 - k0;
    args.first = first;
    args.last = last;
    gather_tile(plan, p.x + g * plan.group_c, r0, r1 - r0, k0, k1 - k0, abuf, plan.lda);
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t panel0 = gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j);
      const int64_t np = gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j + 1) - panel0;
      const float* panel = packed + panel0 * plan.panel_stride;
      const int64_t at = r0 * p.out_c + panel0 * kPanelWidth;  // the tile's [row0, col0] in y
      args.bias = panel;
      args.b = panel + kPanelWidth + k0 * kPanelWidth;
      args.last_cols = panel0 + np == plan.panels ? plan.last_cols : static_cast<int>(kPanelWidth);
      args.c = y + at;
      // y's layout: the residual at the tile's [row0, col0] (read only by the last K block).
      args.residual =
          p.residual != nullptr && args.last ? p.residual + g * plan.group_o + at : nullptr;
      plan.ks->kernels[r1 - r0][np](args);
      if (args.last && plan.activation != nullptr) {
        // The tile is final and in L1: its activation now, row by row.
        const int64_t cols = min64(np * kPanelWidth, plan.group_o - panel0 * kPanelWidth);
        plan.activation(args.c, r1 - r0, cols, p.out_c, p.activation_alpha);
      }
    }
  };
  // One (conv group, M tile, K block) step: its K block whole, or with tap skipping the parts of
  // it inside the window the tile's pixels reach (none: the tile has done nothing in this block;
  // a tile whose pixels reach no tap at all is its bias and residual: one K column of zeros, in
  // the first block).
  auto step = [&](int64_t g, int64_t i, int64_t kb) {
    const int64_t k0 = split_point(plan.k, plan.k_blocks, kb);
    const int64_t k1 = split_point(plan.k, plan.k_blocks, kb + 1);
    const int64_t r0 = split_point(plan.m, plan.m_tiles, i);
    const int64_t r1 = split_point(plan.m, plan.m_tiles, i + 1);
    const bool first_block = kb == 0, last_block = kb == plan.k_blocks - 1;
    if (!plan.skip_taps) {
      piece(g, r0, r1, k0, k1, first_block, last_block);
      return;
    }
    const TapWindow w = tile_window(plan, r0, r1);
    if (w.empty()) {
      if (first_block) piece(g, r0, r1, 0, 1, true, true);
      return;
    }
    for_each_window_run(plan, w, [&](int64_t a, int64_t b) {
      a = max64(a, k0), b = min64(b, k1);
      if (a < b) piece(g, r0, r1, a, b, a == w.first, b == w.end);
    });
  };
  if (plan.m_outer) {
    // The task's groups' whole B stays in L2: finish each tile over all of K, for every group
    // in turn while the tile's input pixels are in cache (its C stays in L1).
    for (int64_t i = t0; i < t1; ++i) {
      for (int64_t g = g0; g < g1; ++g) {
        for (int64_t kb = 0; kb < plan.k_blocks; ++kb) step(g, i, kb);
      }
    }
  } else {
    // Only a K block of one group's B fits in L2: every tile passes over it before the next.
    for (int64_t g = g0; g < g1; ++g) {
      for (int64_t kb = 0; kb < plan.k_blocks; ++kb) {
        for (int64_t i = t0; i < t1; ++i) step(g, i, kb);
      }
    }
  }
}

void run_task_entry(void* context, size_t task) {
  run_task(*static_cast<const ConvPlan*>(context), static_cast<int64_t>(task));
}

ConvPlan make_plan(const ConvProblem& p, const MicrokernelSet* ks, int64_t threads) {
  const gemm_detail::ConvBlocking& blocking = gemm_detail::conv_blocking();
  ConvPlan plan;
  plan.p = &p;
  plan.ks = ks;
  plan.groups = p.groups;
  plan.group_c = p.in_c / p.groups;
  plan.group_o = p.out_c / p.groups;
  plan.frame_pixels = p.out_h * p.out_w;
  plan.pixels = p.out_d * plan.frame_pixels;
  plan.m = p.batch * plan.pixels;
  plan.k = p.kernel_d * p.kernel_h * p.kernel_w * plan.group_c;
  plan.image_floats = p.in_d * p.in_h * p.in_w * p.in_c;
  plan.row_runs = p.dilation_w == 1 && p.groups == 1;
  plan.run_len = plan.row_runs ? p.kernel_w * p.in_c : plan.group_c;
  plan.span_d = (p.kernel_d - 1) * p.dilation_d;
  plan.span_h = (p.kernel_h - 1) * p.dilation_h;
  plan.span_w = (p.kernel_w - 1) * p.dilation_w;
  plan.row_step = p.dilation_h * p.in_w * p.in_c;
  plan.depth_jump = p.dilation_d * p.in_h * p.in_w * p.in_c - p.kernel_h * plan.row_step;
  plan.panels = ceil_div(plan.group_o, kPanelWidth);
  plan.panel_stride = kPanelWidth * (plan.k + 1);
  plan.group_packed = plan.panels * plan.panel_stride;
  plan.last_cols = static_cast<int>(plan.group_o - (plan.panels - 1) * kPanelWidth);

  // Tap skipping where much of the window work reads padding and each kept piece is long.
  double live = live_fraction(p.out_d, p.kernel_d, p.stride_d, p.dilation_d, p.pad_front,
                                    p.in_d) *
                      live_fraction(p.out_h, p.kernel_h, p.stride_h, p.dilation_h, p.pad_top,
                                    p.in_h) *
                      live_fraction(p.out_w, p.kernel_w, p.stride_w, p.dilation_w, p.pad_left,
                                    p.in_w);

  // Register tiles, as packed_gemm picks them.
  const gemm_detail::TileChoice tiles =
      gemm_detail::choose_tiles(*ks, plan.m, plan.panels, plan.k);
  const int64_t max_rows = tiles.max_rows;
  plan.tile_panels = tiles.tile_panels;
  plan.m_tiles = tiles.m_tiles;
  plan.n_tiles = tiles.n_tiles;
  const double max_live = static_cast<double>(blocking.skip_taps_max_live_percent) / 100.0;
  if (plan.group_c >= blocking.skip_taps_min_floats && live < max_live) {
    // What the register tiles would skip: a tile's window covers all its pixels' taps (a tile
    // over two output rows of a 7 x 7 map reaches every kernel row), so the pixels' fraction
    // can promise more than the tiles keep.
    const int64_t window = p.kernel_d * p.kernel_h * p.kernel_w;
    double kept = 0.0;
    for (int64_t i = 0; i < plan.m_tiles; ++i) {
      const int64_t r0 = split_point(plan.m, plan.m_tiles, i);
      const int64_t r1 = split_point(plan.m, plan.m_tiles, i + 1);
      const TapWindow w = tile_window(plan, r0, r1);
      const int64_t taps =
          w.empty() ? 0 : (w.d.hi - w.d.lo) * (w.h.hi - w.h.lo) * (w.w.hi - w.w.lo);
      kept += static_cast<double>((r1 - r0) * taps);
    }
    live = kept / (static_cast<double>(plan.m) * static_cast<double>(window));
    plan.skip_taps = live < max_live;
  }

  // K blocks: a tile of max_rows rows × (kc rounded up to 16, plus 16 floats so the rows do not
  // share cache sets) must fit the stack buffer.
  const int64_t buffer_kc =
      (kConvABufferFloats / max_rows - kPanelWidth) / kPanelWidth * kPanelWidth;
  const int64_t kc_cap = max64(1, min64(blocking.kc_max, buffer_kc));
  plan.k_blocks = ceil_div(plan.k, kc_cap);
  const int64_t kc = ceil_div(plan.k, plan.k_blocks);
  plan.lda = ceil_div(kc, kPanelWidth) * kPanelWidth + kPanelWidth;

  // N groups: a task's B block (kc × its columns) within the L2 budget. When all of B fits,
  // tasks finish each M tile over all of K instead (no partial sums go back to memory). With
  // conv groups whose B fits one by one, a task takes a block of groups whose B fits together
  // and runs them all on each M tile (the tile's input pixels are read from memory once, not
  // once per group: ResNeXt's 32 groups of 4 channels read 16 bytes of each 64-byte line).
  const int64_t group_b_bytes = plan.k * plan.panels * kPanelWidth * 4;
  plan.m_outer = group_b_bytes <= blocking.b_block_bytes;
  plan.g_blocks = plan.m_outer ? min64(plan.groups, ceil_div(group_b_bytes * plan.groups,
                                                              blocking.b_block_bytes))
                               : plan.groups;
  const int64_t b_panels = max64(1, blocking.b_block_bytes / (kc * kPanelWidth * 4));
  const int64_t tiles_per_group = max64(1, b_panels / plan.tile_panels);
  plan.n_groups = ceil_div(plan.n_tiles, tiles_per_group);
  plan.m_blocks = 1;

  // Enough tasks for the pool, none tiny. An extra M block costs one more pass over the task's
  // B (from L3: cheap while a task keeps two or more M tiles to reuse each B load); an extra N
  // group repeats the gathers of its rows (a cost per gathered float that fewer columns
  // amortize worse); an extra block of conv groups the reads of the tiles' pixels. So: M blocks
  // of at least two tiles first, then N groups, then group blocks, then single-tile M blocks.
  if (threads > 1) {
    const double fmas = static_cast<double>(plan.m) * static_cast<double>(p.out_c) *
                        static_cast<double>(plan.k) * (plan.skip_taps ? live : 1.0);
    const int64_t wanted =
        gemm_detail::wanted_tasks(fmas, threads, blocking.tasks_per_thread, blocking.min_task_fmas);
    const auto tasks = [&plan] { return plan.g_blocks * plan.m_blocks * plan.n_groups; };
    if (tasks() < wanted) {
      plan.m_blocks = min64(max64(1, plan.m_tiles / 2),
                            ceil_div(wanted, plan.g_blocks * plan.n_groups));
    }
    if (tasks() < wanted) {
      plan.n_groups = min64(plan.n_tiles, ceil_div(wanted, plan.g_blocks * plan.m_blocks));
    }
    if (tasks() < wanted) {
      plan.g_blocks = min64(plan.groups, ceil_div(wanted, plan.m_blocks * plan.n_groups));
    }
    if (tasks() < wanted) {
      plan.m_blocks = min64(plan.m_tiles, ceil_div(wanted, plan.g_blocks * plan.n_groups));
    }
    plan.m_blocks = gemm_detail::balanced_m_blocks(plan.m_blocks, plan.g_blocks * plan.n_groups,
                                                   plan.m_tiles, threads);
  }
  return plan;
}

// A 3-D convolution whose window is one column wide (kernel_w 1, stride 1, no padding of W)
// and whose rows step by one (stride_h 1) is the 2-D convolution of the frames with each frame's
// H x W pixels as one row of H · W columns: a kernel row kh moves W · dilation_h columns, and a
// column j = h · W + w stays inside [0, in_h · W) exactly when row h does. So the frames' taps
// become a 2-D window (kernel_d rows by kernel_h columns, dilated by W), on which the planar
// paths (the shallow direct convolution) apply: the lambda layers' (r, r, 1) position convs on
// one channel, which the implicit GEMM ran one gathered float per tap.
void fold_rows_into_columns(ConvProblem* p) {
  if (p->kernel_d == 1 || p->kernel_w != 1 || p->stride_w != 1 || p->in_w != p->out_w ||
      p->pad_left != 0 || p->stride_h != 1) {
    return;
  }
  const int64_t w = p->in_w;
  p->kernel_w = p->kernel_h;
  p->dilation_w = p->dilation_h * w;
  p->pad_left = p->pad_top * w;
  p->in_w = p->in_h * w;
  p->out_w = p->out_h * w;
  p->kernel_h = p->kernel_d;
  p->dilation_h = p->dilation_d;
  p->stride_h = p->stride_d;
  p->pad_top = p->pad_front;
  p->in_h = p->in_d;
  p->out_h = p->out_d;
  p->kernel_d = p->stride_d = p->dilation_d = 1;
  p->pad_front = 0;
  p->in_d = p->out_d = 1;
}

}  // namespace

void packed_conv_nhwc(const ConvProblem& problem, pthreadpool_t pool) {
  if (problem.batch <= 0 || problem.in_h <= 0 || problem.in_w <= 0 || problem.in_c <= 0 ||
      problem.out_h <= 0 || problem.out_w <= 0 || problem.out_c <= 0 || problem.kernel_h <= 0 ||
      problem.kernel_w <= 0 || problem.groups <= 0 || problem.in_c % problem.groups != 0 ||
      problem.out_c % problem.groups != 0 || problem.in_d <= 0 || problem.out_d <= 0 ||
      problem.kernel_d <= 0 || problem.stride_d <= 0 || problem.dilation_d <= 0 ||
      problem.pad_front < 0) {
    return;
  }
  ConvProblem p = problem;
  if (p.kernel_d == 1 && p.stride_d == 1 && p.pad_front == 0 && p.in_d == p.out_d) {
    // Frame by frame: the 2-D convolution of batch · frames images (the same bytes).
    p.batch *= p.in_d;
    p.in_d = p.out_d = 1;
  }
  fold_rows_into_columns(&p);
  const bool planar = p.in_d == 1 && p.out_d == 1 && p.kernel_d == 1;
  if (planar && (p.groups == 1 ? shallow_detail::takes_one_group(p)
                               : shallow_detail::takes_grouped(p))) {
    shallow_detail::shallow_conv_nhwc(p, pool);
    return;
  }
  const MicrokernelSet* ks = gemm_detail::active_microkernels();
  ConvPlan plan = make_plan(p, ks, gemm_detail::pool_threads(pool));
  plan.activation = gemm_activation_fn(p.activation);
  gemm_detail::run_tasks(pool, &run_task_entry, const_cast<ConvPlan*>(&plan),
                         plan.g_blocks * plan.m_blocks * plan.n_groups);
}

}  // namespace tern::cpu
