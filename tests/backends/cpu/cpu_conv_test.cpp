// tern's NHWC convolution on the packed GEMM (backends/cpu/kernels/packed_conv.h): every ISA this
// CPU runs, forced in turn, against a naive double-precision NHWC convolution over a spread of
// shapes (the ResNet stem 7x7/2 with C = 3, 3x3/1 and 3x3/2 with padding, 1x1/2, dilation 2,
// non-square kernels, images and strides, batch 2, out_c not a multiple of 16, tiny images where
// the kernel is mostly padding, grouped convolutions: RegNet's and ResNeXt's group widths 16, 8 and
// 4 (on AVX-512 several whole groups a vector, with a masked last vector; width 16 one group a
// vector, border taps reading zeros), groups of more than one panel, odd group sizes, a group
// window under the shallow threshold; the direct path's block sizes and border blocks), bias or
// none, clamp or none, fused residual or none (with a ReLU clamp: ResNet's relu(conv + bias +
// identity)), no pool and a 2-thread pool, default and tiny cache blocks (K split into several
// blocks: the residual is added once, in the last), tap skipping (DeepLabV3's dilated convs in
// small at the default knobs; every padded case with it forced on, pieces cut by K blocks); a
// guard region after y stays untouched; x, y
// and the residual ending at a PROT_NONE page are neither over-read nor over-written (the residual
// read-only); no heap allocation.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_conv.h"
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
constexpr float kGuard = -12345.678f;  // what the guard region after y holds
constexpr int64_t kGuardFloats = 67;




/// Restores dispatch's choice and the blocking knobs after each test.
using CpuConv =
    kernel_test::RestoresIsaAndKnobs<gemm_detail::ConvBlocking, &gemm_detail::conv_blocking>;

