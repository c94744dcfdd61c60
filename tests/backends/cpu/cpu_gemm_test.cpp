// tern's packed f32 GEMM (backends/cpu/kernels): every ISA this CPU runs, forced in turn, against
// a naive double-precision reference over edge shapes (m, n not multiples of the tiles, n < 16,
// k = 1, large k), row strides, bias or none, clamp or none, no pool and a 2-thread pool, small
// cache blocks; C's padding and a guard region after C stay untouched; A and C ending at a
// PROT_NONE page are neither over-read nor over-written; no heap allocation; NaN propagates.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels/cache_size.h"
#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "tests/backends/cpu/kernel_test_util.h"
#include "tests/support/allocation_counter.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;
using kernel_test::supported_isas;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kGuardValue = -12345.678f;
constexpr float kGuard = -12345.678f;  // what C's padding and guard region hold



/// Restores dispatch's choice and the blocking knobs after each test.
using CpuGemm =
    kernel_test::RestoresIsaAndKnobs<gemm_detail::GemmBlocking, &gemm_detail::gemm_blocking>;

struct Case {
  int64_t m, n, k;
  int64_t lda_pad = 0, ldc_pad = 0;
  bool bias = true;
  float out_min = -kInf, out_max = kInf;
  bool residual = false;  ///< add R [m, n] (C's row stride) before the clamp
  GemmActivation activation = GemmActivation::None;  ///< after the clamp
  float alpha = 0.1f;       ///< the activation's parameter (LeakyRelu's slope)
  bool multiplier = false;  ///< times M [m, n] (C's row stride) after the activation
  bool post_affine = false;  ///< then times S [n] plus T [n] per column (a batch norm after it)
};

/// The activation in double precision, from its definition (std::erf, std::tanh); `alpha`
/// LeakyRelu's slope.
double activate(GemmActivation act, double v, double alpha = 0.0) {
  switch (act) {
    case GemmActivation::LeakyRelu:
      return v > 0.0 ? v : v * alpha;
    case GemmActivation::None:
      return v;
    case GemmActivation::Hardswish:
      return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
    case GemmActivation::GeluErf:
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case GemmActivation::GeluTanh:
      return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case GemmActivation::Silu:
      return v / (1.0 + std::exp(-v));
    case GemmActivation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case GemmActivation::Square:
      return v * v;
  }
  return v;
}

std::string describe(const Case& c, GemmIsa isa, bool pool) {
  return std::string(gemm_isa_name(isa)) + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " lda+" +
         std::to_string(c.lda_pad) + " ldc+" + std::to_string(c.ldc_pad) +
         (c.bias ? " bias" : " no-bias") + " clamp[" + std::to_string(c.out_min) + ", " +
         std::to_string(c.out_max) + "]" + (c.residual ? " residual" : "") + " act " +
         std::to_string(static_cast<int>(c.activation)) + (c.multiplier ? " multiplier" : "") +
         (c.post_affine ? " affine" : "") + (pool ? " pool2" : " no-pool");
}

/// Checks c (m rows of ldc, values in [m x n]) against the double reference of a [m x k] (lda)
/// times w [n x k] plus bias plus the residual r (ldc; null: none), clamped, activated and
/// times the multiplier mul (ldc; null: none); returns the number of mismatches (reported via
/// ADD_FAILURE).
int check_against_reference(const Case& cs, const float* a, int64_t lda, const float* w,
                            const float* bias, const float* c, int64_t ldc,
                            const std::string& what, const float* r = nullptr,
                            const float* mul = nullptr, const float* scale = nullptr,
                            const float* shift = nullptr) {
  int bad = 0;
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      double sum = bias != nullptr ? bias[j] : 0.0;
      double mag = bias != nullptr ? std::fabs(bias[j]) : 0.0;
      if (r != nullptr) {
        sum += r[i * ldc + j];
        mag += std::fabs(r[i * ldc + j]);
      }
      for (int64_t kk = 0; kk < cs.k; ++kk) {
        const double prod = static_cast<double>(a[i * lda + kk]) * w[j * cs.k + kk];
        sum += prod;
        mag += std::fabs(prod);
      }
      double want = sum;
      if (want > cs.out_max) want = cs.out_max;
      if (want < cs.out_min) want = cs.out_min;
      want = activate(cs.activation, want, cs.alpha);
      const double gate = mul != nullptr ? std::fabs(mul[i * ldc + j]) : 1.0;
      if (mul != nullptr) want *= mul[i * ldc + j];
      const double stretch = scale != nullptr ? std::fabs(scale[j]) : 1.0;
      if (scale != nullptr) want = want * scale[j] + shift[j];
      // The activations' slopes stay under 1.5; GELU's own error is a few ulp of its result.
      const double tol =
          1.5e-6 * (1.0 + std::sqrt(static_cast<double>(cs.k))) * mag * gate * stretch +
          1e-6 * std::fabs(want) + 1e-30;
      const float got = c[i * ldc + j];
      if (!(std::fabs(got - want) <= tol)) {
        if (++bad <= 5) {
          ADD_FAILURE() << what << ": C[" << i << ", " << j << "] = " << got << ", want " << want
                        << " (tol " << tol << ")";
        }
      }
    }
  }
  return bad;
}

