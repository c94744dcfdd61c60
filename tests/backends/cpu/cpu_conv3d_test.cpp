// tern's 3-D convolution over NDHWC tensors (packed_conv_nhwc with the depth fields,
// backends/cpu/kernels/packed_conv.h): every ISA this CPU runs, forced in turn, against a naive
// double-precision NDHWC convolution written here from the definition. Shapes: R3D's stem
// (3x7x7, stride 1x2x2, padding 1x3x3, C = 3), its 3x3x3 blocks and the 1x1x1 stride-2
// downsample, R(2+1)D's factored 1x3x3 (spatial, the frame-by-frame 2-D path) and 3x1x1
// (temporal) convs, depth stride and dilation, clips shorter than the window (mostly padding),
// batch 2, grouped (X3D-style channel groups), out_c not a multiple of 16. Variants: bias or
// none, clamp or none, residual (with a ReLU: relu(conv + bias + identity)) or none, no pool and
// a 2-thread pool, default and tiny cache blocks (K split mid-run and mid-frame), tap skipping
// (a dilated window over a short clip; forced on for every padded case). x, the residual
// and y end at a PROT_NONE page (x and the residual read-only): neither over-read nor over-written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

using CpuConv3d =
    kernel_test::RestoresIsaAndKnobs<gemm_detail::ConvBlocking, &gemm_detail::conv_blocking>;

/// One 3-D convolution; padding is symmetric per dim (PyTorch's).
struct Case3d {
  const char* name;
  int64_t batch, in_d, in_h, in_w, in_c, out_c;
  int64_t kd, kh, kw;
  int64_t sd, sh, sw;
  int64_t pd, ph, pw;
  int64_t dd = 1, dh = 1, dw = 1;
  int64_t groups = 1;
  static int64_t out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  }
  int64_t out_d() const { return out(in_d, kd, sd, pd, dd); }
  int64_t out_h() const { return out(in_h, kh, sh, ph, dh); }
  int64_t out_w() const { return out(in_w, kw, sw, pw, dw); }
  int64_t k() const { return kd * kh * kw * (in_c / groups); }  // one group's K
  int64_t x_floats() const { return batch * in_d * in_h * in_w * in_c; }
  int64_t y_floats() const { return batch * out_d() * out_h() * out_w() * out_c; }
};

const Case3d kCases[] = {
    // name                         N  D   H   W   C   O  kd kh kw sd sh sw pd ph pw
    {"R3D stem 3x7x7 /1x2x2 C=3", 1, 5, 14, 13, 3, 24, 3, 7, 7, 1, 2, 2, 1, 3, 3},
    {"3x3x3 p1 (R3D block)", 1, 4, 6, 7, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1},
    {"3x3x3 /2 p1 (stage entry)", 1, 5, 7, 6, 16, 40, 3, 3, 3, 2, 2, 2, 1, 1, 1},
    {"1x1x1 /2 downsample", 1, 4, 6, 6, 24, 48, 1, 1, 1, 2, 2, 2, 0, 0, 0},
    {"1x3x3 p(0,1,1) (R(2+1)D spatial)", 1, 3, 8, 9, 20, 36, 1, 3, 3, 1, 1, 1, 0, 1, 1},
    {"1x3x3 /(1,2,2) (spatial, stride)", 2, 3, 9, 8, 12, 20, 1, 3, 3, 1, 2, 2, 0, 1, 1},
    {"3x1x1 p(1,0,0) (R(2+1)D temporal)", 1, 6, 5, 4, 36, 24, 3, 1, 1, 1, 1, 1, 1, 0, 0},
    {"3x1x1 /(2,1,1) temporal stride", 1, 7, 4, 5, 18, 17, 3, 1, 1, 2, 1, 1, 1, 0, 0},
    {"1x1x1 depth-1 clip", 1, 1, 5, 5, 8, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0},
    {"3x3x3 on a 2-frame clip (mostly padding)", 2, 2, 3, 3, 5, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1},
    {"depth dilation 2", 1, 7, 5, 5, 6, 10, 3, 3, 3, 1, 1, 1, 2, 1, 1, 2, 1, 1},
    {"dilation 2 everywhere, stride 3", 1, 9, 9, 8, 4, 9, 2, 2, 2, 3, 3, 3, 1, 1, 1, 2, 2, 2},
    {"deep K 3x3x3x200", 1, 3, 4, 4, 200, 33, 3, 3, 3, 1, 1, 1, 1, 1, 1},
    {"shallow window 1x2x2 C=3 on depth 2 (no direct path)", 1, 4, 6, 6, 3, 16, 2, 2, 2, 2, 2, 2,
     0, 0, 0},
    {"grouped G=4 3x3x3", 1, 4, 5, 6, 16, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4},
    {"grouped G=2 1x3x3 (frame by frame)", 1, 3, 6, 5, 32, 32, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1,
     2},
    // Tap skipping at the default knobs: dilation 3 on a 3x4x4 clip (the frames, rows and
    // columns of the window each tile reaches).
    {"3x3x3 dilation 3 on 3x4x4 C=64 (tap skipping)", 1, 3, 4, 4, 64, 16, 3, 3, 3, 1, 1, 1, 3, 3, 3,
     3, 3, 3},
    // Windows one column wide with row stride 1 (LambdaNet's (r, r, 1) position convs over
    // [B, 1, H, W, V]): each frame's rows folded into one row of columns, a 2-D window dilated
    // by the row length.
    {"5x5x1 p(2,2,0) C=1 O=16 (lambda position conv)", 2, 7, 6, 20, 1, 16, 5, 5, 1, 1, 1, 1, 2, 2,
     0},
    {"7x3x1 C=1 O=20, depth stride 2, row dilation 2", 1, 9, 8, 24, 1, 20, 7, 3, 1, 2, 1, 1, 3, 2,
     0, 1, 2, 1},
    {"3x3x1 C=4 O=24 (folded, implicit GEMM)", 1, 5, 5, 6, 4, 24, 3, 3, 1, 1, 1, 1, 1, 1, 0},
    {"3x3x1 row stride 2 (not folded)", 1, 5, 7, 6, 1, 16, 3, 3, 1, 1, 2, 1, 1, 1, 0},
};

