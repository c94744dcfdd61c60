// The Winograd convolution driver (F(2x2, 3x3) and F(4x4, 3x3)): tiles, blocks, tasks and the
// scratch slots, on the packed GEMM's microkernels and the per-ISA transforms. Never allocates.
//
// Tiles: output m x m blocks (ceil(out_h/m) × ceil(out_w/m) per image; m = 2 or 4), numbered
// over the batch; each reads a t x t input tile (t = m + 2) and makes t² GEMM rows.
// Tasks = (tile part, out_c group) pairs, at most one per pool thread, task t using scratch slot
// t (pthreadpool names no thread, but two concurrent tasks never share an index, so never a
// slot). Normally one group and one part per thread; with few tiles per thread the out_c panels
// are split over the threads instead (each task then reads only its share of the weight).
// A task cuts its part into blocks of at most `rows` tiles (V and M of a block fit
// block_bytes) and per block: for each K block of kc channels, input-transform the block's
// tiles into V[t²][rows][kc] and run the t² GEMMs M[xi] (+)= V[xi] · U[xi] (microkernels: for
// each xi, for each N tile, for each M tile: the U sliver stays in L1 across M tiles; the first
// K block starts from U's bias slots, the bias being in the matrix at a = b = 1); then
// output-transform M into y with the residual and the clamp.
#include "backends/cpu/kernels/winograd_conv.h"

#include <limits>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_transform.h"