/// Runs one case with the current ISA: C has ldc = n + ldc_pad and a guard region after it.
void run_case(const Case& cs, pthreadpool_t pool, GemmIsa isa, uint32_t seed) {
  const int64_t lda = cs.k + cs.lda_pad;
  const int64_t ldc = cs.n + cs.ldc_pad;
  const std::vector<float> a = random_floats(static_cast<size_t>(cs.m * lda), seed);
  const std::vector<float> w = random_floats(static_cast<size_t>(cs.n * cs.k), seed + 1);
  const std::vector<float> bias = random_floats(static_cast<size_t>(cs.n), seed + 2);
  std::vector<float> packed(packed_weight_floats(cs.n, cs.k), 99.0f);
  pack_fc_weight(w.data(), cs.bias ? bias.data() : nullptr, cs.n, cs.k, packed.data());

  constexpr int64_t kGuardFloats = 64;
  std::vector<float> c(static_cast<size_t>(cs.m * ldc + kGuardFloats), kGuard);
  const std::vector<float> r = random_floats(static_cast<size_t>(cs.m * ldc), seed + 3, -2.0f, 2.0f);
  const std::vector<float> mul =
      random_floats(static_cast<size_t>(cs.m * ldc), seed + 4, -3.0f, 3.0f);
  GemmProblem p;
  p.m = cs.m;
  p.n = cs.n;
  p.k = cs.k;
  p.a = a.data();
  p.lda = lda;
  p.packed = packed.data();
  p.c = c.data();
  p.ldc = ldc;
  p.out_min = cs.out_min;
  p.out_max = cs.out_max;
  p.residual = cs.residual ? r.data() : nullptr;
  p.activation = cs.activation;
  p.activation_alpha = cs.alpha;
  p.multiplier = cs.multiplier ? mul.data() : nullptr;
  const std::vector<float> affine =
      random_floats(static_cast<size_t>(2 * cs.n), seed + 5, -2.0f, 2.0f);
  p.post_scale = cs.post_affine ? affine.data() : nullptr;
  p.post_shift = cs.post_affine ? affine.data() + cs.n : nullptr;
  packed_gemm(p, pool);

  const std::string what = describe(cs, isa, pool != nullptr);
  check_against_reference(cs, a.data(), lda, w.data(), cs.bias ? bias.data() : nullptr, c.data(),
                          ldc, what, cs.residual ? r.data() : nullptr,
                          cs.multiplier ? mul.data() : nullptr,
                          cs.post_affine ? affine.data() : nullptr,
                          cs.post_affine ? affine.data() + cs.n : nullptr);
  int touched = 0;
  for (int64_t idx = 0; idx < static_cast<int64_t>(c.size()); ++idx) {
    const bool inside = idx < cs.m * ldc && idx % ldc < cs.n;
    if (!inside && std::memcmp(&c[idx], &kGuard, sizeof(float)) != 0) ++touched;
  }
  EXPECT_EQ(touched, 0) << what << ": floats outside [m x n] of C were written";
}


TEST_F(CpuGemm, DispatchPicksTheBestSupportedIsa) {
  const std::vector<GemmIsa> isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), GemmIsa::Scalar);  // the portable kernels exist everywhere
  EXPECT_EQ(saved_isa_, isas.back());
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(packed_gemm_isa_supported(GemmIsa::Avx512), __builtin_cpu_supports("avx512f") != 0);
#else
  EXPECT_FALSE(packed_gemm_isa_supported(GemmIsa::Avx512));
  EXPECT_FALSE(packed_gemm_force_isa(GemmIsa::Avx512));
#endif
  for (GemmIsa isa : isas) {
    EXPECT_TRUE(packed_gemm_force_isa(isa));
    EXPECT_EQ(packed_gemm_isa(), isa);
  }
}

