// tern's Winograd F(2x2, 3x3) and F(4x4, 3x3) NHWC convolutions (backends/cpu/kernels/
// winograd_conv.h), each tile kind in turn: every ISA this CPU runs, forced in turn, against a naive double-precision NHWC 3x3 convolution computed
// straight from the PyTorch OIHW weight, over a spread of shapes (odd output sizes 7x7 and 5x9
// that leave partial tiles, pad 0, pad 1 and asymmetric or larger pads, in_c and out_c of 3, 17,
// 33, batch 2, 1x1 images), bias or none, clamp or none, fused residual or none (with a ReLU), no
// pool and a 2-thread pool, default and tiny blocks (several K blocks, one register tile per
// block, out_c split across threads or not); a guard region after y and after the scratch stays
// untouched; x, y, the residual (read-only) and the scratch ending at a PROT_NONE page are
// neither over-read nor over-written; no heap allocation; concurrent calls with distinct y and
// scratch; the packed weight's documented layout (corner taps, bias slots, zero padding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "backends/cpu/kernels/winograd_transform.h"
#include "tests/backends/cpu/kernel_test_util.h"
#include "tests/support/allocation_counter.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;
using kernel_test::supported_isas;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kGuard = -12345.678f;  // what the guard regions after y and the scratch hold
constexpr int64_t kGuardFloats = 67;
constexpr WinogradTile kTiles[] = {WinogradTile::F2x2, WinogradTile::F4x4};

const char* tile_name(WinogradTile tile) {
  return tile == WinogradTile::F4x4 ? "F(4x4,3x3)" : "F(2x2,3x3)";
}

/// Restores dispatch's choice and the blocking knobs after each test.
using CpuWinograd = kernel_test::RestoresIsaAndKnobs<winograd_detail::WinogradBlocking,
                                                     &winograd_detail::winograd_blocking>;

struct Case {
  const char* name;
  int64_t batch, in_h, in_w, in_c, out_c;
  int64_t pt, pl, pb, pr;  // padding top, left, bottom, right
  int64_t out_h() const { return in_h + pt + pb - 2; }
  int64_t out_w() const { return in_w + pl + pr - 2; }
  int64_t x_floats() const { return batch * in_h * in_w * in_c; }
  int64_t y_floats() const { return batch * out_h() * out_w() * out_c; }
  int64_t w_floats() const { return out_c * in_c * 9; }
};

const Case kCases[] = {
    // name                                 N   H   W   C   O  pt pl pb pr
    {"9x9 p1, C 16, O 32", 1, 9, 9, 16, 32, 1, 1, 1, 1},
    {"odd 7x7 out, C 17, O 33", 1, 7, 7, 17, 33, 1, 1, 1, 1},
    {"odd 5x9 out, C 3, O 17", 1, 5, 9, 3, 17, 1, 1, 1, 1},
    {"pad 0 (7x6 out), C 33, O 3", 1, 9, 8, 33, 3, 0, 0, 0, 0},
    {"batch 2, 6x7 p1, C 17, O 16", 2, 6, 7, 17, 16, 1, 1, 1, 1},
    {"batch 2, 5x5 p0, C 3, O 33", 2, 5, 5, 3, 33, 0, 0, 0, 0},
    {"1x1 image p1, C 5, O 9", 1, 1, 1, 5, 9, 1, 1, 1, 1},
    {"batch 2, 1x1 image p1, C 16, O 1", 2, 1, 1, 16, 1, 1, 1, 1, 1},
    {"3x3 image p0 (1x1 out), C 33, O 17", 1, 3, 3, 33, 17, 0, 0, 0, 0},
    {"asymmetric pads 0/1/2/0", 1, 6, 7, 3, 16, 0, 1, 2, 0},
    {"pads 2 (output larger than input)", 1, 2, 3, 4, 5, 2, 2, 2, 2},
    {"C 1, O 1", 1, 6, 5, 1, 1, 1, 1, 1, 1},
    {"ResNet-like 64->64 at 12x12", 1, 12, 12, 64, 64, 1, 1, 1, 1},
    {"deep C 300 (two K blocks), O 40", 1, 5, 6, 300, 40, 1, 1, 1, 1},
    {"many tiles 30x29, C 8, O 20", 1, 30, 29, 8, 20, 1, 1, 1, 1},
    {"4x4 tiles with 1-3 outputs left, 11x10 p1", 1, 11, 10, 19, 21, 1, 1, 1, 1},
    {"batch 3, 8x9 p1 (whole 4x4 tiles in h)", 3, 8, 9, 16, 16, 1, 1, 1, 1},
};

