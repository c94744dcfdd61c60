// The packed GEMM's driver: cuts C = clamp(A · Wᵀ + bias) into register tiles, cache blocks and
// thread tasks, and calls the dispatched microkernel on each tile (then the optional activation
// and multiplier on the finished tile). Never allocates.
//
// Tiles: M is cut into T balanced tiles of at most max_rows rows (sizes differ by at most one,
// so m = 128 gives ten tiles of 12-13 rows rather than nine of 14 and one of 2); N likewise into
// tiles of at most `panels` 16-column panels. Tasks: M tiles are grouped into m-blocks (A block
// rows × kc within the L2 budget) and N tiles into n-groups; one task = one (m-block, n-group)
// pair, computing its C block over all of K, so tasks never share outputs. Inside a task, for
// each K block (kc rows; one block when a task has a single M tile, as B is then not reused):
// for each N tile (its B sliver stays in L1/L2) for each M tile (A rows from the L2-resident A
// block): microkernel. While an N tile's M tiles run they fetch the next N tile's B sliver into
// L2, a segment each (TileArgs::prefetch), so a B that streams from memory arrives spread over
// the tiles instead of in a burst the next N tile's first M tile would wait for.
#include "backends/cpu/kernels/packed_gemm.h"

#include "backends/cpu/kernels/cache_size.h"
#include "backends/cpu/kernels/gemm_microkernel.h"