TEST_F(CpuGemm, PackedLayoutIsPanelsOfBiasThenRows) {
  const int64_t n = 21, k = 3;
  ASSERT_EQ(packed_weight_floats(n, k), 2u * 16u * 4u);
  EXPECT_EQ(packed_weight_floats(16, 5), 16u * 6u);
  EXPECT_EQ(packed_weight_floats(1, 0), 16u);
  std::vector<float> w(n * k), bias(n);
  for (int64_t j = 0; j < n; ++j) {
    bias[j] = 1000.0f + j;
    for (int64_t kk = 0; kk < k; ++kk) w[j * k + kk] = static_cast<float>(j * 10 + kk);
  }
  std::vector<float> packed(packed_weight_floats(n, k), -1.0f);
  pack_fc_weight(w.data(), bias.data(), n, k, packed.data());
  for (int64_t panel = 0; panel < 2; ++panel) {
    const float* base = packed.data() + panel * 16 * (k + 1);
    for (int64_t col = 0; col < 16; ++col) {
      const int64_t j = panel * 16 + col;
      EXPECT_EQ(base[col], j < n ? 1000.0f + j : 0.0f) << "bias of column " << j;
      for (int64_t kk = 0; kk < k; ++kk) {
        EXPECT_EQ(base[16 + kk * 16 + col], j < n ? static_cast<float>(j * 10 + kk) : 0.0f)
            << "column " << j << " row " << kk;
      }
    }
  }
  pack_fc_weight(w.data(), nullptr, n, k, packed.data());
  for (int64_t col = 0; col < 16; ++col) EXPECT_EQ(packed[col], 0.0f);
}