/// Packs w [O, KD, KH, KW, C/G] and bias as ConvProblem::packed says (group by group).
std::vector<float> pack_groups(const Case3d& cs, const float* w, const float* bias) {
  const int64_t og = cs.out_c / cs.groups;
  const int64_t group_floats = static_cast<int64_t>(packed_weight_floats(og, cs.k()));
  std::vector<float> packed(static_cast<size_t>(cs.groups * group_floats));
  for (int64_t g = 0; g < cs.groups; ++g) {
    pack_fc_weight(w + g * og * cs.k(), bias != nullptr ? bias + g * og : nullptr, og, cs.k(),
                   packed.data() + g * group_floats);
  }
  return packed;
}

/// y against the definition in double: y[n, od, oh, ow, o] = bias[o] + residual + sum over the
/// group's channels and the window's taps inside x of x[n, id, ih, iw, c] · w[o, i, j, l, c],
/// clamped; tolerance relative to the sum of the magnitudes.
int check_against_reference(const Case3d& cs, const float* x, const float* w, const float* bias,
                            const float* residual, float lo, float hi, const float* y,
                            const std::string& what) {
  const int64_t od_n = cs.out_d(), oh_n = cs.out_h(), ow_n = cs.out_w();
  const int64_t cg = cs.in_c / cs.groups, og = cs.out_c / cs.groups;
  int bad = 0;
  int64_t at = 0;
  for (int64_t n = 0; n < cs.batch; ++n) {
    for (int64_t od = 0; od < od_n; ++od) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          for (int64_t o = 0; o < cs.out_c; ++o, ++at) {
            double sum = bias != nullptr ? bias[o] : 0.0;
            double mag = std::fabs(sum);
            const int64_t c0 = o / og * cg;
            for (int64_t i = 0; i < cs.kd; ++i) {
              const int64_t id = od * cs.sd - cs.pd + i * cs.dd;
              if (id < 0 || id >= cs.in_d) continue;
              for (int64_t j = 0; j < cs.kh; ++j) {
                const int64_t ih = oh * cs.sh - cs.ph + j * cs.dh;
                if (ih < 0 || ih >= cs.in_h) continue;
                for (int64_t l = 0; l < cs.kw; ++l) {
                  const int64_t iw = ow * cs.sw - cs.pw + l * cs.dw;
                  if (iw < 0 || iw >= cs.in_w) continue;
                  for (int64_t c = 0; c < cg; ++c) {
                    const double xv =
                        x[(((n * cs.in_d + id) * cs.in_h + ih) * cs.in_w + iw) * cs.in_c + c0 + c];
                    const double wv = w[(((o * cs.kd + i) * cs.kh + j) * cs.kw + l) * cg + c];
                    sum += xv * wv;
                    mag += std::fabs(xv * wv);
                  }
                }
              }
            }
            if (residual != nullptr) {
              sum += residual[at];
              mag += std::fabs(residual[at]);
            }
            const double want = std::fmin(std::fmax(sum, lo), hi);
            const double got = y[at];
            const double tol = 1e-5 * mag + 1e-6;
            if (!(std::fabs(got - want) <= tol)) {
              if (bad < 5) {
                ADD_FAILURE() << what << ": y[" << n << ", " << od << ", " << oh << ", " << ow
                              << ", " << o << "] = " << got << ", want " << want;
              }
              ++bad;
            }
          }
        }
      }
    }
  }
  return bad;
}

