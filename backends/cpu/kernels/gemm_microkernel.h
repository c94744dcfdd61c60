// Internal to the packed GEMM: the contract between the driver (packed_gemm.cpp: blocking,
// threading) and the per-ISA microkernels (gemm_avx512.cpp, gemm_avx2.cpp, gemm_scalar.cpp).
//
// A microkernel computes one register tile: `mr` rows of C times `np` consecutive panels
// (np * 16 columns) over one block of kc rows of K, keeping the tile in registers.
#pragma once

#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu::gemm_detail {

/// One call of a microkernel.
struct TileArgs {
  const float* a = nullptr;  ///< A at [row0, k0]; row r at a + r * lda
  int64_t lda = 0;
  const float* b = nullptr;     ///< first panel's data at K row k0 (16 floats per K row)
  const float* bias = nullptr;  ///< first panel's 16 bias floats (read only when `first`)
  int64_t panel_stride = 0;     ///< floats from one panel to the next: 16 * (k + 1)
  int64_t kc = 0;               ///< K rows in this block (may be 0)
  float* c = nullptr;           ///< C at [row0, col0]; row r at c + r * ldc
  int64_t ldc = 0;
  /// Null, or a tensor added to the tile in the last K block's epilogue, after the bias and the
  /// K sum and before the clamp: at [row0, col0] with C's row stride (row r at residual + r *
  /// ldc). Read once per element, like C's store (masked in the last panel: nothing past its
  /// last_cols columns). Never aliases C or A.
  const float* residual = nullptr;
  int last_cols = 16;  ///< valid columns of the tile's last panel (1..16); others are full
  bool first = true;   ///< first K block: start from the bias (else from C's partial sums)
  bool last = true;    ///< last K block: add the residual (if any), clamp (else store partial sums)
  float out_min = 0, out_max = 0;
  /// Lines of a later tile's B for the kernel to fetch into L2 while it runs, one per K row
  /// until prefetch_rows are done: 16 floats apart from `prefetch` (a hint; never read; kernels
  /// may ignore it).
  const float* prefetch = nullptr;
  int64_t prefetch_rows = 0;
};

using TileKernel = void (*)(const TileArgs&);

/// Copies n floats (n >= 0) from src to dst (not overlapping), reading and writing nothing past
/// them: the row gather of packed_conv_nhwc, in the ISA's widest vectors.
using CopyKernel = void (*)(float* dst, const float* src, int64_t n);

constexpr int kMaxTileRows = 14;
constexpr int kMaxTilePanels = 4;

/// What one ISA offers. The driver tiles M in "wide" tiles of up to max_rows rows × wide_panels
/// panels; when m <= small_m_max it uses one tile of m rows × small_panels panels instead
/// (more panels per row keeps enough independent accumulators for GEMV-like shapes); and when
/// the set has "cached-B" tiles (cached_rows > 0) and the product's packed B is smaller than
/// cached_b_bytes, tiles of up to cached_rows × cached_panels (AVX-512: tall 14 × 2 tiles read
/// each B vector for more rows, which pays while B streams from L3 or memory; 7 × 3 tiles issue
/// fewer loads per FMA, which pays once B stays in L2).
struct MicrokernelSet {
  int max_rows = 1;
  int wide_panels = 1;
  int small_m_max = 0;
  int small_panels = 1;
  int cached_rows = 0;  ///< 0: no cached-B tiles
  int cached_panels = 1;
  int64_t cached_b_bytes = 0;
  /// kernels[mr][np]; null where not offered. The driver only asks for mr <= max_rows with
  /// np <= wide_panels, mr <= small_m_max with np <= small_panels, and mr <= cached_rows with
  /// np <= cached_panels.
  TileKernel kernels[kMaxTileRows + 1][kMaxTilePanels + 1] = {};
  CopyKernel copy = nullptr;  ///< never null in a set
};

/// Each returns null when the build has no such code (e.g. AVX-512 on aarch64).
const MicrokernelSet* avx512_microkernels();
const MicrokernelSet* avx2_microkernels();
const MicrokernelSet* scalar_microkernels();
/// aarch64's NEON set (gemm_neon.cpp), which dispatch uses for GemmIsa::Scalar there.
const MicrokernelSet* neon_microkernels();

/// The set of the ISA dispatch picked (never null: the scalar set exists everywhere).
const MicrokernelSet* active_microkernels();

/// GemmBlocking's defaults from l2_cache_bytes() (cache_size.h).
int64_t default_streaming_b_bytes();
int64_t default_streaming_a_block_bytes();