TEST_F(CpuGemm, EdgeShapesEveryIsaAgainstDoubleReference) {
  const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 27, 29, 31, 64, 100};
  const int64_t ns[] = {1, 5, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100};
  const int64_t ks[] = {1, 2, 7, 16, 64, 300};
  Pool two(2);
  uint32_t seed = 1;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    int v = 0;
    for (int64_t m : ms) {
      for (int64_t n : ns) {
        ++v;
        Case cs{m, n, ks[v % 6]};
        cs.lda_pad = (v % 3 == 0) ? 3 : 0;
        cs.ldc_pad = (v % 4 == 0) ? 5 : 0;
        cs.bias = v % 5 != 0;
        if (v % 7 == 0) {
          cs.out_min = -0.5f;
          cs.out_max = 0.75f;
        } else if (v % 7 == 3) {
          cs.out_min = 0.0f;  // relu
        }
        run_case(cs, v % 2 == 0 ? two.pool : nullptr, isa, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_F(CpuGemm, LargeKAndBlockedShapes) {
  const Case cases[] = {
      {1, 40, 4100},        {2, 17, 3000, 1, 0},
      {3, 100, 2500, 0, 2}, {20, 33, 2100, 4, 4},
      {40, 40, 600},        {300, 20, 520, 0, 0},
      {700, 20, 600, 2, 1}, {129, 70, 257, 0, 0, false},
      {14, 32, 1030},       {28, 64, 513, 0, 0, true, -0.1f, 0.1f},
      // A rows 2 and 4 KiB apart (tiles of at most 7 rows where the ISA's are taller).
      {45, 40, 1024},       {30, 33, 508, 4, 0},
  };
  Pool two(2);
  uint32_t seed = 100;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : cases) {
      run_case(cs, nullptr, isa, seed);
      run_case(cs, two.pool, isa, seed);
      ++seed;
    }
  }
}

// A set of tiles for the tile-choice tests: wide tiles of `rows` x `panels`, small-m tiles of
// up to 7 rows x 4 panels, and cached-B tiles when cached_rows > 0 (what AVX-512's set has:
// 14 x 2, 7 x 3 under 1 MiB).
gemm_detail::MicrokernelSet tile_set(int rows, int panels, int cached_rows = 0,
                                     int cached_panels = 1, int64_t cached_b_bytes = 0) {
  gemm_detail::MicrokernelSet s;
  s.max_rows = rows;
  s.wide_panels = panels;
  s.small_m_max = 7;
  s.small_panels = 4;
  s.cached_rows = cached_rows;
  s.cached_panels = cached_panels;
  s.cached_b_bytes = cached_b_bytes;
  return s;
}

// Rows of A 2 or 4 KiB apart share one or two L1 sets of 8 lines: tiles taller than 7 rows are
// cut to 7 rows (hand-worked tile counts); other strides and short tiles are left alone.
TEST(CpuGemmTiles, AStridesOfWholeTwoKibGetTilesOfAtMostSevenRows) {
  const gemm_detail::MicrokernelSet tall = tile_set(14, 2);
  struct Expect {
    int64_t m, lda, rows, m_tiles;
  } cases[] = {
      {196, 1024, 7, 28},  // 4 KiB apart
      {196, 512, 7, 28},   // 2 KiB
      {196, 3072, 7, 28},  // 12 KiB
      {196, 768, 14, 14},  // 3 KiB: four sets
      {196, 1030, 14, 14},
      {5, 1024, 5, 1},     // one small tile of 5 rows
  };
  for (const Expect& e : cases) {
    gemm_detail::TileChoice t = gemm_detail::choose_tiles(tall, e.m, 64, e.lda);
    gemm_detail::limit_rows_for_l1_sets(tall, e.m, 64, e.lda, &t);
    EXPECT_EQ(t.max_rows, e.rows) << "m " << e.m << ", lda " << e.lda;
    EXPECT_EQ(t.m_tiles, e.m_tiles) << "m " << e.m << ", lda " << e.lda;
  }
  const gemm_detail::MicrokernelSet six = tile_set(6, 2);  // AVX2's 6-row tiles stay
  gemm_detail::TileChoice t = gemm_detail::choose_tiles(six, 196, 64, 1024);
  gemm_detail::limit_rows_for_l1_sets(six, 196, 64, 1024, &t);
  EXPECT_EQ(t.max_rows, 6);
  EXPECT_EQ(t.m_tiles, 33);
}

// AVX-512's shape of set (hand-worked): tall 14 x 2 tiles while the packed B (k x panels x 64
// bytes) is 1 MiB or more, 7 x 3 tiles below that, small-m tiles first; an A stride of whole
// 2 KiB takes the 7 x 3 tiles whatever B's size.
TEST(CpuGemmTiles, CachedBTilesOnlyBelowTheirBSize) {
  const gemm_detail::MicrokernelSet s = tile_set(14, 2, 7, 3, int64_t{1} << 20);
  struct Expect {
    int64_t m, panels, k, lda, rows, tile_panels, m_tiles, n_tiles;
  } cases[] = {
      {196, 13, 208, 208, 7, 3, 28, 5},      // RegNetY's 1x1: B 169 KiB
      {49, 128, 512, 512 + 4, 14, 2, 4, 64},  // B 4 MiB
      {16, 32, 512, 516, 14, 2, 2, 16},       // B exactly 1 MiB: the tall tiles
      {16, 32, 511, 516, 7, 3, 3, 11},        // 64 bytes less
      {196, 64, 1024, 1024, 7, 3, 28, 22},    // B 4 MiB, but rows 4 KiB apart
      {5, 128, 512, 512, 5, 4, 1, 32},        // small m
  };
  for (const Expect& e : cases) {
    gemm_detail::TileChoice t = gemm_detail::choose_tiles(s, e.m, e.panels, e.k);
    gemm_detail::limit_rows_for_l1_sets(s, e.m, e.panels, e.lda, &t);
    EXPECT_EQ(t.max_rows, e.rows) << "m " << e.m << ", k " << e.k;
    EXPECT_EQ(t.tile_panels, e.tile_panels) << "m " << e.m << ", k " << e.k;
    EXPECT_EQ(t.m_tiles, e.m_tiles) << "m " << e.m << ", k " << e.k;
    EXPECT_EQ(t.n_tiles, e.n_tiles) << "m " << e.m << ", k " << e.k;
  }
}

// N tiles are balanced (hand-worked): 13 panels in tiles of at most 3 are 2, 3, 2, 3, 3 (not
// 3, 3, 3, 3, 1: a one-panel tile loads an A element per FMA), and no tile is ever wider than
// the set's panels or empty, whatever the count.
TEST(CpuGemmTiles, NTilesDifferByAtMostOnePanel) {
  const gemm_detail::MicrokernelSet s = tile_set(7, 3);
  const gemm_detail::TileChoice t = gemm_detail::choose_tiles(s, 196, 13, 64);
  ASSERT_EQ(t.n_tiles, 5);
  const int64_t widths[] = {2, 3, 2, 3, 3};
  for (int64_t j = 0; j < 5; ++j) {
    EXPECT_EQ(gemm_detail::tile_panel0(13, 5, j + 1) - gemm_detail::tile_panel0(13, 5, j),
              widths[j])
        << "tile " << j;
  }
  EXPECT_EQ(gemm_detail::tile_panel0(13, 5, 0), 0);
  EXPECT_EQ(gemm_detail::tile_panel0(13, 5, 5), 13);
  for (int64_t panels = 1; panels <= 70; ++panels) {
    for (int64_t m : {int64_t{3}, int64_t{196}}) {
      const gemm_detail::TileChoice c = gemm_detail::choose_tiles(s, m, panels, 64);
      for (int64_t j = 0; j < c.n_tiles; ++j) {
        const int64_t w = gemm_detail::tile_panel0(panels, c.n_tiles, j + 1) -
                          gemm_detail::tile_panel0(panels, c.n_tiles, j);
        EXPECT_GE(w, 1) << panels << " panels, m " << m;
        EXPECT_LE(w, c.tile_panels) << panels << " panels, m " << m;
      }
    }
  }
}
// Task counts rounded up to a multiple of the pool's threads by more M blocks (hand-worked):
// Xception's 1444 x 728 x 728 plans 9 M blocks (104 tiles of 14 rows, 12 a block) — 5 rounds on
// one thread and 4 on the other — and runs 10; counts already a multiple, a single task, no
// pool, or no count up to the tiles that works, stay as they were.
TEST(CpuGemmTiles, TaskCountsRoundUpToAMultipleOfTheThreads) {
  struct Expect {
    int64_t m_blocks, others, m_tiles, threads, want;
  } cases[] = {
      {9, 1, 104, 2, 10},  // Xception's middle-flow 1x1 at 38 x 38
      {8, 1, 104, 2, 8},   // already a multiple
      {3, 3, 10, 2, 4},    // 9 tasks -> 12
      {5, 1, 104, 4, 8},   // 4 threads
      {2, 3, 10, 4, 4},    // 6 tasks: 8 is no multiple of 3, so 12
      {1, 1, 104, 2, 1},   // one task: too small to split
      {9, 1, 104, 1, 9},   // no pool
      {3, 1, 3, 2, 3},     // every tile already its own block
      {5, 3, 6, 4, 5},     // 15 or 18 tasks: neither a multiple of 4
  };
  for (const Expect& e : cases) {
    const int64_t got =
        gemm_detail::balanced_m_blocks(e.m_blocks, e.others, e.m_tiles, e.threads);
    EXPECT_EQ(got, e.want) << e.m_blocks << " M blocks x " << e.others << " on " << e.threads
                           << " threads, " << e.m_tiles << " tiles";
  }
}

/// Runs every case with every supported ISA, K in one block and in blocks of 16, on the
/// caller's thread and on a pool of two (one seed per case and blocking, from `seed` on).
template <size_t N>
void run_every_isa_and_k_block(const Case (&cases)[N], uint32_t seed) {
  Pool two(2);
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (int64_t kc : {int64_t{1024}, int64_t{16}}) {
      gemm_detail::gemm_blocking().kc_max = kc;
      for (const Case& cs : cases) {
        run_case(cs, nullptr, isa, seed);
        run_case(cs, two.pool, isa, seed);
        ++seed;
      }
    }
  }
}