std::string describe(const Case& c, WinogradTile tile, GemmIsa isa, bool bias, bool clamp,
                     bool pool, bool residual = false) {
  return std::string(c.name) + " [" + tile_name(tile) + ", " + gemm_isa_name(isa) +
         (bias ? ", bias" : ", no bias") +
         (clamp ? ", clamp" : "") + (residual ? ", residual" : "") +
         (pool ? ", pool2" : ", no pool") + "]";
}

/// The unclamped reference in double: bias + Σ x[n, oh - pt + i, ow - pl + j, c] · w[o, c, i,
/// j] over the taps inside x, plus the residual (y's layout; null: none). NHWC order.
std::vector<double> reference(const Case& cs, const float* x, const float* w, const float* bias,
                              const float* residual) {
  const int64_t oh_n = cs.out_h(), ow_n = cs.out_w();
  std::vector<double> out(static_cast<size_t>(cs.y_floats()));
  for (int64_t n = 0; n < cs.batch; ++n) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        for (int64_t o = 0; o < cs.out_c; ++o) {
          double sum = bias != nullptr ? bias[o] : 0.0;
          for (int64_t i = 0; i < 3; ++i) {
            const int64_t ih = oh - cs.pt + i;
            if (ih < 0 || ih >= cs.in_h) continue;
            for (int64_t j = 0; j < 3; ++j) {
              const int64_t iw = ow - cs.pl + j;
              if (iw < 0 || iw >= cs.in_w) continue;
              for (int64_t c = 0; c < cs.in_c; ++c) {
                sum += static_cast<double>(x[((n * cs.in_h + ih) * cs.in_w + iw) * cs.in_c + c]) *
                       static_cast<double>(w[((o * cs.in_c + c) * 3 + i) * 3 + j]);
              }
            }
          }
          const int64_t at = ((n * oh_n + oh) * ow_n + ow) * cs.out_c + o;
          if (residual != nullptr) sum += residual[at];
          out[static_cast<size_t>(at)] = sum;
        }
      }
    }
  }
  return out;
}

/// y against clamp(reference), within tol = f · eps · sqrt(9·C + 2) · scale (eps = 2^-24,
/// float's unit roundoff): the rounding errors of a sum of K = 9·C + 2 terms of random sign (the
/// products, the bias and the residual) grow like sqrt(K) · eps of the values involved, and the
/// factor f covers the transforms' own roundings and growth: f = 4 for F(2x2) (Bᵀ d B adds up
/// to 4 inputs, Aᵀ M A up to 9 GEMM results per value; the largest errors seen are 1/5 to 1/12
/// of it, at 1/10 of it several cases fail); f = 16 for F(4x4), whose Bᵀ and Aᵀ have entries up
/// to 5/2 and 8 (the largest errors seen on x86-64 are 1/4 to 1/2 of it: with f = 4 twelve
/// cases fail, with f = 8 none).
/// scale = max(max |unclamped reference|, rms(x) · rms(w) · sqrt(9·C)): the values involved are
/// about max |ref|, except where most of a tile lies in the padding (a 1x1 image): the output
/// then sums one tap of the nine, while the transformed weight G g Gᵀ, and so M's rounding,
/// carries all nine; the second term is what a whole 3x3 window of these operands gives (about
/// max |ref| / 3 on a whole image). Without it the 1x1 image with C 16, O 1 fails under F(4x4)
/// on aarch64's NEON microkernel (error 2.2e-6 against a tol of 1.8e-6).
double tolerance_factor(WinogradTile tile) { return tile == WinogradTile::F4x4 ? 16.0 : 4.0; }