namespace tern::cpu {
namespace winograd_detail {

WinogradBlocking& winograd_blocking() {
  static WinogradBlocking blocking;
  return blocking;
}

}  // namespace winograd_detail

namespace {

using gemm_detail::MicrokernelSet;
using gemm_detail::TileArgs;
using gemm_detail::TileChoice;
using winograd_detail::TransformSet;

using gemm_detail::ceil_div;
using gemm_detail::max64;
using gemm_detail::min64;
using gemm_detail::split_point;

/// Most tile positions (F(4x4, 3x3)'s 6x6) and outputs per tile (4x4).
constexpr int kMaxPositions = 36;
constexpr int kMaxTileOutputs = 16;

/// n rounded up to whole 64-byte lines (16 floats).
int64_t round_lines(int64_t n) { return ceil_div(n, kPanelWidth) * kPanelWidth; }

/// A row stride of at least n floats: whole lines, and not a multiple of 4 KiB (rows of a
/// microkernel tile would share L1 sets).
int64_t row_stride(int64_t n) {
  const int64_t s = round_lines(n);
  return s % 1024 == 0 ? s + kPanelWidth : s;
}

/// A plane stride (one of the tile positions) of at least n floats: an odd number of lines, so
/// the planes at the same row and column fall in different L1 sets.
int64_t plane_stride(int64_t n) {
  const int64_t lines = ceil_div(n, kPanelWidth);
  return (lines % 2 == 0 ? lines + 1 : lines) * kPanelWidth;
}

/// What fixes the scratch: ISA-independent, so winograd_scratch_floats needs no ISA.
struct SlotShape {
  int64_t m = 2, side = 4, positions = 16;  // outputs per tile side, input tile side, side²
  int64_t tiles_h = 0, tiles_w = 0, tiles = 0;
  int64_t panels = 0;            // ceil(out_c / 16)
  int64_t k_blocks = 1, kc = 0;  // kc: the largest K block
  int64_t lda = 0;               // V row stride
  int64_t parts = 1, groups = 1;
  int64_t group_panels = 0;  // panels of the largest out_c group
  int64_t ldm = 0;           // M row stride
  int64_t rows = 0;          // most tiles in a block
  int64_t plane_v = 0, plane_m = 0;
  int64_t slot_floats = 0;  // V planes, M planes, a zero row of kc floats
  int64_t tasks() const { return parts * groups; }
};

bool empty(const WinogradProblem& p) {
  return p.batch <= 0 || p.in_h <= 0 || p.in_w <= 0 || p.in_c <= 0 || p.out_h <= 0 ||
         p.out_w <= 0 || p.out_c <= 0;
}

SlotShape slot_shape(const WinogradProblem& p, int64_t threads) {
  const winograd_detail::WinogradBlocking& blocking = winograd_detail::winograd_blocking();
  SlotShape s;
  s.m = static_cast<int64_t>(p.tile);
  s.side = s.m + 2;
  s.positions = winograd_positions(p.tile);
  s.tiles_h = ceil_div(p.out_h, s.m);
  s.tiles_w = ceil_div(p.out_w, s.m);
  s.tiles = p.batch * s.tiles_h * s.tiles_w;
  s.panels = ceil_div(p.out_c, kPanelWidth);
  s.k_blocks = ceil_div(p.in_c, max64(1, blocking.kc_max));
  s.kc = ceil_div(p.in_c, s.k_blocks);
  s.lda = row_stride(s.kc);

  // One part per thread; with few tiles per thread, out_c groups instead (each task reads only
  // its group's share of U, which otherwise every task streams in full).
  threads = max64(1, threads);
  s.parts = threads;
  s.groups = 1;
  if (threads > 1 && s.tiles < threads * blocking.min_tiles_per_part) {
    s.groups = min64(threads, s.panels);
    s.parts = max64(1, threads / s.groups);
  }
  s.parts = min64(s.parts, s.tiles);
  s.group_panels = ceil_div(s.panels, s.groups);
  s.ldm = row_stride(s.group_panels * kPanelWidth);

  // A task streams its share of U once per block: when that share is large, larger blocks
  // (beyond L2) cost less than reading U more often (measured with F(4x4)'s 36 matrices;
  // F(2x2) keeps its blocks, which sizes from 256 KiB to 4 MiB did not change).
  const int64_t u_share = static_cast<int64_t>(sizeof(float)) * s.positions * s.group_panels *
                          kPanelWidth * (p.in_c + 1);
  const int64_t block_bytes = p.tile == WinogradTile::F4x4 && u_share > blocking.large_u_bytes
                                  ? blocking.large_u_block_bytes
                                  : blocking.block_bytes;
  // Tiles per block: V and M of the block within block_bytes, but at least a full register
  // tile of the widest ISA, and no more than a part has.
  const int64_t budget_rows =
      block_bytes / (static_cast<int64_t>(sizeof(float)) * s.positions * (s.lda + s.ldm));
  s.rows = min64(ceil_div(s.tiles, s.parts), max64(gemm_detail::kMaxTileRows, budget_rows));
  s.plane_v = plane_stride(s.rows * s.lda);
  s.plane_m = plane_stride(s.rows * s.ldm);
  s.slot_floats = s.positions * (s.plane_v + s.plane_m) + round_lines(s.kc);
  return s;
}

struct Plan {
  const WinogradProblem* p = nullptr;
  const MicrokernelSet* ks = nullptr;
  winograd_detail::InputTileFn input = nullptr;  // this tile kind's transforms
  winograd_detail::OutputTileFn output = nullptr;
  SlotShape s;
  float* scratch = nullptr;
  int64_t rows = 0;           // tiles per block for this ISA (<= s.rows)
  int64_t matrix_floats = 0;  // one U matrix
  int64_t panel_stride = 0;   // 16 * (C + 1)
  int last_cols = 16;         // valid columns of the last panel of out_c
  ActivationFn activation = nullptr;  // the epilogue's, or null
};

/// Image, tile row and tile column of tile t.
struct TileCursor {
  int64_t n = 0, th = 0, tw = 0;
  TileCursor(const SlotShape& s, int64_t t) {
    const int64_t per_image = s.tiles_h * s.tiles_w;
    n = t / per_image;
    th = (t - n * per_image) / s.tiles_w;
    tw = t - n * per_image - th * s.tiles_w;
  }
  void next(const SlotShape& s) {
    if (++tw == s.tiles_w) {
      tw = 0;
      if (++th == s.tiles_h) {
        th = 0;
        ++n;
      }
    }
  }
};

/// V[xi][r][0, kc) for the tiles [t0, t0 + rows), channels [k0, k0 + kc).
void input_transform(const Plan& plan, int64_t t0, int64_t rows, int64_t k0, int64_t kc, float* v,
                     const float* zeros) {
  const WinogradProblem& p = *plan.p;
  const int64_t image_floats = p.in_h * p.in_w * p.in_c;
  const int64_t m = plan.s.m, side = plan.s.side;
  TileCursor at(plan.s, t0);
  const float* src[kMaxPositions];
  for (int64_t r = 0; r < rows; ++r, at.next(plan.s)) {
    const float* image = p.x + at.n * image_floats + k0;
    const int64_t ih0 = m * at.th - p.pad_top, iw0 = m * at.tw - p.pad_left;
    for (int64_t i = 0; i < side; ++i) {
      const int64_t ih = ih0 + i;
      const bool row_in = ih >= 0 && ih < p.in_h;
      for (int64_t j = 0; j < side; ++j) {
        const int64_t iw = iw0 + j;
        src[side * i + j] =
            row_in && iw >= 0 && iw < p.in_w ? image + (ih * p.in_w + iw) * p.in_c : zeros;
      }
    }
    plan.input(src, kc, v + r * plan.s.lda, plan.s.plane_v);
  }
}

/// y (and the residual) at the tiles [t0, t0 + rows), channels [o0, o0 + oc), from M.
void output_transform(const Plan& plan, int64_t t0, int64_t rows, int64_t o0, int64_t oc,
                      const float* m) {
  const WinogradProblem& p = *plan.p;
  const int64_t m_side = plan.s.m, outputs = m_side * m_side;
  TileCursor at(plan.s, t0);
  float* dst[kMaxTileOutputs];
  const float* res[kMaxTileOutputs];
  for (int64_t r = 0; r < rows; ++r, at.next(plan.s)) {
    for (int64_t q = 0; q < outputs; ++q) {
      const int64_t oh = m_side * at.th + q / m_side, ow = m_side * at.tw + q % m_side;
      const bool in = oh < p.out_h && ow < p.out_w;
      const int64_t offset = ((at.n * p.out_h + oh) * p.out_w + ow) * p.out_c + o0;
      dst[q] = in ? p.y + offset : nullptr;
      res[q] = in && p.residual != nullptr ? p.residual + offset : nullptr;
    }
    plan.output(m + r * plan.s.ldm, plan.s.plane_m, oc, dst,
                p.residual != nullptr ? res : nullptr, p.out_min, p.out_max);
    if (plan.activation != nullptr) {
      for (int64_t q = 0; q < outputs; ++q) {
        if (dst[q] != nullptr) plan.activation(dst[q], 1, oc, oc, p.activation_alpha);
      }
    }
  }
}

void run_task(const Plan& plan, int64_t task) {
  const WinogradProblem& p = *plan.p;
  const SlotShape& s = plan.s;
  const int64_t part = task / s.groups, group = task % s.groups;
  const int64_t t0 = split_point(s.tiles, s.parts, part);
  const int64_t t1 = split_point(s.tiles, s.parts, part + 1);
  const int64_t panel0 = split_point(s.panels, s.groups, group);
  const int64_t panel1 = split_point(s.panels, s.groups, group + 1);
  const int64_t o0 = panel0 * kPanelWidth;
  const int64_t oc = min64(p.out_c, panel1 * kPanelWidth) - o0;

  float* v = plan.scratch + task * s.slot_floats;
  float* m = v + s.positions * s.plane_v;
  float* zeros = m + s.positions * s.plane_m;  // the taps outside x
  for (int64_t i = 0; i < round_lines(s.kc); ++i) zeros[i] = 0.0f;

  TileArgs args;
  args.lda = s.lda;
  args.panel_stride = plan.panel_stride;
  args.ldc = s.ldm;
  args.residual = nullptr;
  args.out_min = -std::numeric_limits<float>::infinity();  // M is an intermediate: no clamp
  args.out_max = std::numeric_limits<float>::infinity();

  const int64_t blocks = ceil_div(t1 - t0, plan.rows);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t b0 = t0 + split_point(t1 - t0, blocks, b);
    const int64_t rows = t0 + split_point(t1 - t0, blocks, b + 1) - b0;
    const TileChoice tc = gemm_detail::choose_tiles(*plan.ks, rows, panel1 - panel0, p.in_c);
    for (int64_t kb = 0; kb < s.k_blocks; ++kb) {
      const int64_t k0 = split_point(p.in_c, s.k_blocks, kb);
      const int64_t kc = split_point(p.in_c, s.k_blocks, kb + 1) - k0;
      input_transform(plan, b0, rows, k0, kc, v, zeros);
      args.kc = kc;
      args.first = kb == 0;
      args.last = kb == s.k_blocks - 1;
      for (int64_t xi = 0; xi < s.positions; ++xi) {
        const float* u = p.packed + xi * plan.matrix_floats;
        for (int64_t j = 0; j < tc.n_tiles; ++j) {
          const int64_t pj = panel0 + gemm_detail::tile_panel0(panel1 - panel0, tc.n_tiles, j);
          const int64_t np =
              panel0 + gemm_detail::tile_panel0(panel1 - panel0, tc.n_tiles, j + 1) - pj;
          const float* panel = u + pj * plan.panel_stride;
          args.bias = panel;
          args.b = panel + kPanelWidth + k0 * kPanelWidth;
          args.last_cols = pj + np == s.panels ? plan.last_cols : static_cast<int>(kPanelWidth);
          for (int64_t i = 0; i < tc.m_tiles; ++i) {
            const int64_t r0 = split_point(rows, tc.m_tiles, i);
            const int64_t r1 = split_point(rows, tc.m_tiles, i + 1);
            args.a = v + xi * s.plane_v + r0 * s.lda;
            args.c = m + xi * s.plane_m + r0 * s.ldm + (pj - panel0) * kPanelWidth;
            plan.ks->kernels[r1 - r0][np](args);
          }
        }
      }
    }
    output_transform(plan, b0, rows, o0, oc, m);
  }
}

void run_task_entry(void* context, size_t task) {
  run_task(*static_cast<const Plan*>(context), static_cast<int64_t>(task));
}

}  // namespace