/// Cache-blocking knobs of the driver. Defaults suit ~1 MiB L2 per core; benchmarks may change
/// them between calls (never while a GEMM runs).
struct GemmBlocking {
  int64_t kc_max = 1024;              ///< K rows per block when B slivers are reused by tiles
  int64_t a_block_bytes = 256 << 10;  ///< A block (rows × kc floats) kept in L2 per task
  /// A packed B bigger than this cannot stay in L2 beside the A block: it streams from L3 or
  /// memory once per M block, so such a product takes A blocks of streaming_a_block_bytes
  /// (fewer M blocks, B read fewer times). Both from the L2 one core reports (half of it each;
  /// the A block at least a_block_bytes, at most 1 MiB); an unknown L2 keeps a_block_bytes.
  int64_t streaming_b_bytes = default_streaming_b_bytes();
  int64_t streaming_a_block_bytes = default_streaming_a_block_bytes();
  int64_t tasks_per_thread = 4;       ///< split into at least this many tasks per pool thread
  int64_t min_task_fmas = 1 << 18;    ///< but no task smaller than this (m·n·k per task)
  /// An N tile's M tiles fetch the next N tile's B sliver into L2 (the AVX-512 microkernels
  /// act on TileArgs::prefetch; on an Intel AVX2 run it measured neutral, so the others ignore it).
  bool prefetch_next_b = true;
};
GemmBlocking& gemm_blocking();

/// The A block size (bytes) for a product whose packed B has b_bytes.
inline int64_t a_block_bytes_for(const GemmBlocking& blocking, double b_bytes) {
  return b_bytes > static_cast<double>(blocking.streaming_b_bytes)
             ? blocking.streaming_a_block_bytes
             : blocking.a_block_bytes;
}

/// Blocking knobs of packed_conv_nhwc (packed_conv.cpp); benchmarks and tests may change them
/// between calls. The gathered A block (tile rows × kc floats) always fits kConvABufferFloats.
struct ConvBlocking {
  int64_t kc_max = 1 << 20;           ///< K rows per block (further capped by the A buffer)
  int64_t b_block_bytes = 512 << 10;  ///< a task's B block (kc × its columns) kept in L2
  int64_t tasks_per_thread = 4;       ///< split into at least this many tasks per pool thread
  int64_t min_task_fmas = 1 << 18;    ///< but no task smaller than this
  /// Grouped convs with at most this many output channels per group run as direct convolutions
  /// (shallow_conv.h's AVX2 row kernel) where AVX2 runs; 0: always the implicit GEMM.
  int64_t direct_group_max_cols = 16;
  /// Tap skipping: a conv whose taps land inside the input for at most this percentage of the
  /// window work (over all output pixels: DeepLabV3's ASPP, dilation 12..36 on a 32 x 32 map,
  /// 56 % down to 11 %), with at least skip_taps_min_floats input channels a group (every kept
  /// K piece a tap or more long), gathers and multiplies per register tile only the window its
  /// pixels can reach. 100 and 1: whenever any tap reads padding.
  int64_t skip_taps_max_live_percent = 90;
  int64_t skip_taps_min_floats = 64;
};
ConvBlocking& conv_blocking();

/// Floats of the stack buffer a conv task gathers A into (30 KiB: the frame stays under 32 KiB).
constexpr int64_t kConvABufferFloats = 7680;

// ---- planning helpers shared by the GEMM and conv drivers ----

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
/// Start of part i of `count` when `total` is split as evenly as possible.
inline int64_t split_point(int64_t total, int64_t count, int64_t i) { return i * total / count; }

/// Register tiles for m rows over `panels` column panels of a B with k rows (k·panels·16 floats
/// packed): the set's wide tiles, its cached-B tiles when that B is small enough, or one tile of
/// all m rows with the small-m panel count when m is small enough.
struct TileChoice {
  int64_t max_rows = 1;     ///< rows per tile
  int64_t tile_panels = 1;  ///< panels per N tile
  int64_t m_tiles = 1;
  int64_t n_tiles = 1;
};
inline TileChoice choose_tiles(const MicrokernelSet& ks, int64_t m, int64_t panels,
                               int64_t k) {
  TileChoice t;
  t.max_rows = ks.max_rows;
  t.tile_panels = ks.wide_panels;
  // Doubles: no overflow for any k and panels.
  const double b_bytes = static_cast<double>(k) * static_cast<double>(panels) * 64.0;
  if (m <= ks.small_m_max) {
    t.max_rows = m;
    t.tile_panels = ks.small_panels;
  } else if (ks.cached_rows > 0 && b_bytes < static_cast<double>(ks.cached_b_bytes)) {
    t.max_rows = ks.cached_rows;
    t.tile_panels = ks.cached_panels;
  }
  t.m_tiles = ceil_div(m, t.max_rows);
  t.n_tiles = ceil_div(panels, t.tile_panels);
  return t;
}