ConvProblem make_problem(const Case3d& cs, const float* x, const float* packed, float* y,
                         const float* residual, float lo, float hi) {
  ConvProblem p;
  p.batch = cs.batch;
  p.in_d = cs.in_d;
  p.in_h = cs.in_h;
  p.in_w = cs.in_w;
  p.in_c = cs.in_c;
  p.out_d = cs.out_d();
  p.out_h = cs.out_h();
  p.out_w = cs.out_w();
  p.out_c = cs.out_c;
  p.kernel_d = cs.kd;
  p.kernel_h = cs.kh;
  p.kernel_w = cs.kw;
  p.stride_d = cs.sd;
  p.stride_h = cs.sh;
  p.stride_w = cs.sw;
  p.dilation_d = cs.dd;
  p.dilation_h = cs.dh;
  p.dilation_w = cs.dw;
  p.pad_front = cs.pd;
  p.pad_top = cs.ph;
  p.pad_left = cs.pw;
  p.groups = cs.groups;
  p.x = x;
  p.packed = packed;
  p.y = y;
  p.residual = residual;
  p.out_min = lo;
  p.out_max = hi;
  return p;
}

/// Every case, every ISA, bias/none × clamp/none × pool/none × residual/none; x, the residual
/// and y each end at a guard page.
void run_all_cases(const std::string& blocks) {
  Pool two(2);
  uint32_t seed = 11;
  for (GemmIsa isa : supported_isas()) {
    ASSERT_TRUE(packed_gemm_force_isa(isa));
    for (const Case3d& cs : kCases) {
      ASSERT_GE(cs.out_d(), 1) << cs.name;
      ASSERT_GE(cs.out_h(), 1) << cs.name;
      ASSERT_GE(cs.out_w(), 1) << cs.name;
      const size_t xn = static_cast<size_t>(cs.x_floats()), yn = static_cast<size_t>(cs.y_floats());
      GuardedBuffer x(xn * 4), residual(yn * 4), y(yn * 4);
      ASSERT_NE(x.data(), nullptr);
      ASSERT_NE(residual.data(), nullptr);
      ASSERT_NE(y.data(), nullptr);
      const std::vector<float> xs = random_floats(cs.x_floats(), seed);
      const std::vector<float> rs = random_floats(cs.y_floats(), seed + 3);
      std::memcpy(x.data(), xs.data(), xn * 4);
      std::memcpy(residual.data(), rs.data(), yn * 4);
      ASSERT_TRUE(x.make_read_only());
      ASSERT_TRUE(residual.make_read_only());
      const std::vector<float> w = random_floats(cs.out_c * cs.k(), seed + 1);
      const std::vector<float> bias = random_floats(cs.out_c, seed + 2);
      ++seed;
      for (int variant = 0; variant < 16; ++variant) {
        const bool with_bias = variant & 1, clamp = variant & 2, pooled = variant & 4,
                   with_residual = variant & 8;
        const float* res = with_residual ? residual.data() : nullptr;
        const float lo = clamp ? (with_residual ? 0.0f : -0.5f) : -kInf;
        const float hi = clamp && !with_residual ? 0.75f : kInf;
        const std::vector<float> packed =
            pack_groups(cs, w.data(), with_bias ? bias.data() : nullptr);
        std::fill(y.data(), y.data() + yn, std::numeric_limits<float>::quiet_NaN());
        packed_conv_nhwc(make_problem(cs, x.data(), packed.data(), y.data(), res, lo, hi),
                         pooled ? two.pool : nullptr);
        const std::string what = std::string(cs.name) + " [" + gemm_isa_name(isa) +
                                 (with_bias ? ", bias" : "") + (clamp ? ", clamp" : "") +
                                 (with_residual ? ", residual" : "") +
                                 (pooled ? ", pool2" : "") + "] " + blocks;
        check_against_reference(cs, x.data(), w.data(), with_bias ? bias.data() : nullptr, res,
                                lo, hi, y.data(), what);
      }
    }
  }
}