double rms(const float* v, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
  return n > 0 ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

int check_against_reference(const Case& cs, WinogradTile tile, const float* x, const float* w,
                            const float* bias, float lo, float hi, const float* y,
                            const std::string& what, const float* residual = nullptr) {
  const std::vector<double> ref = reference(cs, x, w, bias, residual);
  double scale = rms(x, cs.x_floats()) * rms(w, cs.w_floats()) * std::sqrt(9.0 * cs.in_c);
  for (double v : ref) scale = std::max(scale, std::fabs(v));
  constexpr double kEps = 5.9604644775390625e-8;  // 2^-24
  const double tol = tolerance_factor(tile) * kEps *
                         std::sqrt(9.0 * static_cast<double>(cs.in_c) + 2.0) * scale +
                     1e-30;
  int bad = 0;
  for (size_t at = 0; at < ref.size(); ++at) {
    const double want = std::fmin(std::fmax(ref[at], lo), hi);
    const double got = y[at];
    if (!(std::fabs(got - want) <= tol)) {
      if (bad < 5) {
        const int64_t o = static_cast<int64_t>(at) % cs.out_c;
        const int64_t pixel = static_cast<int64_t>(at) / cs.out_c;
        ADD_FAILURE() << what << ": y[pixel " << pixel << " (ow " << pixel % cs.out_w() << ", oh "
                      << pixel / cs.out_w() % cs.out_h() << "), o " << o << "] = " << got
                      << ", want " << want << " (tol " << tol << ")";
      }
      ++bad;
    }
  }
  return bad;
}

WinogradProblem make_problem(const Case& cs, WinogradTile tile, const float* x,
                             const float* packed, float* y, float lo, float hi,
                             const float* residual = nullptr) {
  WinogradProblem p;
  p.tile = tile;
  p.batch = cs.batch;
  p.in_h = cs.in_h;
  p.in_w = cs.in_w;
  p.in_c = cs.in_c;
  p.out_h = cs.out_h();
  p.out_w = cs.out_w();
  p.out_c = cs.out_c;
  p.pad_top = cs.pt;
  p.pad_left = cs.pl;
  p.x = x;
  p.packed = packed;
  p.y = y;
  p.residual = residual;
  p.out_min = lo;
  p.out_max = hi;
  return p;
}

std::vector<float> pack(const Case& cs, WinogradTile tile, const float* w, const float* bias) {
  std::vector<float> packed(winograd_weight_floats(cs.out_c, cs.in_c, tile));
  pack_winograd_weight(w, bias, cs.out_c, cs.in_c, packed.data(), tile);
  return packed;
}

/// Runs every case with every ISA, bias/none × clamp/none × no pool/2 threads × residual/none
/// under the current blocking knobs; y and the scratch (sized for 2 threads, used by both) are
/// followed by guard floats. With a residual the clamp is a ReLU (ResNet's relu(conv + bias +
/// identity)).
void run_all_cases(const std::string& blocks) {
  Pool two(2);
  uint32_t seed = 1;
  for (WinogradTile tile : kTiles) {
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : kCases) {
      ASSERT_GE(cs.out_h(), 1) << cs.name;
      ASSERT_GE(cs.out_w(), 1) << cs.name;
      const std::vector<float> x = random_floats(cs.x_floats(), seed);
      const std::vector<float> w = random_floats(cs.w_floats(), seed + 1);
      const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
      const std::vector<float> residual = random_floats(cs.y_floats(), seed + 3);
      ++seed;
      const std::vector<float> packed_bias = pack(cs, tile, w.data(), bias.data());
      const std::vector<float> packed_none = pack(cs, tile, w.data(), nullptr);
      for (int variant = 0; variant < 16; ++variant) {
        const bool with_bias = variant & 1, clamp = variant & 2, pooled = variant & 4,
                   with_residual = variant & 8;
        const float* res = with_residual ? residual.data() : nullptr;
        const float lo = clamp ? (with_residual ? 0.0f : -0.5f) : -kInf;
        const float hi = clamp && !with_residual ? 0.75f : kInf;
        std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
        const WinogradProblem p =
            make_problem(cs, tile, x.data(), with_bias ? packed_bias.data() : packed_none.data(),
                         y.data(), lo, hi, res);
        const uint64_t scratch_floats = winograd_scratch_floats(p, 2);
        std::vector<float> scratch(scratch_floats + kGuardFloats, kGuard);
        winograd_conv_nhwc(p, scratch.data(), pooled ? two.pool : nullptr);
        const std::string what =
            describe(cs, tile, isa, with_bias, clamp, pooled, with_residual) + " " + blocks;
        check_against_reference(cs, tile, x.data(), w.data(), with_bias ? bias.data() : nullptr,
                                lo, hi, y.data(), what, res);
        for (int64_t i = 0; i < kGuardFloats; ++i) {
          ASSERT_EQ(y[cs.y_floats() + i], kGuard) << what << ": y guard float " << i << " written";
          ASSERT_EQ(scratch[scratch_floats + i], kGuard)
              << what << ": scratch guard float " << i << " written";
        }
      }
    }
  }
  }
}

TEST_F(CpuWinograd, EveryIsaEveryShapeAgainstDoubleReference) { run_all_cases("(default blocks)"); }