uint64_t winograd_scratch_floats(const WinogradProblem& p, int64_t threads) {
  if (empty(p)) return 0;
  // Enough for every pool size up to `threads` (the plan depends on the actual one).
  uint64_t most = 0;
  for (int64_t t = 1; t <= max64(1, threads); ++t) {
    const SlotShape s = slot_shape(p, t);
    const uint64_t floats = static_cast<uint64_t>(s.tasks()) * static_cast<uint64_t>(s.slot_floats);
    most = floats > most ? floats : most;
  }
  return most;
}

void winograd_conv_nhwc(const WinogradProblem& p, float* scratch, pthreadpool_t pool) {
  if (empty(p)) return;
  Plan plan;
  plan.p = &p;
  const TransformSet* ts = nullptr;
  plan.activation = gemm_activation_fn(p.activation);
  switch (packed_gemm_isa()) {  // one read: the microkernels and transforms agree
    case GemmIsa::Avx512:
      plan.ks = gemm_detail::avx512_microkernels();
      ts = winograd_detail::avx512_transforms();
      break;
    case GemmIsa::Avx2:
      plan.ks = gemm_detail::avx2_microkernels();
      ts = winograd_detail::avx2_transforms();
      break;
    case GemmIsa::Scalar:  // NEON microkernels on aarch64, as packed_gemm's dispatch
      plan.ks = gemm_detail::neon_microkernels() != nullptr ? gemm_detail::neon_microkernels()
                                                            : gemm_detail::scalar_microkernels();
      ts = winograd_detail::scalar_transforms();
      break;
  }
  const bool f4 = p.tile == WinogradTile::F4x4;
  plan.input = f4 ? ts->input_f43 : ts->input;
  plan.output = f4 ? ts->output_f43 : ts->output;
  plan.s = slot_shape(p, gemm_detail::pool_threads(pool));
  plan.scratch = scratch;
  // Blocks of whole register tiles of this ISA where the slot has room for one.
  plan.rows = plan.s.rows >= plan.ks->max_rows ? plan.s.rows / plan.ks->max_rows * plan.ks->max_rows
                                               : plan.s.rows;
  plan.matrix_floats = static_cast<int64_t>(packed_weight_floats(p.out_c, p.in_c));
  plan.panel_stride = kPanelWidth * (p.in_c + 1);
  plan.last_cols = static_cast<int>(p.out_c - (plan.s.panels - 1) * kPanelWidth);
  gemm_detail::run_tasks(pool, &run_task_entry, &plan, plan.s.tasks());
}

}  // namespace tern::cpu