TEST_F(CpuGemm, ResidualIsAddedOnceBeforeTheClamp) {
  // MobileNetV2's project conv + identity (3136 pixels, 144 -> 24) and smaller edge shapes;
  // with K split into several blocks the residual must still be added once, in the last.
  Case cases[] = {
      {3136, 24, 144},  {49, 160, 960},    {7, 5, 3, 1, 3},
      {33, 37, 70, 0, 2, false, -0.5f, 0.5f}, {1, 20, 50, 0, 0, true, 0.0f, kInf},
  };
  for (Case& cs : cases) cs.residual = true;
  run_every_isa_and_k_block(cases, 300);
}

TEST_F(CpuGemm, ActivationsApplyToEveryFinishedTile) {
  // hardswish after a clamp and a residual (MobileNetV3's expand convs have neither; the order
  // is the graph's), GELU in both forms, SiLU and sigmoid on a transformer MLP's shape and edge
  // shapes, with K in several blocks (the activation must run once, after the last).
  Case cases[] = {
      {196, 120, 40}, {49, 576, 96, 0, 3}, {7, 5, 3, 1, 3}, {128, 200, 64},
      {33, 37, 70, 0, 2, false, -2.0f, 2.5f}, {1, 20, 50},
  };
  cases[1].residual = true;
  Pool two(2);
  uint32_t seed = 500;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (GemmActivation act : {GemmActivation::Hardswish, GemmActivation::GeluErf,
                               GemmActivation::GeluTanh, GemmActivation::Silu,
                               GemmActivation::Sigmoid, GemmActivation::Square,
                               GemmActivation::LeakyRelu}) {
      for (int64_t kc : {int64_t{1024}, int64_t{16}}) {
        gemm_detail::gemm_blocking().kc_max = kc;
        for (Case cs : cases) {
          cs.activation = act;
          run_case(cs, nullptr, isa, seed);
          run_case(cs, two.pool, isa, seed);
          ++seed;
        }
      }
    }
  }
}

TEST_F(CpuGemm, MultiplierScalesEveryFinishedTileAfterTheActivation) {
  // A gated product: StarNet's relu6(f1(x)) · f2(x) (3136 pixels, 24 -> 96, the gate after the
  // clamp), a SwiGLU MLP's silu(gate(x)) · up(x) (rows of a transformer), with a residual, ldc
  // padding, edge shapes and K in several blocks (the multiply must run once, after the last).
  Case cases[] = {
      {3136, 96, 24, 0, 0, true, 0.0f, 6.0f}, {50, 200, 64}, {7, 5, 3, 1, 3},
      {33, 37, 70, 0, 2, false, -2.0f, 2.5f}, {1, 20, 50},   {49, 576, 96, 0, 3},
  };
  cases[1].activation = GemmActivation::Silu;
  cases[3].activation = GemmActivation::GeluErf;
  cases[5].residual = true;
  for (Case& cs : cases) cs.multiplier = true;
  run_every_isa_and_k_block(cases, 700);
}