struct Case {
  const char* name;
  int64_t batch, in_h, in_w, in_c, out_c;
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;  // padding top, left, bottom, right
  int64_t groups = 1;      // in_c and out_c are the totals over the groups
  int64_t out_h() const { return (in_h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t out_w() const { return (in_w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  int64_t k() const { return kh * kw * (in_c / groups); }  // one group's K
  int64_t weight_floats() const { return out_c * k(); }    // [O, KH, KW, C / G]
  int64_t packed_floats() const {
    return groups * static_cast<int64_t>(packed_weight_floats(out_c / groups, k()));
  }
  int64_t x_floats() const { return batch * in_h * in_w * in_c; }
  int64_t y_floats() const { return batch * out_h() * out_w() * out_c; }
};

const Case kCases[] = {
    // name                 N   H   W   C    O  kh kw sh sw dh dw pt pl pb pr
    {"stem 7x7/2 C=3", 1, 30, 30, 3, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},
    {"3x3/1 p1", 1, 9, 9, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3/2 p1", 1, 12, 12, 32, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"1x1/2 downsample", 1, 14, 14, 64, 128, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
    {"3x3 dilation 2", 1, 11, 10, 8, 24, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
    {"dilation h only", 1, 10, 9, 5, 7, 3, 2, 1, 1, 2, 1, 1, 0, 2, 1},
    {"dilation w only, stride 3x1", 1, 13, 11, 6, 20, 2, 3, 3, 1, 1, 3, 0, 2, 1, 3},
    {"non-square 1x5 and 5x1 image", 1, 5, 17, 7, 33, 1, 5, 1, 2, 1, 1, 0, 2, 0, 2},
    {"batch 2, out_c 17", 2, 8, 7, 19, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"batch 2, 3x3/2, out_c 5", 2, 9, 11, 16, 5, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1},
    {"tiny image 1x1, 3x3 p1", 1, 1, 1, 4, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"tiny image 2x2, 7x7/2 p3", 1, 2, 2, 3, 20, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},
    {"tiny 3x2, 5x5 p4 (output wider than input)", 2, 3, 2, 2, 3, 5, 5, 1, 1, 1, 1, 4, 4, 4, 4},
    {"asymmetric padding", 1, 6, 7, 3, 16, 3, 3, 1, 1, 1, 1, 0, 2, 2, 0},
    {"C=1, out_c=1", 1, 6, 6, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"deep K 3x3x300", 1, 5, 6, 300, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"many pixels 3x3/1 C=16", 1, 24, 23, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    // Shallow windows (KH*KW*C < 32): the direct convolution (shallow_conv.h).
    {"shallow stem 3x3/2 C=3 O=32", 1, 23, 21, 3, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"shallow 3x3/2 C=3 O=16", 1, 17, 18, 3, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"shallow C=3 O=40 wide row, batch 2", 2, 5, 30, 3, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"shallow 2x2 C=7 O=24 stride 3 dilation 2", 1, 14, 15, 7, 24, 2, 2, 3, 3, 2, 2, 0, 1, 0, 1},
    // 17-24 channels in one pass of three ymm vectors on AVX2 (the whole and the masked case).
    {"shallow stem 3x3/2 C=3 O=24 wide row", 1, 11, 29, 3, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"shallow 3x3/1 C=2 O=20", 1, 7, 19, 2, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    // Grouped: one implicit GEMM per group over its channel slice.
    {"grouped G=2 width 16 (RegNetX)", 1, 9, 10, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
    {"grouped G=4 width 8 stride 2 (RegNetY)", 1, 11, 9, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4},
    {"grouped G=8 width 4 (ResNeXt)", 1, 7, 8, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},
    {"grouped G=3 C/G=5 O/G=7 dilation 2, batch 2", 2, 8, 9, 15, 21, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2,
     3},
    {"grouped G=2 O/G=20 (two panels a group)", 1, 6, 7, 12, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
    {"grouped 1x1 G=4", 1, 5, 6, 16, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 4},
    {"grouped G=4 C/G=1 (window under the shallow size)", 1, 6, 5, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1,
     1, 4},
    // Wide rows on the direct grouped path (several blocks a row; every block size:
    // GroupedRowsOfEveryWidthAgainstDoubleReference), with border blocks reading padding.
    {"grouped width 8 wide row", 1, 4, 34, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},
    {"grouped width 16 wide row, batch 2", 2, 3, 23, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
    {"grouped width 4 wide row, stride 2, dilation 2", 1, 5, 57, 16, 16, 3, 3, 2, 2, 2, 2, 2, 2, 2,
     2, 4},
    {"grouped width 4 in, 8 out, 5x5 p2", 1, 6, 27, 8, 16, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 2},
    // AVX-512's whole-groups-a-vector kernel (groups of 4 or 8 in and out): rows of 7 pixels
    // (ResNeXt's last stage), an odd count of groups of 8 (a masked last vector), 5x5 dilated.
    {"grouped width 4, 12 groups, 7-pixel rows", 1, 7, 7, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 12},
    {"grouped width 8, 5 groups, stride 2", 1, 9, 30, 40, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5},
    {"grouped width 4, 8 groups, 5x5 dilation 2", 1, 8, 41, 32, 32, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4, 8},
    // AVX-512's one-group-a-vector kernel (groups of 16 in and out): interior and border blocks
    // of 14 pixels, then 7, pairs and one; stride 2 with dilation; a 7x7 window (49 taps, more
    // than the narrower kernel's stack block); uneven padding.
    {"grouped width 16, 3 groups, 5x5/2 dilation 2, 27-pixel rows", 1, 6, 61, 48, 48, 5, 5, 2, 2,
     2, 2, 4, 4, 4, 4, 3},
    {"grouped width 16, 7x7 window, 45-pixel rows", 1, 9, 45, 32, 32, 7, 7, 1, 1, 1, 1, 3, 2, 3, 1,
     2},
    // Tap skipping at the default knobs (most of the window reads padding, 64 channels or
    // more): DeepLabV3's ASPP in small (the taps that land differ by band of rows and columns),
    // a dilation wider than the image (only the centre tap ever lands), outputs that reach no
    // tap at all (bias and residual only), grouped and strided.
    {"ASPP-like 3x3 dilation 6 on 8x8 C=64", 1, 8, 8, 64, 24, 3, 3, 1, 1, 6, 6, 6, 6, 6, 6},
    {"dilation 7 on 5x6: centre tap only", 1, 5, 6, 64, 20, 3, 3, 1, 1, 7, 7, 7, 7, 7, 7},
    {"1x1 p2 on 3x3 C=64 (border outputs reach no tap)", 2, 3, 3, 64, 17, 1, 1, 1, 1, 1, 1, 2, 2,
     2, 2},
    {"grouped G=2 C/G=64 dilation 4 stride 2 on 6x7", 1, 6, 7, 128, 32, 3, 3, 2, 2, 4, 4, 4, 4, 4,
     4, 2},
    // One input channel, many taps: the direct kernels where AVX2 / AVX-512 run (border blocks
    // of whole pixel blocks with per-tap checks), the implicit GEMM elsewhere.
    {"C=1 7x7 p3 O=20, 31-pixel rows", 1, 9, 31, 1, 20, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},
    {"C=1 9x5 dilation (1, 9) O=16, batch 2", 2, 11, 60, 1, 16, 9, 5, 1, 1, 1, 9, 4, 18, 4, 18},
    // A few channels into one panel (direct on AVX-512): DLA's 7x7/1 stem on RGB, its window
    // fixed; a 5x5 on 4 channels to 12 outputs.
    {"DLA stem 7x7/1 C=3 O=16", 1, 13, 40, 3, 16, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},
    {"5x5/2 C=4 O=12", 1, 11, 17, 4, 12, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},
};

/// Packs w [O, KH, KW, C/G] and bias [O] (null: none) as ConvProblem::packed says: group g's
/// rows (and bias) as their own packed weight at g · packed_weight_floats(O/G, K).
std::vector<float> pack_groups(const Case& cs, const float* w, const float* bias) {
  std::vector<float> packed(static_cast<size_t>(cs.packed_floats()));
  const int64_t og = cs.out_c / cs.groups;
  const int64_t group_floats = static_cast<int64_t>(packed_weight_floats(og, cs.k()));
  for (int64_t g = 0; g < cs.groups; ++g) {
    pack_fc_weight(w + g * og * cs.k(), bias != nullptr ? bias + g * og : nullptr, og, cs.k(),
                   packed.data() + g * group_floats);
  }
  return packed;
}

/// Whether the kGuardFloats after case cs's output in y still hold kGuard (the first one
/// written, named, when not).
::testing::AssertionResult guard_intact(const Case& cs, const std::vector<float>& y) {
  for (int64_t i = 0; i < kGuardFloats; ++i) {
    if (y[cs.y_floats() + i] != kGuard) {
      return ::testing::AssertionFailure() << "guard float " << i << " written";
    }
  }
  return ::testing::AssertionSuccess();
}

std::string describe(const Case& c, GemmIsa isa, bool bias, bool clamp, bool pool,
                     bool residual = false) {
  return std::string(c.name) + " [" + gemm_isa_name(isa) + (bias ? ", bias" : ", no bias") +
         (clamp ? ", clamp" : "") + (residual ? ", residual" : "") +
         (pool ? ", pool2" : ", no pool") + "]";
}

/// y (out_c of each pixel) against a double-precision NHWC convolution of x with w [O, KH, KW, C]
/// plus bias plus residual (y's layout; null: none), clamped; the tolerance is relative to
/// sum |x| |w| + |bias| + |residual| of each output.
int check_against_reference(const Case& cs, const float* x, const float* w, const float* bias,
                            float lo, float hi, const float* y, const std::string& what,
                            const float* residual = nullptr) {
  const int64_t oh_n = cs.out_h(), ow_n = cs.out_w();
  int bad = 0;
  for (int64_t n = 0; n < cs.batch; ++n) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        for (int64_t o = 0; o < cs.out_c; ++o) {
          double sum = bias != nullptr ? bias[o] : 0.0;
          double mag = bias != nullptr ? std::fabs(bias[o]) : 0.0;
          const int64_t cg = cs.in_c / cs.groups;
          const int64_t c_first = o / (cs.out_c / cs.groups) * cg;  // o's group's first channel
          for (int64_t i = 0; i < cs.kh; ++i) {
            const int64_t ih = oh * cs.sh - cs.pt + i * cs.dh;
            if (ih < 0 || ih >= cs.in_h) continue;
            for (int64_t j = 0; j < cs.kw; ++j) {
              const int64_t iw = ow * cs.sw - cs.pl + j * cs.dw;
              if (iw < 0 || iw >= cs.in_w) continue;
              for (int64_t c = 0; c < cg; ++c) {
                const double xv = x[((n * cs.in_h + ih) * cs.in_w + iw) * cs.in_c + c_first + c];
                const double wv = w[((o * cs.kh + i) * cs.kw + j) * cg + c];
                sum += xv * wv;
                mag += std::fabs(xv * wv);
              }
            }
          }
          const int64_t at = ((n * oh_n + oh) * ow_n + ow) * cs.out_c + o;
          if (residual != nullptr) {
            sum += residual[at];
            mag += std::fabs(residual[at]);
          }
          const double want = std::fmin(std::fmax(sum, lo), hi);
          const double got = y[at];
          const double tol = 1e-5 * mag + 1e-6;
          if (!(std::fabs(got - want) <= tol)) {
            if (bad < 5) {
              ADD_FAILURE() << what << ": y[" << n << ", " << oh << ", " << ow << ", " << o
                            << "] = " << got << ", want " << want << " (tol " << tol << ")";
            }
            ++bad;
          }
        }
      }
    }
  }
  return bad;
}

ConvProblem make_problem(const Case& cs, const float* x, const float* packed, float* y, float lo,
                         float hi, const float* residual = nullptr) {
  ConvProblem p;
  p.batch = cs.batch;
  p.in_h = cs.in_h;
  p.in_w = cs.in_w;
  p.in_c = cs.in_c;
  p.out_h = cs.out_h();
  p.out_w = cs.out_w();
  p.out_c = cs.out_c;
  p.kernel_h = cs.kh;
  p.kernel_w = cs.kw;
  p.stride_h = cs.sh;
  p.stride_w = cs.sw;
  p.dilation_h = cs.dh;
  p.dilation_w = cs.dw;
  p.pad_top = cs.pt;
  p.pad_left = cs.pl;
  p.groups = cs.groups;
  p.x = x;
  p.packed = packed;
  p.y = y;
  p.residual = residual;
  p.out_min = lo;
  p.out_max = hi;
  return p;
}

/// Runs every case with every ISA, bias/none × clamp/none × no pool/2 threads × residual/none
/// under the current blocking knobs; y is exactly sized with a guard region after it. With a
/// residual the clamp is a ReLU (ResNet's relu(conv + bias + identity)).
void run_all_cases(const std::string& blocks) {
  Pool two(2);
  uint32_t seed = 1;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : kCases) {
      ASSERT_GE(cs.out_h(), 1) << cs.name;
      ASSERT_GE(cs.out_w(), 1) << cs.name;
      const std::vector<float> x = random_floats(cs.x_floats(), seed);
      const std::vector<float> w = random_floats(cs.weight_floats(), seed + 1);
      const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
      const std::vector<float> residual = random_floats(cs.y_floats(), seed + 3);
      ++seed;
      for (int variant = 0; variant < 16; ++variant) {
        const bool with_bias = variant & 1, clamp = variant & 2, pooled = variant & 4,
                   with_residual = variant & 8;
        const float* res = with_residual ? residual.data() : nullptr;
        const float lo = clamp ? (with_residual ? 0.0f : -0.5f) : -kInf;
        const float hi = clamp && !with_residual ? 0.75f : kInf;
        const std::vector<float> packed =
            pack_groups(cs, w.data(), with_bias ? bias.data() : nullptr);
        std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
        const ConvProblem p = make_problem(cs, x.data(), packed.data(), y.data(), lo, hi, res);
        packed_conv_nhwc(p, pooled ? two.pool : nullptr);
        const std::string what =
            describe(cs, isa, with_bias, clamp, pooled, with_residual) + " " + blocks;
        check_against_reference(cs, x.data(), w.data(), with_bias ? bias.data() : nullptr, lo, hi,
                                y.data(), what, res);
        ASSERT_TRUE(guard_intact(cs, y)) << what;
      }
    }
  }
}

TEST_F(CpuConv, EveryIsaEveryShapeAgainstDoubleReference) { run_all_cases("(default blocks)"); }

TEST_F(CpuConv, GroupedRowsOfEveryWidthAgainstDoubleReference) {
  // The direct grouped path cuts each output row into blocks of as equal sizes as it can (AVX2:
  // at most 12 pixels of one vector for groups of 4 or 8, 6 of two for groups of 16): rows of 1
  // to 26 pixels give it every block size, alone and next to others, each with border blocks
  // reading padding; with a residual and a ReLU, on two threads.
  Pool two(2);
  uint32_t seed = 7;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (int64_t width : {4, 8, 16}) {
      for (int64_t out_w = 1; out_w <= 26; ++out_w) {
        const std::string name =
            "grouped width " + std::to_string(width) + ", " + std::to_string(out_w) + "-pixel rows";
        //           name          N  H  W      C          O          kh kw sh sw dh dw pt pl pb pr G
        const Case cs{name.c_str(), 1, 3, out_w, 2 * width, 2 * width, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
                      2};
        ASSERT_EQ(cs.out_w(), out_w);
        const std::vector<float> x = random_floats(cs.x_floats(), seed);
        const std::vector<float> w = random_floats(cs.weight_floats(), seed + 1);
        const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
        const std::vector<float> residual = random_floats(cs.y_floats(), seed + 3);
        ++seed;
        const std::vector<float> packed = pack_groups(cs, w.data(), bias.data());
        std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
        const ConvProblem p = make_problem(cs, x.data(), packed.data(), y.data(), 0.0f, kInf,
                                           residual.data());
        packed_conv_nhwc(p, two.pool);
        const std::string what = describe(cs, isa, true, true, true, true);
        check_against_reference(cs, x.data(), w.data(), bias.data(), 0.0f, kInf, y.data(), what,
                                residual.data());
        ASSERT_TRUE(guard_intact(cs, y)) << what;
      }
    }
  }
}

TEST_F(CpuConv, ActivationFollowsTheClampOnEveryOutput) {
  // Hardswish after the clamp, on the shallow (direct) and the implicit-GEMM paths: equal to the
  // same problem without the activation with hardswish applied afterwards (the reference
  // formula, x * min(max(x + 3, 0), 6) / 6, in float as the portable kernel computes it).
  Pool two(2);
  const Case cases[] = {kCases[0], kCases[2]};
  const Case shallow{"shallow stem 3x3/2 C=3 O=24", 1, 19, 22, 3, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : {cases[0], cases[1], shallow}) {
      const std::vector<float> x = random_floats(cs.x_floats(), 71, -4.0f, 4.0f);
      const std::vector<float> w = random_floats(cs.weight_floats(), 72);
      const std::vector<float> packed = pack_groups(cs, w.data(), nullptr);
      std::vector<float> plain(cs.y_floats()), act(cs.y_floats());
      ConvProblem p = make_problem(cs, x.data(), packed.data(), plain.data(), -2.5f, 5.0f);
      packed_conv_nhwc(p, two.pool);
      p.y = act.data();
      p.activation = GemmActivation::Hardswish;
      packed_conv_nhwc(p, two.pool);
      for (int64_t i = 0; i < cs.y_floats(); ++i) {
        const float v = plain[static_cast<size_t>(i)];
        const float r = v + 3.0f;
        const float want = v * (r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r)) / 6.0f;
        ASSERT_EQ(act[static_cast<size_t>(i)], want)
            << cs.name << " [" << gemm_isa_name(isa) << "] output " << i;
      }
    }
  }
}

TEST_F(CpuConv, TinyBlocksSplitRunsAndManyTasks) {
  // K blocks of 5 or 37 floats cut runs (kernel rows, taps) in the middle; a 1-byte B budget
  // gives one N tile per group; many tasks per thread.
  for (int64_t kc : {5, 37}) {
    gemm_detail::ConvBlocking& b = gemm_detail::conv_blocking();
    b.kc_max = kc;
    b.b_block_bytes = 1;
    b.tasks_per_thread = 64;
    b.min_task_fmas = 1;
    run_all_cases("(kc_max " + std::to_string(kc) + ", tiny B blocks, many tasks)");
  }
}

TEST_F(CpuConv, TapSkippingWheneverATapReadsPadding) {
  // Every case with padding skips the taps its tiles cannot reach, whatever its channel count:
  // the tile's window pieces start and end inside kernel rows; with K blocks of 37 floats
  // they are cut again, and a block may hold none of a tile's pieces (its partial sums wait in y,
  // the bias comes with the first piece and the residual with the last).
  for (int64_t kc : {int64_t{1} << 20, int64_t{37}}) {
    gemm_detail::ConvBlocking& b = gemm_detail::conv_blocking();
    b.kc_max = kc;
    b.skip_taps_max_live_percent = 100;
    b.skip_taps_min_floats = 1;
    if (kc < 64) {
      b.b_block_bytes = 1;
      b.tasks_per_thread = 64;
      b.min_task_fmas = 1;
    }
    run_all_cases("(tap skipping everywhere, kc_max " + std::to_string(kc) + ")");
  }
}

TEST_F(CpuConv, ResNetLayerShapesAtReducedSize) {
  // ResNet-18's channel counts on small images: K up to 4608 (several K blocks of the stack
  // buffer: the residual is added once, by the last), out_c up to 512 (several N groups); fused
  // ReLU, with and without a residual.
  const Case cases[] = {
      {"3x3 256->256", 1, 4, 4, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {"3x3/2 256->512", 1, 7, 7, 256, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {"3x3 512->512", 1, 3, 3, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {"1x1/2 256->512", 1, 7, 7, 256, 512, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
      {"stem 7x7/2 3->64", 1, 56, 56, 3, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},
  };
  Pool two(2);
  uint32_t seed = 100;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : cases) {
      const std::vector<float> x = random_floats(cs.x_floats(), seed);
      const std::vector<float> w = random_floats(cs.weight_floats(), seed + 1);
      const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
      ++seed;
      const std::vector<float> residual = random_floats(cs.y_floats(), seed + 3);
      const std::vector<float> packed = pack_groups(cs, w.data(), bias.data());
      for (const float* res : {static_cast<const float*>(nullptr), residual.data()}) {
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
          std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
          packed_conv_nhwc(make_problem(cs, x.data(), packed.data(), y.data(), 0.0f, kInf, res),
                           pool);
          const std::string what = describe(cs, isa, true, true, pool != nullptr, res != nullptr);
          check_against_reference(cs, x.data(), w.data(), bias.data(), 0.0f, kInf, y.data(), what,
                                  res);
          ASSERT_TRUE(guard_intact(cs, y)) << what;
        }
      }
    }
  }
}


TEST_F(CpuConv, ExactSizeXAndYEndingAtAGuardPage) {
  Pool two(2);
  uint32_t seed = 200;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case& cs : kCases) {
      const std::vector<float> x_src = random_floats(cs.x_floats(), seed);
      const std::vector<float> w = random_floats(cs.weight_floats(), seed + 1);
      ++seed;
      const std::vector<float> packed = pack_groups(cs, w.data(), nullptr);
      GuardedBuffer x(sizeof(float) * cs.x_floats());
      GuardedBuffer y(sizeof(float) * cs.y_floats());
      ASSERT_NE(x.data(), nullptr);
      ASSERT_NE(y.data(), nullptr);
      std::memcpy(x.data(), x_src.data(), sizeof(float) * x_src.size());
      for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
        // An over-read of x or an over-write of y dies with SIGSEGV here.
        packed_conv_nhwc(make_problem(cs, x.data(), packed.data(), y.data(), -kInf, kInf), pool);
        check_against_reference(cs, x.data(), w.data(), nullptr, -kInf, kInf, y.data(),
                                describe(cs, isa, false, false, pool != nullptr) + " guard page");
      }
    }
  }
}

TEST_F(CpuConv, ReadOnlyResidualEndingAtAGuardPage) {
  // The residual exactly sized, read-only, ending at a PROT_NONE page (out_c 5, 9, 17, 33 make
  // the last row's last panel ragged): an over-read or a write dies with SIGSEGV. Default and
  // tiny K blocks (only the last block reads the residual).
  Pool two(2);
  uint32_t seed = 250;
  for (int64_t kc : {int64_t{1} << 20, int64_t{37}}) {
    gemm_detail::conv_blocking().kc_max = kc;
    for (GemmIsa isa : supported_isas()) {
      ASSERT_TRUE(packed_gemm_force_isa(isa));
      for (const Case& cs : kCases) {
        const std::vector<float> x = random_floats(cs.x_floats(), seed);
        const std::vector<float> w = random_floats(cs.weight_floats(), seed + 1);
        const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
        const std::vector<float> res_src = random_floats(cs.y_floats(), seed + 3);
        ++seed;
        const std::vector<float> packed = pack_groups(cs, w.data(), bias.data());
        GuardedBuffer residual(sizeof(float) * cs.y_floats());
        ASSERT_NE(residual.data(), nullptr);
        std::memcpy(residual.data(), res_src.data(), sizeof(float) * res_src.size());
        ASSERT_TRUE(residual.make_read_only());
        GuardedBuffer y(sizeof(float) * cs.y_floats());
        ASSERT_NE(y.data(), nullptr);
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
          packed_conv_nhwc(
              make_problem(cs, x.data(), packed.data(), y.data(), 0.0f, kInf, residual.data()),
              pool);
          check_against_reference(cs, x.data(), w.data(), bias.data(), 0.0f, kInf, y.data(),
                                  describe(cs, isa, true, true, pool != nullptr, true) +
                                      " residual at a guard page, kc_max " + std::to_string(kc),
                                  residual.data());
        }
      }
    }
  }
}