TEST_F(CpuConv3d, EveryIsaEveryShapeAgainstDoubleReference) { run_all_cases("(default blocks)"); }

TEST_F(CpuConv3d, TinyBlocksCutRunsAndFrames) {
  // K blocks of 5 or 37 floats end inside kernel rows and between kernel frames (a block's
  // first run starts at any (kd, kh, kw) of the window); one N tile per group; many tasks.
  for (int64_t kc : {5, 37}) {
    gemm_detail::ConvBlocking& b = gemm_detail::conv_blocking();
    b.kc_max = kc;
    b.b_block_bytes = 1;
    b.tasks_per_thread = 64;
    b.min_task_fmas = 1;
    run_all_cases("(kc_max " + std::to_string(kc) + ", tiny B blocks, many tasks)");
  }
}

TEST_F(CpuConv3d, TapSkippingWheneverATapReadsPadding) {
  // Every padded case skips the frames, rows and columns of the window its tiles cannot reach;
  // K blocks of 37 floats cut the pieces again.
  for (int64_t kc : {int64_t{1} << 20, int64_t{37}}) {
    gemm_detail::ConvBlocking& b = gemm_detail::conv_blocking();
    b.kc_max = kc;
    b.skip_taps_max_live_percent = 100;
    b.skip_taps_min_floats = 1;
    run_all_cases("(tap skipping everywhere, kc_max " + std::to_string(kc) + ")");
  }
}

TEST_F(CpuConv3d, DepthOneEqualsTheTwoDimensionalConvolution) {
  // A clip of one frame and a 1-deep window is the 2-D convolution: bit for bit the same as the
  // problem with the depth fields left at their defaults (the 2-D path's own test checks that
  // against a reference).
  const Case3d cs{"1x3x3 on 1 frame", 1, 1, 9, 10, 24, 40, 1, 3, 3, 1, 2, 2, 0, 1, 1};
  const std::vector<float> x = random_floats(cs.x_floats(), 5);
  const std::vector<float> w = random_floats(cs.out_c * cs.k(), 6);
  const std::vector<float> packed = pack_groups(cs, w.data(), nullptr);
  std::vector<float> a(static_cast<size_t>(cs.y_floats())), b(a.size());
  ConvProblem p = make_problem(cs, x.data(), packed.data(), a.data(), nullptr, -kInf, kInf);
  packed_conv_nhwc(p, nullptr);
  p.in_d = p.out_d = p.kernel_d = 1;
  p.pad_front = 0;
  p.y = b.data();
  packed_conv_nhwc(p, nullptr);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
  EXPECT_EQ(0, check_against_reference(cs, x.data(), w.data(), nullptr, nullptr, -kInf, kInf,
                                       a.data(), "depth one"));
}

TEST_F(CpuConv3d, NeverAllocates) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "sanitizers own malloc";
  const Case3d& cs = kCases[1];
  Pool two(2);
  const std::vector<float> x = random_floats(cs.x_floats(), 9);
  const std::vector<float> w = random_floats(cs.out_c * cs.k(), 10);
  const std::vector<float> packed = pack_groups(cs, w.data(), nullptr);
  std::vector<float> y(static_cast<size_t>(cs.y_floats()));
  const ConvProblem p = make_problem(cs, x.data(), packed.data(), y.data(), nullptr, -kInf, kInf);
  packed_conv_nhwc(p, two.pool);  // warm the pool
  long allocations = 0;
  {
    testing_support::ArmedCounter counter;
    packed_conv_nhwc(p, two.pool);
    packed_conv_nhwc(p, nullptr);
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0);
}

}  // namespace
}  // namespace tern::cpu