TEST_F(CpuGemm, PostAffineAppliesPerColumnAfterTheActivation) {
  // A batch norm after the activation folded into the epilogue (blob version 28): ConvMixer's
  // 1x1 conv → ReLU → batch norm (1024 pixels, 64 -> 48, the clamp first), a linear → GELU →
  // batch norm, with a residual, ldc padding, edge shapes (a last panel of 5 columns: the scale
  // and shift read per panel) and K in several blocks (the affine must run once, after the last).
  Case cases[] = {
      {1024, 48, 64, 0, 0, true, 0.0f, kInf}, {50, 200, 64}, {7, 5, 3, 1, 3},
      {33, 37, 70, 0, 2, false, -2.0f, 2.5f}, {1, 20, 50},  {49, 576, 96, 0, 3},
  };
  cases[1].activation = GemmActivation::GeluErf;
  cases[3].activation = GemmActivation::Hardswish;
  cases[5].residual = true;
  for (Case& cs : cases) cs.post_affine = true;
  run_every_isa_and_k_block(cases, 900);
}

TEST_F(CpuGemm, SiluAndSigmoidOverTheRangeEveryIsa) {
  // The activations alone (gemm_activation_fn) on x from -100 to 100, signed zeros, the
  // infinities and NaN, in arrays of 1 to 40 floats (every tail): within 2e-6 relative of the
  // double definition (and 1e-35 absolute: below |x| = 87 the exponential flushes to 0); NaN
  // for NaN; silu(-inf) is NaN as in the portable kernel (-inf / (1 + inf)).
  std::vector<float> xs;
  for (int i = -2000; i <= 2000; ++i) xs.push_back(static_cast<float>(i) * 0.05f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.5f, -88.5f, 103.0f, -103.0f, 1e30f, -1e30f}) {
    xs.push_back(v);
  }
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (GemmActivation act : {GemmActivation::Silu, GemmActivation::Sigmoid}) {
      const ActivationFn fn = gemm_activation_fn(act);
      ASSERT_NE(fn, nullptr);
      const bool silu = act == GemmActivation::Silu;
      const std::string what = std::string(gemm_isa_name(isa)) + (silu ? " silu" : " sigmoid");
      for (size_t at = 0, len = 1; at < xs.size(); at += len, len = len % 40 + 1) {
        const size_t n = std::min(len, xs.size() - at);
        std::vector<float> y(xs.begin() + static_cast<std::ptrdiff_t>(at),
                             xs.begin() + static_cast<std::ptrdiff_t>(at + n));
        y.push_back(kGuardValue);
        fn(y.data(), 1, static_cast<int64_t>(n), static_cast<int64_t>(n), 0.0f);
        ASSERT_EQ(y[n], kGuardValue) << what << ": wrote past " << n << " floats";
        for (size_t i = 0; i < n; ++i) {
          const double x = xs[at + i];
          const double want = activate(act, x);
          EXPECT_LE(std::fabs(y[i] - want), 2e-6 * std::fabs(want) + 1e-35)
              << what << "(" << x << ") = " << y[i] << ", want " << want;
        }
      }
      // Tiles: rows of cols floats, ld apart (the SIMD forms group vectors across rows); the
      // floats between rows stay untouched.
      size_t next = 0;
      for (int64_t rows : {1, 2, 3, 5, 6}) {
        for (int64_t cols : {1, 7, 8, 9, 16, 17, 24, 40}) {
          const int64_t ld = cols + 5;
          std::vector<float> m(static_cast<size_t>(rows * ld), kGuardValue);
          std::vector<double> in(m.size(), 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              const size_t at = static_cast<size_t>(r * ld + c);
              m[at] = xs[next++ % xs.size()];
              in[at] = m[at];
            }
          }
          fn(m.data(), rows, cols, ld, 0.0f);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < ld; ++c) {
              const size_t at = static_cast<size_t>(r * ld + c);
              if (c >= cols) {
                ASSERT_EQ(m[at], kGuardValue) << what << " " << rows << "x" << cols
                                              << ": wrote row " << r << " column " << c;
                continue;
              }
              const double want = activate(act, in[at]);
              EXPECT_LE(std::fabs(m[at] - want), 2e-6 * std::fabs(want) + 1e-35)
                  << what << " " << rows << "x" << cols << " [" << r << "][" << c << "]("
                  << in[at] << ") = " << m[at] << ", want " << want;
            }
          }
        }
      }
      float special[4] = {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf, 1.0f};
      fn(special, 1, 4, 4, 0.0f);
      EXPECT_TRUE(std::isnan(special[0])) << what;
      if (silu) {
        EXPECT_EQ(special[1], kInf) << what;
      } else {
        EXPECT_NEAR(special[1], 1.0f, 1e-6f) << what;  // the reciprocal's last bit
      }
      if (silu) {
        EXPECT_TRUE(std::isnan(special[2])) << what;
      } else {
        EXPECT_EQ(special[2], 0.0f) << what;
      }
    }
  }
}