TEST_F(CpuWinograd, TinyBlocksSplitOutCAcrossThreads) {
  // K blocks of 5 channels (C = 17 in 4 blocks, C = 300 in 60: partial sums go through M), one
  // register tile per block, and out_c split across the two threads (each task its own share of
  // U and of y's channels).
  winograd_detail::WinogradBlocking& b = winograd_detail::winograd_blocking();
  b.kc_max = 5;
  b.block_bytes = 1;
  b.min_tiles_per_part = 1 << 20;
  run_all_cases("(kc_max 5, one register tile per block, out_c split across threads)");
}

TEST_F(CpuWinograd, SmallBlocksTilesSplitAcrossThreads) {
  // K blocks of 16 channels, blocks of a few register tiles, tiles always split across threads.
  winograd_detail::WinogradBlocking& b = winograd_detail::winograd_blocking();
  b.kc_max = 16;
  b.block_bytes = 64 << 10;
  b.min_tiles_per_part = 0;
  run_all_cases("(kc_max 16, 64 KiB blocks, tiles split across threads)");
}

TEST_F(CpuWinograd, ResNetLayerShapesAtReducedSize) {
  // ResNet-18's 3x3 stride-1 channel counts on small images (C up to 512: two K blocks by
  // default; out_c 512: split across threads when tiles are few), fused ReLU, with and without a
  // residual; and the 64-channel layer on a full 56x56 image (many blocks per task).
  const Case cases[] = {
      {"3x3 64->64 @56", 1, 56, 56, 64, 64, 1, 1, 1, 1},
      {"3x3 128->128 @9", 1, 9, 9, 128, 128, 1, 1, 1, 1},
      {"3x3 256->256 @6", 1, 6, 6, 256, 256, 1, 1, 1, 1},
      {"3x3 512->512 @3", 1, 3, 3, 512, 512, 1, 1, 1, 1},
  };
  Pool two(2);
  uint32_t seed = 100;
  for (WinogradTile tile : kTiles) {
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : cases) {
      const std::vector<float> x = random_floats(cs.x_floats(), seed);
      const std::vector<float> w = random_floats(cs.w_floats(), seed + 1);
      const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
      const std::vector<float> residual = random_floats(cs.y_floats(), seed + 3);
      ++seed;
      const std::vector<float> packed = pack(cs, tile, w.data(), bias.data());
      for (const float* res : {static_cast<const float*>(nullptr), residual.data()}) {
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
          std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
          const WinogradProblem p =
              make_problem(cs, tile, x.data(), packed.data(), y.data(), 0.0f, kInf, res);
          std::vector<float> scratch(winograd_scratch_floats(p, 2));
          winograd_conv_nhwc(p, scratch.data(), pool);
          const std::string what =
              describe(cs, tile, isa, true, true, pool != nullptr, res != nullptr);
          check_against_reference(cs, tile, x.data(), w.data(), bias.data(), 0.0f, kInf, y.data(),
                                  what, res);
          for (int64_t i = 0; i < kGuardFloats; ++i) {
            ASSERT_EQ(y[cs.y_floats() + i], kGuard) << what << ": guard float " << i << " written";
          }
        }
      }
    }
  }
  }
}