namespace tern::cpu {
namespace gemm_detail {

namespace {
constexpr int64_t kDefaultABlockBytes = 256 << 10;  // GemmBlocking::a_block_bytes
constexpr int64_t kMaxStreamingABlockBytes = 1 << 20;
}  // namespace

int64_t default_streaming_b_bytes() {
  const int64_t l2 = l2_cache_bytes();
  return l2 > 0 ? l2 / 2 : INT64_MAX;
}

int64_t default_streaming_a_block_bytes() {
  const int64_t half = l2_cache_bytes() / 2;
  return half < kDefaultABlockBytes        ? kDefaultABlockBytes
         : half > kMaxStreamingABlockBytes ? kMaxStreamingABlockBytes
                                           : half;
}

GemmBlocking& gemm_blocking() {
  static GemmBlocking blocking;
  return blocking;
}

}  // namespace gemm_detail

namespace {

using gemm_detail::MicrokernelSet;
using gemm_detail::TileArgs;
using gemm_detail::TileKernel;

using gemm_detail::ceil_div;
using gemm_detail::max64;
using gemm_detail::min64;
using gemm_detail::split_point;

struct Plan {
  const GemmProblem* p = nullptr;
  const MicrokernelSet* ks = nullptr;
  ActivationFn activation = nullptr;  // the epilogue's, or null
  OperandFn multiply = nullptr;      // the multiplier's (with one)
  AffineFn affine = nullptr;          // the post-activation affine's (with one)
  int64_t panels = 0;                 // ceil(n / 16)
  int64_t panel_stride = 0;           // 16 * (k + 1)
  int last_cols = 16;                 // columns of the last panel
  int64_t m_tiles = 1;
  int64_t n_tiles = 1;
  int64_t k_blocks = 1;
  int64_t m_blocks = 1;
  int64_t n_groups = 1;
  bool prefetch_next = true;
};

void run_task(const Plan& plan, int64_t task) {
  const GemmProblem& p = *plan.p;
  const int64_t mb = task / plan.n_groups;
  const int64_t ng = task % plan.n_groups;
  const int64_t t0 = split_point(plan.m_tiles, plan.m_blocks, mb);
  const int64_t t1 = split_point(plan.m_tiles, plan.m_blocks, mb + 1);
  const int64_t j0 = split_point(plan.n_tiles, plan.n_groups, ng);
  const int64_t j1 = split_point(plan.n_tiles, plan.n_groups, ng + 1);

  TileArgs args;
  args.lda = p.lda;
  args.panel_stride = plan.panel_stride;
  args.ldc = p.ldc;
  args.out_min = p.out_min;
  args.out_max = p.out_max;
  for (int64_t kb = 0; kb < plan.k_blocks; ++kb) {
    const int64_t k0 = split_point(p.k, plan.k_blocks, kb);
    const int64_t k1 = split_point(p.k, plan.k_blocks, kb + 1);
    args.kc = k1 - k0;
    args.first = kb == 0;
    args.last = kb == plan.k_blocks - 1;
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t panel0 = gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j);
      const int64_t np = gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j + 1) - panel0;
      const float* panel = p.packed + panel0 * plan.panel_stride;
      args.bias = panel;
      args.b = panel + kPanelWidth + k0 * kPanelWidth;
      args.last_cols = panel0 + np == plan.panels ? plan.last_cols : static_cast<int>(kPanelWidth);
      // The next N tile's B sliver is fetched into L2 while this one's M tiles run, spread
      // over them (each fetches a segment of one panel, one line per K row), rather than all
      // at once by the next N tile's first M tile, which would stream it at DRAM speed.
      const int64_t tiles = t1 - t0;
      const bool fetch_next = plan.prefetch_next && j + 1 < j1 && tiles > 1;
      const int64_t next_panel0 = gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j + 1);
      const int64_t next_np =
          fetch_next ? gemm_detail::tile_panel0(plan.panels, plan.n_tiles, j + 2) - next_panel0 : 0;
      const int64_t segments = next_np > 0 ? ceil_div(tiles, next_np) : 1;
      const int64_t segment_rows = ceil_div(args.kc, segments);
      for (int64_t i = t0; i < t1; ++i) {
        args.prefetch = nullptr;
        args.prefetch_rows = 0;
        const int64_t row0 = next_np > 0 ? (i - t0) / next_np * segment_rows : args.kc;
        if (row0 < args.kc) {  // this tile's segment: rows [row0, row0 + segment_rows) of a panel
          const int64_t panel = next_panel0 + (i - t0) % next_np;
          args.prefetch =
              p.packed + panel * plan.panel_stride + kPanelWidth + (k0 + row0) * kPanelWidth;
          args.prefetch_rows = min64(segment_rows, args.kc - row0);
        }
        const int64_t r0 = split_point(p.m, plan.m_tiles, i);
        const int64_t r1 = split_point(p.m, plan.m_tiles, i + 1);
        const TileKernel kernel = plan.ks->kernels[r1 - r0][np];
        args.a = p.a + r0 * p.lda + k0;
        args.c = p.c + r0 * p.ldc + panel0 * kPanelWidth;
        args.residual = p.residual != nullptr && args.last
                            ? p.residual + r0 * p.ldc + panel0 * kPanelWidth
                            : nullptr;
        kernel(args);
        if (args.last &&
            (plan.activation != nullptr || p.multiplier != nullptr || plan.affine != nullptr)) {
          // The tile is final and in L1: its activation and its multiplier now, row by row.
          const int64_t cols = min64(np * kPanelWidth, p.n - panel0 * kPanelWidth);
          if (plan.activation != nullptr) {
            plan.activation(args.c, r1 - r0, cols, p.ldc, p.activation_alpha);
          }
          if (p.multiplier != nullptr) {
            plan.multiply(args.c, p.multiplier + r0 * p.ldc + panel0 * kPanelWidth, r1 - r0, cols,
                          p.ldc);
          }
          if (plan.affine != nullptr) {
            plan.affine(args.c, p.post_scale + panel0 * kPanelWidth,
                        p.post_shift + panel0 * kPanelWidth, r1 - r0, cols, p.ldc);
          }
        }
      }
    }
  }
}

void run_task_entry(void* context, size_t task) {
  run_task(*static_cast<const Plan*>(context), static_cast<int64_t>(task));
}