TEST_F(CpuGemm, TinyCacheBlocksAndManyTasks) {
  // Force every blocking path on small shapes: several K blocks, several M blocks, many tasks.
  gemm_detail::GemmBlocking& blocking = gemm_detail::gemm_blocking();
  blocking.kc_max = 5;
  blocking.a_block_bytes = 1;
  blocking.streaming_a_block_bytes = 1;
  blocking.tasks_per_thread = 16;
  blocking.min_task_fmas = 1;
  const Case cases[] = {{1, 50, 23},
                        {15, 33, 17},
                        {45, 70, 31, 2, 3},
                        {100, 9, 12, 0, 0, false},
                        {31, 130, 11, 0, 0, true, -0.2f, 0.3f}};
  Pool two(2);
  uint32_t seed = 200;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : cases) {
      run_case(cs, nullptr, isa, seed);
      run_case(cs, two.pool, isa, seed);
      ++seed;
    }
  }
}

TEST_F(CpuGemm, AStreamingBTakesTheBiggerABlock) {
  gemm_detail::GemmBlocking blocking;
  blocking.a_block_bytes = 256 << 10;
  blocking.streaming_b_bytes = 1 << 20;
  blocking.streaming_a_block_bytes = 1 << 20;
  EXPECT_EQ(gemm_detail::a_block_bytes_for(blocking, 1 << 20), 256 << 10);
  EXPECT_EQ(gemm_detail::a_block_bytes_for(blocking, (1 << 20) + 64), 1 << 20);
  // The defaults: half of the reported L2 within [a_block_bytes, 1 MiB]; an unknown L2 (0)
  // keeps a_block_bytes whatever B's size.
  const int64_t l2 = l2_cache_bytes();
  const gemm_detail::GemmBlocking defaults;
  EXPECT_GE(l2, 0);
  if (l2 == 0) {
    EXPECT_EQ(gemm_detail::a_block_bytes_for(defaults, 1e15), defaults.a_block_bytes);
  } else {
    EXPECT_EQ(defaults.streaming_b_bytes, l2 / 2);
    EXPECT_EQ(defaults.streaming_a_block_bytes,
              std::min<int64_t>(std::max<int64_t>(l2 / 2, 256 << 10), 1 << 20));
  }
  // One M block (A fits the streaming block) and many (it does not) give the same C, every
  // ISA: a 96 x 200 x 300 product whose 230 KiB B counts as streaming.
  gemm_detail::GemmBlocking& live = gemm_detail::gemm_blocking();
  live.streaming_b_bytes = 1024;
  Pool two(2);
  uint32_t seed = 300;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (int64_t a_block : {int64_t{1}, int64_t{1} << 20}) {
      live.streaming_a_block_bytes = a_block;
      run_case({96, 200, 300}, nullptr, isa, seed);
      run_case({96, 200, 300}, two.pool, isa, seed);
      ++seed;
    }
  }
}

TEST_F(CpuGemm, ZeroSizesTouchNothingAndKZeroGivesTheClampedBias) {
  const float w[1] = {0};
  std::vector<float> bias = {0.5f, -2.0f, 3.0f};
  std::vector<float> packed(packed_weight_floats(3, 0));
  pack_fc_weight(w, bias.data(), 3, 0, packed.data());
  float c[8];
  for (float& x : c) x = kGuard;
  GemmProblem p;
  p.m = 2;
  p.n = 3;
  p.k = 0;
  p.a = w;
  p.lda = 0;
  p.packed = packed.data();
  p.c = c;
  p.ldc = 4;
  p.out_min = -1.0f;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (float& x : c) x = kGuard;
    packed_gemm(p, nullptr);
    const float want[8] = {0.5f, -1.0f, 3.0f, kGuard, 0.5f, -1.0f, 3.0f, kGuard};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(c[i], want[i]) << gemm_isa_name(isa) << " at " << i;
    GemmProblem empty = p;
    empty.m = 0;
    for (float& x : c) x = kGuard;
    packed_gemm(empty, nullptr);
    empty = p;
    empty.n = 0;
    packed_gemm(empty, nullptr);
    for (float x : c) EXPECT_EQ(x, kGuard);
  }
}

TEST_F(CpuGemm, NanPropagatesWithoutAClamp) {
  const int64_t m = 3, n = 20, k = 5;
  std::vector<float> a = random_floats(m * k, 7);
  a[1 * k + 2] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> w = random_floats(n * k, 8);
  std::vector<float> packed(packed_weight_floats(n, k));
  pack_fc_weight(w.data(), nullptr, n, k, packed.data());
  std::vector<float> c(m * n);
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a.data();
  p.lda = k;
  p.packed = packed.data();
  p.c = c.data();
  p.ldc = n;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    packed_gemm(p, nullptr);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(std::isnan(c[i * n + j]), i == 1)
            << gemm_isa_name(isa) << " C[" << i << ", " << j << "] = " << c[i * n + j];
      }
    }
  }
}