TEST_F(CpuConv, NoHeapAllocation) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "sanitizers own malloc";
  const Case cs{"3x3/2 p1 batch 2", 2, 15, 13, 24, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  const std::vector<float> x = random_floats(cs.x_floats(), 300);
  const std::vector<float> w = random_floats(cs.weight_floats(), 301);
  const std::vector<float> packed = pack_groups(cs, w.data(), nullptr);
  const std::vector<float> residual = random_floats(cs.y_floats(), 302);
  std::vector<float> y(cs.y_floats());
  Pool two(2);
  packed_conv_nhwc(make_problem(cs, x.data(), packed.data(), y.data(), -kInf, kInf), two.pool);
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const float* res : {static_cast<const float*>(nullptr), residual.data()}) {
      for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
        const ConvProblem p = make_problem(cs, x.data(), packed.data(), y.data(), 0.0f, kInf, res);
        long allocations = 0;
        {
          testing_support::ArmedCounter counter;
          packed_conv_nhwc(p, pool);
          allocations = counter.count();
        }
        EXPECT_EQ(allocations, 0) << gemm_isa_name(isa) << (pool ? " pool2" : " no pool")
                                  << (res ? " residual" : "");
      }
    }
  }
}

TEST_F(CpuConv, EmptyProblemsTouchNothing) {
  std::vector<float> y(64, kGuard);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> packed(packed_weight_floats(4, 4), 1.0f);
  const Case cs{"1x1", 1, 2, 2, 1, 4, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0};
  for (int which = 0; which < 3; ++which) {
    ConvProblem p = make_problem(cs, x.data(), packed.data(), y.data(), -kInf, kInf);
    if (which == 0) p.batch = 0;
    if (which == 1) p.out_c = 0;
    if (which == 2) p.out_w = 0;
    packed_conv_nhwc(p, nullptr);
    for (float v : y) ASSERT_EQ(v, kGuard) << which;
  }
}

}  // namespace
}  // namespace tern::cpu