Plan make_plan(const GemmProblem& p, const MicrokernelSet* ks, int64_t threads) {
  const gemm_detail::GemmBlocking& blocking = gemm_detail::gemm_blocking();
  Plan plan;
  plan.p = &p;
  plan.ks = ks;
  plan.panels = ceil_div(p.n, kPanelWidth);
  plan.panel_stride = kPanelWidth * ((p.packed_k > p.k ? p.packed_k : p.k) + 1);
  plan.last_cols = static_cast<int>(p.n - (plan.panels - 1) * kPanelWidth);

  // Register tiles.
  gemm_detail::TileChoice tiles = gemm_detail::choose_tiles(*ks, p.m, plan.panels, p.k);
  gemm_detail::limit_rows_for_l1_sets(*ks, p.m, plan.panels, p.lda, &tiles);
  const int64_t max_rows = tiles.max_rows;
  plan.m_tiles = tiles.m_tiles;
  plan.n_tiles = tiles.n_tiles;

  // K blocks: only worth it when a B sliver is reused by several M tiles.
  plan.k_blocks = plan.m_tiles > 1 ? ceil_div(p.k, blocking.kc_max) : 1;
  if (plan.k_blocks < 1) plan.k_blocks = 1;
  const int64_t kc = max64(1, ceil_div(p.k, plan.k_blocks));

  // M blocks: an A block of about a_block_bytes (more when B streams from beyond L2).
  const double b_bytes = static_cast<double>(max64(p.k, 1)) * static_cast<double>(plan.panels) *
                         static_cast<double>(kPanelWidth * 4);
  const int64_t a_block = gemm_detail::a_block_bytes_for(blocking, b_bytes);
  const int64_t block_rows = max64(max_rows, a_block / (kc * 4));
  const int64_t tiles_per_block = max64(1, block_rows / max_rows);
  plan.m_blocks = ceil_div(plan.m_tiles, tiles_per_block);
  plan.n_groups = 1;
  plan.prefetch_next = blocking.prefetch_next_b;

  // Enough tasks for the pool (more N groups first: they keep the M tiles big), but none tiny.
  if (threads > 1) {
    // A product of fewer than 4 rows is bound by reading B (each B float feeds m < 4 FMAs):
    // its time is about that of 8 rows, so it counts as 8 — a [1, 128] x [128, 512] step of an
    // LSTM (2^16 FMAs, 256 KiB of B) splits over 2 threads, each core's L2 keeping its half of
    // B from one step to the next (lstm_kws: 1.06 -> 0.85 ms on 2 threads).
    const double rows = p.m < 4 ? 8.0 : static_cast<double>(p.m);
    const double fmas = rows * static_cast<double>(p.n) *
                        static_cast<double>(max64(p.k, 1));  // double: no overflow
    const int64_t wanted =
        gemm_detail::wanted_tasks(fmas, threads, blocking.tasks_per_thread, blocking.min_task_fmas);
    if (plan.m_blocks < wanted) {
      plan.n_groups = min64(plan.n_tiles, ceil_div(wanted, plan.m_blocks));
      if (plan.m_blocks * plan.n_groups < wanted) {
        plan.m_blocks = min64(plan.m_tiles, ceil_div(wanted, plan.n_groups));
      }
    }
    plan.m_blocks = gemm_detail::balanced_m_blocks(plan.m_blocks, plan.n_groups, plan.m_tiles,
                                                   threads);
  }
  return plan;
}

}  // namespace

void packed_gemm(const GemmProblem& p, pthreadpool_t pool) {
  if (p.m <= 0 || p.n <= 0 || p.k < 0) return;
  const MicrokernelSet* ks = gemm_detail::active_microkernels();
  Plan plan = make_plan(p, ks, gemm_detail::pool_threads(pool));
  plan.activation = gemm_activation_fn(p.activation);
  if (p.multiplier != nullptr) plan.multiply = gemm_multiply_fn();
  if (p.post_scale != nullptr) plan.affine = gemm_affine_fn();
  gemm_detail::run_tasks(pool, &run_task_entry, &plan, plan.m_blocks * plan.n_groups);
}

}  // namespace tern::cpu