TEST_F(CpuWinograd, ExactSizeBuffersEndingAtAGuardPage) {
  // x, y, the read-only residual and the scratch (sized for exactly the pool's threads) each end
  // at a PROT_NONE page: an over-read or over-write dies with SIGSEGV. Default and tiny blocks.
  Pool two(2);
  uint32_t seed = 200;
  for (WinogradTile tile : kTiles) {
  for (int64_t kc : {int64_t{256}, int64_t{5}}) {
    winograd_detail::winograd_blocking().kc_max = kc;
    for (GemmIsa isa : supported_isas()) {
      ASSERT_TRUE(packed_gemm_force_isa(isa));
      for (const Case& cs : kCases) {
        const std::vector<float> x_src = random_floats(cs.x_floats(), seed);
        const std::vector<float> w = random_floats(cs.w_floats(), seed + 1);
        const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
        const std::vector<float> res_src = random_floats(cs.y_floats(), seed + 3);
        ++seed;
        const std::vector<float> packed = pack(cs, tile, w.data(), bias.data());
        GuardedBuffer x(sizeof(float) * cs.x_floats());
        GuardedBuffer y(sizeof(float) * cs.y_floats());
        GuardedBuffer residual(sizeof(float) * cs.y_floats());
        ASSERT_NE(x.data(), nullptr);
        ASSERT_NE(y.data(), nullptr);
        ASSERT_NE(residual.data(), nullptr);
        std::memcpy(x.data(), x_src.data(), sizeof(float) * x_src.size());
        std::memcpy(residual.data(), res_src.data(), sizeof(float) * res_src.size());
        ASSERT_TRUE(x.make_read_only());
        ASSERT_TRUE(residual.make_read_only());
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
          for (const float* res :
               {static_cast<const float*>(nullptr), static_cast<const float*>(residual.data())}) {
            const WinogradProblem p =
                make_problem(cs, tile, x.data(), packed.data(), y.data(), 0.0f, kInf, res);
            GuardedBuffer scratch(sizeof(float) * winograd_scratch_floats(p, pool ? 2 : 1));
            ASSERT_NE(scratch.data(), nullptr);
            winograd_conv_nhwc(p, scratch.data(), pool);
            check_against_reference(
                cs, tile, x.data(), w.data(), bias.data(), 0.0f, kInf, y.data(),
                describe(cs, tile, isa, true, true, pool != nullptr, res != nullptr) +
                    " guard pages, kc_max " + std::to_string(kc),
                res);
          }
        }
      }
    }
  }
  }
}

TEST_F(CpuWinograd, NoHeapAllocation) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "sanitizers own malloc";
  const Case cs{"batch 2, 15x13, C 24, O 40", 2, 15, 13, 24, 40, 1, 1, 1, 1};
  const std::vector<float> x = random_floats(cs.x_floats(), 300);
  const std::vector<float> w = random_floats(cs.w_floats(), 301);
  const std::vector<float> residual = random_floats(cs.y_floats(), 302);
  std::vector<float> y(cs.y_floats());
  Pool two(2);
  for (WinogradTile tile : kTiles) {
    const std::vector<float> packed = pack(cs, tile, w.data(), nullptr);
    const WinogradProblem warm =
        make_problem(cs, tile, x.data(), packed.data(), y.data(), -kInf, kInf);
    std::vector<float> scratch(winograd_scratch_floats(warm, 2));
    winograd_conv_nhwc(warm, scratch.data(), two.pool);
    for (GemmIsa isa : supported_isas()) {
      ASSERT_TRUE(packed_gemm_force_isa(isa));
      for (const float* res : {static_cast<const float*>(nullptr), residual.data()}) {
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
          const WinogradProblem p =
              make_problem(cs, tile, x.data(), packed.data(), y.data(), 0.0f, kInf, res);
          long allocations = 0;
          {
            testing_support::ArmedCounter counter;
            winograd_conv_nhwc(p, scratch.data(), pool);
            allocations = counter.count();
          }
          EXPECT_EQ(allocations, 0) << tile_name(tile) << " " << gemm_isa_name(isa)
                                    << (pool ? " pool2" : " no pool") << (res ? " residual" : "");
        }
      }
    }
  }
}

TEST_F(CpuWinograd, ConcurrentCallsWithDistinctOutputsAndScratch) {
  const Case cs{"20x18, C 32, O 48", 1, 20, 18, 32, 48, 1, 1, 1, 1};
  const std::vector<float> x = random_floats(cs.x_floats(), 400);
  const std::vector<float> w = random_floats(cs.w_floats(), 401);
  const std::vector<float> bias = random_floats(cs.out_c, 402);
  for (WinogradTile tile : kTiles) {
    const std::vector<float> packed = pack(cs, tile, w.data(), bias.data());
    constexpr int kThreads = 4;
    std::vector<std::vector<float>> ys(kThreads, std::vector<float>(cs.y_floats()));
    const WinogradProblem sizing =
        make_problem(cs, tile, x.data(), packed.data(), nullptr, -kInf, kInf);
    std::vector<std::vector<float>> scratches(
        kThreads, std::vector<float>(winograd_scratch_floats(sizing, 1)));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int rep = 0; rep < 20; ++rep) {
          winograd_conv_nhwc(
              make_problem(cs, tile, x.data(), packed.data(), ys[t].data(), -kInf, kInf),
              scratches[t].data(), nullptr);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      check_against_reference(cs, tile, x.data(), w.data(), bias.data(), -kInf, kInf,
                              ys[t].data(),
                              std::string(tile_name(tile)) + " concurrent call " +
                                  std::to_string(t));
    }
  }
}