/// The first panel of N tile j when `panels` panels are cut into `n_tiles` tiles
/// (choose_tiles' n_tiles) whose widths differ by at most one: 13 panels in tiles of at most 3
/// become 2, 3, 2, 3, 3 rather than 3, 3, 3, 3, 1 (a 1-panel tile loads one A element per FMA).
/// Tile j spans [tile_panel0(.., j), tile_panel0(.., j + 1)), never wider than tile_panels.
inline int64_t tile_panel0(int64_t panels, int64_t n_tiles, int64_t j) {
  return split_point(panels, n_tiles, j);
}

/// A tile's A rows are read in place, `lda` floats apart. Rows a multiple of 4 KiB apart fall
/// into one L1 set (64-byte lines, 64 sets of 8 lines: the x86-64 cores tern targets), 2 KiB
/// apart into two: a tile of more rows than that holds evicts its own A lines at every new
/// line of K (Zen 4, M=196, N=1024, K=1024: 58 GFLOP/s on one thread against 108 for K=512;
/// 98 with tiles of 7 rows). Strides of a multiple of 2 KiB get tiles of at most kL1SetRows:
/// the set's cached-B tiles when they are that short (their panels then too), else the wide
/// tiles cut to kL1SetRows rows.
constexpr int64_t kL1SetRows = 7;
inline void limit_rows_for_l1_sets(const MicrokernelSet& ks, int64_t m, int64_t panels,
                                   int64_t lda, TileChoice* t) {
  if (t->max_rows <= kL1SetRows || lda <= 0 || (lda * 4) % 2048 != 0) return;
  t->max_rows = kL1SetRows;
  if (ks.cached_rows > 0 && ks.cached_rows <= kL1SetRows) {
    t->max_rows = ks.cached_rows;
    t->tile_panels = ks.cached_panels;
    t->n_tiles = ceil_div(panels, t->tile_panels);
  }
  t->m_tiles = ceil_div(m, t->max_rows);
}

/// Worker threads of `pool` (1 for none).
inline int64_t pool_threads(pthreadpool_t pool) {
  return pool != nullptr ? static_cast<int64_t>(pthreadpool_get_threads_count(pool)) : 1;
}

/// Runs task(context, t) for every t in [0, tasks): on the caller's thread when there is no
/// pool, one thread or one task, else split over the pool (which returns when all are done).
inline void run_tasks(pthreadpool_t pool, void (*task)(void*, size_t), void* context,
                      int64_t tasks) {
  if (pool == nullptr || pool_threads(pool) <= 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) task(context, static_cast<size_t>(t));
    return;
  }
  pthreadpool_parallelize_1d(pool, task, context, static_cast<size_t>(tasks), kPoolFlags);
}

/// Tasks a problem of `fmas` multiply-adds wants on `threads` pool threads: tasks_per_thread
/// per thread, but none smaller than min_task_fmas (at least 1).
inline int64_t wanted_tasks(double fmas, int64_t threads, int64_t tasks_per_thread,
                            int64_t min_task_fmas) {
  const double cap = fmas / static_cast<double>(max64(1, min_task_fmas));
  const int64_t max_tasks = cap < 1.0 ? 1 : cap > 1e6 ? 1000000 : static_cast<int64_t>(cap);
  return min64(threads * tasks_per_thread, max_tasks);
}

/// M blocks for `m_blocks · others` tasks of about equal work on `threads` pool threads: the
/// fewest at or above m_blocks (at most m_tiles) that make the task count a multiple of the
/// threads, so no thread runs a last task alone while the others wait (9 tasks on 2 threads
/// take 5 rounds of work where 10 take 5 rounds of 9/10 the size: 1444 x 728 x 728 on Zen 4,
/// two threads, medians 187-195 -> 197-201 GFLOP/s). Unchanged for a single task or when no
/// count up to m_tiles does.
inline int64_t balanced_m_blocks(int64_t m_blocks, int64_t others, int64_t m_tiles,
                                 int64_t threads) {
  if (threads <= 1 || m_blocks * others <= 1) return m_blocks;
  for (int64_t b = m_blocks; b <= m_tiles; ++b) {
    if ((b * others) % threads == 0) return b;
  }
  return m_blocks;
}

}  // namespace tern::cpu::gemm_detail