TEST_F(CpuGemm, ExactSizeAAndCEndingAtAGuardPage) {
  const Case cases[] = {{1, 1, 1},     {1, 7, 3},   {3, 5, 9},     {7, 33, 17},
                        {14, 31, 5},   {15, 17, 2}, {29, 3, 40},   {50, 47, 600},
                        {1, 100, 700}, {2, 9, 513}, {30, 17, 1100}};
  Pool two(2);
  uint32_t seed = 300;
  const gemm_detail::GemmBlocking defaults = gemm_detail::gemm_blocking();
  gemm_detail::GemmBlocking tiny = defaults;  // several K blocks: C is read back between them
  tiny.kc_max = 7;
  tiny.a_block_bytes = 1;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : cases) {
      for (int variant = 0; variant < 4; ++variant) {
        pthreadpool_t pool = variant % 2 ? two.pool : nullptr;
        gemm_detail::gemm_blocking() = variant < 2 ? defaults : tiny;
        const std::vector<float> a_src = random_floats(cs.m * cs.k, seed);
        const std::vector<float> w = random_floats(cs.n * cs.k, seed + 1);
        const std::vector<float> bias = random_floats(cs.n, seed + 2);
        ++seed;
        GuardedBuffer a(sizeof(float) * cs.m * cs.k);
        GuardedBuffer c(sizeof(float) * cs.m * cs.n);
        ASSERT_NE(a.data(), nullptr);
        ASSERT_NE(c.data(), nullptr);
        std::memcpy(a.data(), a_src.data(), sizeof(float) * a_src.size());
        std::vector<float> packed(packed_weight_floats(cs.n, cs.k));
        pack_fc_weight(w.data(), bias.data(), cs.n, cs.k, packed.data());
        GemmProblem p;
        p.m = cs.m;
        p.n = cs.n;
        p.k = cs.k;
        p.a = a.data();
        p.lda = cs.k;
        p.packed = packed.data();
        p.c = c.data();
        p.ldc = cs.n;
        packed_gemm(p, pool);  // an over-read of A or over-write of C dies with SIGSEGV here
        check_against_reference(cs, a.data(), cs.k, w.data(), bias.data(), c.data(), cs.n,
                                describe(cs, isa, pool != nullptr) + " (guard page, " +
                                    (variant < 2 ? "default" : "tiny") + " blocks)");
      }
    }
  }
}

TEST_F(CpuGemm, ConcurrentCallsOnDistinctOutputs) {
  const Case cs{37, 45, 130};
  const std::vector<float> a = random_floats(cs.m * cs.k, 400);
  const std::vector<float> w = random_floats(cs.n * cs.k, 401);
  std::vector<float> packed(packed_weight_floats(cs.n, cs.k));
  pack_fc_weight(w.data(), nullptr, cs.n, cs.k, packed.data());
  std::vector<float> c0(cs.m * cs.n), c1(cs.m * cs.n);
  auto run = [&](float* c) {
    GemmProblem p;
    p.m = cs.m;
    p.n = cs.n;
    p.k = cs.k;
    p.a = a.data();
    p.lda = cs.k;
    p.packed = packed.data();
    p.c = c;
    p.ldc = cs.n;
    for (int i = 0; i < 50; ++i) packed_gemm(p, nullptr);
  };
  std::thread t0(run, c0.data()), t1(run, c1.data());
  t0.join();
  t1.join();
  Case no_bias = cs;
  no_bias.bias = false;
  check_against_reference(no_bias, a.data(), cs.k, w.data(), nullptr, c0.data(), cs.n, "thread 0");
  check_against_reference(no_bias, a.data(), cs.k, w.data(), nullptr, c1.data(), cs.n, "thread 1");
}

TEST_F(CpuGemm, NeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  const Case shapes[] = {{1, 300, 400}, {64, 100, 600}};
  Pool two(2);
  for (const Case& cs : shapes) {
    const std::vector<float> a = random_floats(cs.m * cs.k, 500);
    const std::vector<float> w = random_floats(cs.n * cs.k, 501);
    std::vector<float> packed(packed_weight_floats(cs.n, cs.k));
    pack_fc_weight(w.data(), nullptr, cs.n, cs.k, packed.data());
    std::vector<float> c(cs.m * cs.n);
    GemmProblem p;
    p.m = cs.m;
    p.n = cs.n;
    p.k = cs.k;
    p.a = a.data();
    p.lda = cs.k;
    p.packed = packed.data();
    p.c = c.data();
    p.ldc = cs.n;
    for (GemmIsa isa : supported_isas()) {
      ASSERT_TRUE(packed_gemm_force_isa(isa));
      packed_gemm(p, two.pool);  // warm: dispatch detection, pool threads started
      testing_support::ArmedCounter counter;
      packed_gemm(p, nullptr);
      packed_gemm(p, two.pool);
      EXPECT_EQ(counter.count(), 0) << gemm_isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace tern::cpu