/// The documented layout of a packed weight of side t (4 or 6): matrix xi = t·a + b holds
/// (G g Gᵀ)[a][b]. G's first and last rows are (1, 0, 0) and (0, 0, 1) for both tile kinds, so
/// the corners are exact taps: U[0] = g[0][0], U[t-1] = g[0][2], U[t(t-1)] = g[2][0], U[t²-1] =
/// g[2][2]. G's row 1 is (1/2)(1, 1, 1) for F(2x2) and (1/3)(1, 1, 1) for F(4x4), so U at a = b = 1
/// is the sum of the taps / 4 or / 9, and the bias sits in that matrix's bias slots only;
/// columns past out_c are zeros.
void check_packed_layout(WinogradTile tile) {
  const int64_t t = tile == WinogradTile::F4x4 ? 6 : 4;
  const int64_t positions = t * t, center = t + 1;
  const double row1 = tile == WinogradTile::F4x4 ? 1.0 / 3 : 0.5;
  const int64_t o_n = 20, c_n = 3;  // two panels, the second ragged
  const std::vector<float> w = random_floats(o_n * c_n * 9, 500);
  const std::vector<float> bias = random_floats(o_n, 501);
  std::vector<float> packed(winograd_weight_floats(o_n, c_n, tile), kGuard);
  ASSERT_EQ(packed.size(), static_cast<uint64_t>(positions) * packed_weight_floats(o_n, c_n));
  ASSERT_EQ(winograd_positions(tile), positions);
  pack_winograd_weight(w.data(), bias.data(), o_n, c_n, packed.data(), tile);
  const int64_t matrix = static_cast<int64_t>(packed_weight_floats(o_n, c_n));
  const int64_t panel_stride = kPanelWidth * (c_n + 1);
  for (int64_t xi = 0; xi < positions; ++xi) {
    for (int64_t col = 0; col < 2 * kPanelWidth; ++col) {
      const int64_t o = col;
      const float* panel = packed.data() + xi * matrix + (col / kPanelWidth) * panel_stride;
      const float slot = panel[col % kPanelWidth];
      EXPECT_EQ(slot, xi == center && o < o_n ? bias[o] : 0.0f)
          << tile_name(tile) << " xi " << xi << " o " << o;
      for (int64_t c = 0; c < c_n; ++c) {
        const float u = panel[kPanelWidth + c * kPanelWidth + col % kPanelWidth];
        if (o >= o_n) {
          EXPECT_EQ(u, 0.0f) << "padding xi " << xi << " o " << o << " c " << c;
          continue;
        }
        const float* g = w.data() + (o * c_n + c) * 9;
        const int64_t corner = xi == 0 ? 0 : xi == t - 1 ? 2 : xi == t * (t - 1) ? 6 : 8;
        if (xi == 0 || xi == t - 1 || xi == t * (t - 1) || xi == positions - 1) {
          EXPECT_EQ(u, g[corner]) << tile_name(tile) << " corner xi " << xi;
        }
        if (xi == center) {
          double sum = 0;
          for (int k = 0; k < 9; ++k) sum += g[k];
          EXPECT_NEAR(u, sum * row1 * row1, 1e-6) << tile_name(tile) << " o " << o << " c " << c;
        }
      }
    }
  }
}

TEST_F(CpuWinograd, PackedWeightLayout) {
  for (WinogradTile tile : kTiles) check_packed_layout(tile);
}

TEST_F(CpuWinograd, EmptyProblemsTouchNothing) {
  std::vector<float> y(64, kGuard);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> scratch(64, kGuard);
  const Case cs{"3x3 p1", 1, 3, 3, 1, 4, 1, 1, 1, 1};
  for (WinogradTile tile : kTiles) {
    std::vector<float> packed(winograd_weight_floats(4, 1, tile), 1.0f);
    for (int which = 0; which < 4; ++which) {
      WinogradProblem p = make_problem(cs, tile, x.data(), packed.data(), y.data(), -kInf, kInf);
      if (which == 0) p.batch = 0;
      if (which == 1) p.out_c = 0;
      if (which == 2) p.out_w = 0;
      if (which == 3) p.in_c = 0;
      EXPECT_EQ(winograd_scratch_floats(p, 2), 0u) << which;
      winograd_conv_nhwc(p, scratch.data(), nullptr);
      for (float v : y) ASSERT_EQ(v, kGuard) << which;
      for (float v : scratch) ASSERT_EQ(v, kGuard) << which;
    }
  }
}

}  // namespace
}  // namespace tern::cpu
