// tern's fused inverted bottleneck (backends/cpu/kernels/bottleneck.h): every ISA this CPU runs,
// forced in turn, against a naive double-precision reference computed from PyTorch-layout
// weights (Linear [out, in] expand/project, depthwise [exp_c, 1, KH, KW]) over a spread of
// shapes: MobileNetV2 blocks (stride 2; stride 1 with x as the residual; 56x56, several bands),
// MobileNetV3 5x5 kernels with pad 2, channels not multiples of 16, no expand, no project (their
// epilogues then ignored), neither, odd and 1x1 images, batch 2 and 3 (tasks spanning images),
// pad 0, TF-SAME pads, pads wider than the window (outputs over padding only), a 3x5 kernel with
// stride 2x1, the tallest (16x1) kernel; relu6, hardswish, clamp + hardswish and clamp epilogues
// on each stage; no pool, 2 and 3 threads; the default band knob, one output row per band (rows
// reused between bands) and a few rows per band. y and the scratch start as NaN (unwritten
// outputs and reads of unwritten scratch show) and are followed by guard floats that must stay
// untouched; x, the residual and the weights (read-only), y and the scratch, exact-size buffers
// ending at a PROT_NONE page, are neither over-read nor over-written; no heap allocation;
// concurrent calls with distinct y and scratch; empty problems; a NaN in x reaches exactly the
// outputs over it. Squeeze-excitation (EfficientNet's and MobileNetV3's) between the depthwise
// stage and the project: SiLU and relu6 squeezes, sigmoid and clamp [0, 1] gates, the gate put
// into the project's weight rows or (more pixels than weights) into d, no expand, residuals,
// batch 2 (a gate per image), several bands and layer mode. depthwise_row on its own: null (padding) rows, strides 1 and 2, 3x3, 5x5 and 7x7,
// pads up to the kernel's width, channels 1 to 81, exactly out_w x channels floats written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels/bottleneck.h"
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
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kGuard = -12345.678f;  // what the guard regions after y and the scratch hold
constexpr int64_t kGuardFloats = 67;

/// Restores dispatch's choice and the band knob after each test.
using CpuBottleneck = kernel_test::RestoresIsaAndKnobs<int64_t, &bottleneck_band_floats>;

// Case flags. kResidualX: the residual is x itself (needs y's shape == x's); kResidualOwn: a
// residual buffer of its own.
enum : unsigned {
  kExpand = 1,
  kProject = 2,
  kResidualX = 4,
  kResidualOwn = 8,
  kNoDwBias = 16,
  kSe = 32,  ///< squeeze-excitation of max(1, E / 4) channels (epilogues: Case::se)
  kAffine = 64,  ///< without a project: d · scale + shift per channel before the residual
};
constexpr unsigned kBoth = kExpand | kProject;

/// Epilogue codes: n none, r relu6, h hardswish, H clamp [-2, 2] then hardswish, c clamp,
/// S SiLU, g sigmoid, 1 clamp [0, 1].
StageEpilogue epilogue(char code) {
  if (code == 'r') return {0.0f, 6.0f, GemmActivation::None};
  if (code == 'h') return {-kInf, kInf, GemmActivation::Hardswish};
  if (code == 'H') return {-2.0f, 2.0f, GemmActivation::Hardswish};
  if (code == 'c') return {-0.5f, 0.75f, GemmActivation::None};
  if (code == 'S') return {-kInf, kInf, GemmActivation::Silu};
  if (code == 'g') return {-kInf, kInf, GemmActivation::Sigmoid};
  if (code == '1') return {0.0f, 1.0f, GemmActivation::None};
  return {};
}

double apply(const StageEpilogue& e, double v) {
  v = std::min(std::max(v, static_cast<double>(e.lo)), static_cast<double>(e.hi));
  if (e.act == GemmActivation::Hardswish) v = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
  if (e.act == GemmActivation::Silu) v = v / (1.0 + std::exp(-v));
  if (e.act == GemmActivation::Sigmoid) v = 1.0 / (1.0 + std::exp(-v));
  return v;
}

struct Case {
  int64_t batch, in_h, in_w, in_c, exp_c, out_c;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr;  // kernel, stride, pads (bottom/right imply out_h/w)
  unsigned flags;
  const char* epi;  // expand, depthwise, project (only its clamp) epilogue codes
  const char* se = "ng";  // with kSe: the squeeze's and the gate's epilogue codes
  bool has(unsigned f) const { return (flags & f) != 0; }
  int64_t se_c() const { return std::max<int64_t>(1, exp_c / 4); }
  int64_t out_h() const { return (in_h + pt + pb - kh) / sh + 1; }
  int64_t out_w() const { return (in_w + pl + pr - kw) / sw + 1; }
  int64_t x_floats() const { return batch * in_h * in_w * in_c; }
  int64_t y_floats() const { return batch * out_h() * out_w() * out_c; }
};

// clang-format off
const Case kCases[] = {
    // N  H   W   C   E    O  kh kw sh sw pt pl pb pr flags                     epi
    {1, 12, 12, 16,  96, 24, 3, 3, 2, 2, 1, 1, 1, 1, kBoth,                    "rrn"},  // V2 s2
    {1, 10, 10, 24, 144, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kResidualX,       "rrn"},  // V2 s1
    {1, 56, 56, 24, 144, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kResidualX,       "rrn"},  // bands
    {1,  9,  9, 24,  72, 40, 5, 5, 1, 1, 2, 2, 2, 2, kBoth,                    "hhn"},  // V3 5x5
    {1, 11, 11, 16,  72, 24, 5, 5, 2, 2, 2, 2, 2, 2, kBoth,                    "HHc"},  // V3 s2
    {1,  7,  7,  5,  40,  7, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kResidualOwn,     "hrc"},
    {1,  5,  9, 17,  88,  7, 3, 3, 2, 2, 1, 1, 1, 1, kBoth,                    "rhc"},
    {1,  7,  7,  3,  17,  7, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kNoDwBias,        "Hrr"},
    {1,  6,  6, 16,  72,  3, 3, 3, 2, 2, 1, 1, 1, 1, kBoth,                    "rrn"},
    {1,  8,  8, 32,  32, 16, 3, 3, 1, 1, 1, 1, 1, 1, kProject,                 "crn"},  // no expand
    {1,  7,  7,  3,   3,  7, 3, 3, 1, 1, 1, 1, 1, 1, kProject | kResidualOwn,  "rhc"},
    {1,  7,  7, 16,  64, 64, 3, 3, 2, 2, 1, 1, 1, 1, kExpand,                  "rrc"},  // no project
    {1,  6,  6, 24,  24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 0,                        "rhc"},  // neither
    {1,  5,  9, 17,  17, 17, 5, 5, 1, 1, 2, 2, 2, 2, kNoDwBias,                "nHn"},
    {1,  1,  1, 16,  96, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth,                    "rrn"},  // 1x1
    {2,  1,  1,  3,  72,  5, 5, 5, 2, 2, 2, 2, 2, 2, kBoth,                    "hhc"},
    {2,  6,  5,  8,  48,  8, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kResidualX,       "rrn"},  // batch 2
    {2,  9,  7,  5,  40,  7, 3, 3, 2, 2, 0, 0, 0, 0, kBoth,                    "rrc"},
    {3, 14,  6,  8,  32,  8, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kResidualX,       "rhn"},  // tasks
    {2,  7,  5, 12,  12, 20, 3, 3, 1, 1, 1, 1, 1, 1, kProject,                 "nrc"},  // span images
    {1,  7,  6,  8,  24, 16, 3, 3, 1, 1, 0, 0, 0, 0, kBoth,                    "hhn"},  // pad 0
    {1, 12, 12, 16,  96, 24, 3, 3, 2, 2, 0, 0, 1, 1, kBoth,                    "rrn"},  // TF SAME
    {1,  3,  4,  8,  24,  8, 3, 3, 1, 1, 2, 2, 2, 2, kBoth,                    "rrc"},  // pads 2
    {1,  2,  3,  8,  24,  8, 3, 3, 1, 1, 3, 3, 3, 3, kBoth | kNoDwBias,        "rHc"},  // all pad
    {1,  9,  7,  8,  40,  8, 3, 5, 2, 1, 1, 2, 1, 2, kBoth | kNoDwBias,        "rhc"},  // 3x5
    {1, 18,  3,  4,  16,  4, 16, 1, 1, 1, 8, 0, 7, 0, kBoth | kResidualX,      "hrn"},  // 16x1
    // No project, with a residual added after the depthwise epilogue: StarNet's g then dw 7x7
    // (bands), the same in layer mode (batch 2), a lone depthwise conv with x as the residual.
    {1, 56, 56, 96,  24, 24, 7, 7, 1, 1, 3, 3, 3, 3, kExpand | kResidualOwn,   "nnn"},
    {2,  7,  7, 96,  24, 24, 7, 7, 1, 1, 3, 3, 3, 3, kExpand | kResidualOwn,   "crn"},
    {1,  9, 11, 20,  20, 20, 7, 7, 1, 1, 3, 3, 3, 3, kResidualX,               "nhn"},
    // A batch norm after the depthwise epilogue (blob version 28): ConvMixer's dw 9x9 → ReLU
    // → affine → + x (bands), without the residual, after an expand, in layer mode (batch 2).
    {1, 40, 40, 24,  24, 24, 9, 9, 1, 1, 4, 4, 4, 4, kResidualX | kAffine,     "nrn"},
    {1,  9, 11, 20,  20, 20, 7, 7, 1, 1, 3, 3, 3, 3, kAffine,                  "nhn"},
    {2,  7,  7, 16,  40, 40, 3, 3, 2, 2, 1, 1, 1, 1, kExpand | kResidualOwn | kAffine, "rrn"},
    // Squeeze-excitation: EfficientNet's stride-2 block (the gate into the weight rows), its
    // first block (no expand), a 5x5 one with more weights than pixels (the gate into d),
    // MobileNetV3's (relu6 squeeze, clamp [0, 1] gate), batch 2 (layer mode on 3 threads),
    // bands with the residual, a 1x1 image, few channels (one squeeze channel).
    {1, 12, 12, 16,  96, 24, 3, 3, 2, 2, 1, 1, 1, 1, kBoth | kSe,              "SSn", "Sg"},
    {1, 14, 14, 32,  32, 16, 3, 3, 1, 1, 1, 1, 1, 1, kProject | kSe,           "nSn", "Sg"},
    {1,  3,  3, 24, 144, 40, 5, 5, 1, 1, 2, 2, 2, 2, kBoth | kSe | kResidualOwn, "SSc", "Sg"},
    {1,  9,  9, 24,  72, 40, 5, 5, 1, 1, 2, 2, 2, 2, kBoth | kSe,              "hhn", "r1"},
    {2,  9,  7, 16,  64, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kSe | kResidualOwn, "SSn", "Sg"},
    {1, 28, 28, 24, 144, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kSe | kResidualX, "SSn", "Sg"},
    {1,  1,  1, 16,  96, 24, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kSe,              "SSn", "ng"},
    {1,  5,  6,  3,   3,  5, 3, 3, 1, 1, 1, 1, 1, 1, kBoth | kSe | kNoDwBias,  "rSc", "h1"},
};
// clang-format on

std::string num(int64_t v) { return std::to_string(v); }

std::string name(const Case& cs) {
  return "N" + num(cs.batch) + " " + num(cs.in_h) + "x" + num(cs.in_w) + " " + num(cs.in_c) +
         (cs.has(kExpand) ? "->" + num(cs.exp_c) : "") +
         (cs.has(kProject) ? "->" + num(cs.out_c) : "") + " k" + num(cs.kh) + "x" + num(cs.kw) +
         " s" + num(cs.sh) + "x" + num(cs.sw) + " pads " + num(cs.pt) + "/" + num(cs.pl) + "/" +
         num(cs.pb) + "/" + num(cs.pr) + " epi " + cs.epi +
         (cs.has(kSe) ? " se " + num(cs.se_c()) + " " + cs.se : "") +
         (cs.has(kResidualX) ? " +x" : "") +
         (cs.has(kResidualOwn) ? " +residual" : "") + (cs.has(kNoDwBias) ? " no dw bias" : "") +
         (cs.has(kAffine) ? " affine" : "");
}

/// One case's inputs in the kernel's layouts, and y's reference.
struct Data {
  std::vector<float> x, residual, expand_packed, dw_weight, dw_bias, project_packed;
  std::vector<float> squeeze_packed, excite_packed;  ///< with kSe
  std::vector<float> affine;                         ///< with kAffine: [2, E]
  std::vector<double> ref;
};

struct Inputs {
  const float *x, *expand, *dw_w, *dw_b, *project, *residual;
  const float* squeeze = nullptr;
  const float* excite = nullptr;
  const float* affine = nullptr;
};

const float* ptr(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

Inputs inputs_of(const Case& cs, const Data& d) {
  return {d.x.data(),
          ptr(d.expand_packed),
          d.dw_weight.data(),
          ptr(d.dw_bias),
          ptr(d.project_packed),
          cs.has(kResidualX) ? d.x.data() : ptr(d.residual),
          ptr(d.squeeze_packed),
          ptr(d.excite_packed),
          ptr(d.affine)};
}

/// The squeeze-excitation's PyTorch-layout weights: squeeze [S, E] and bias [S], excitation
/// [E, S] and bias [E].
struct SeWeights {
  std::vector<float> ws, bs, wg, bg;
};

/// y = project(se(epi_d(depthwise(epi_e(expand(x)))))) in double, from PyTorch-layout weights:
/// we [E, C], wd [E, 1, kh, kw], wp [O, E]; null bd / residual: none; se only with kSe.
std::vector<double> reference(const Case& cs, const float* x, const float* we, const float* be,
                              const float* wd, const float* bd, const float* wp, const float* bp,
                              const float* residual, const SeWeights& se,
                              const float* affine = nullptr) {
  const int64_t H = cs.in_h, W = cs.in_w, C = cs.in_c, E = cs.exp_c, O = cs.out_c;
  const int64_t OH = cs.out_h(), OW = cs.out_w();
  const StageEpilogue ee = epilogue(cs.epi[0]), ed = epilogue(cs.epi[1]), ep = epilogue(cs.epi[2]);
  std::vector<double> y(static_cast<size_t>(cs.y_floats())), e(H * W * E), d(OH * OW * E);
  for (int64_t n = 0; n < cs.batch; ++n) {
    const float* xn = x + n * H * W * C;
    for (int64_t px = 0; px < H * W; ++px) {
      for (int64_t c = 0; c < E; ++c) {
        if (!cs.has(kExpand)) {
          e[px * E + c] = xn[px * C + c];
          continue;
        }
        double s = be[c];
        for (int64_t k = 0; k < C; ++k) s += double{xn[px * C + k]} * we[c * C + k];
        e[px * E + c] = apply(ee, s);
      }
    }
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        for (int64_t c = 0; c < E; ++c) {
          double s = bd != nullptr ? bd[c] : 0.0;
          for (int64_t ky = 0; ky < cs.kh; ++ky) {
            const int64_t ih = oh * cs.sh - cs.pt + ky;
            if (ih < 0 || ih >= H) continue;
            for (int64_t kx = 0; kx < cs.kw; ++kx) {
              const int64_t iw = ow * cs.sw - cs.pl + kx;
              if (iw < 0 || iw >= W) continue;
              s += e[(ih * W + iw) * E + c] * wd[(c * cs.kh + ky) * cs.kw + kx];
            }
          }
          d[(oh * OW + ow) * E + c] = apply(ed, s);
        }
      }
    }
    if (cs.has(kSe)) {  // mean, squeeze, gate, d scaled per channel
      const int64_t S = cs.se_c();
      const StageEpilogue es = epilogue(cs.se[0]), eg = epilogue(cs.se[1]);
      std::vector<double> m(E, 0.0), h(S), g(E);
      for (int64_t px = 0; px < OH * OW; ++px) {
        for (int64_t c = 0; c < E; ++c) m[c] += d[px * E + c];
      }
      for (double& v : m) v /= static_cast<double>(OH * OW);
      for (int64_t j = 0; j < S; ++j) {
        double s = se.bs[j];
        for (int64_t c = 0; c < E; ++c) s += m[c] * se.ws[j * E + c];
        h[j] = apply(es, s);
      }
      for (int64_t c = 0; c < E; ++c) {
        double s = se.bg[c];
        for (int64_t j = 0; j < S; ++j) s += h[j] * se.wg[c * S + j];
        g[c] = apply(eg, s);
      }
      for (int64_t px = 0; px < OH * OW; ++px) {
        for (int64_t c = 0; c < E; ++c) d[px * E + c] *= g[c];
      }
    }
    for (int64_t px = 0; px < OH * OW; ++px) {
      for (int64_t o = 0; o < O; ++o) {
        const int64_t at = (n * OH * OW + px) * O + o;
        if (!cs.has(kProject)) {  // the residual after the depthwise epilogue
          const double v = affine != nullptr ? d[px * E + o] * affine[o] + affine[E + o]
                                             : d[px * E + o];
          y[at] = v + (residual != nullptr ? residual[at] : 0.0);
          continue;
        }
        double s = bp[o];
        for (int64_t c = 0; c < E; ++c) s += d[px * E + c] * wp[o * E + c];
        if (residual != nullptr) s += residual[at];
        y[at] = apply(ep, s);  // the project's epilogue codes have no activation
      }
    }
  }
  return y;
}

/// Weights uniform in ±2/sqrt(fan in), so every stage's values stay O(1) (the clamps at 6, ±2
/// and the hardswish's bends all matter), x in ±3, biases in ±1.
std::vector<float> weights(int64_t count, int64_t fan_in, uint32_t seed) {
  const float s = 2.0f / std::sqrt(static_cast<float>(fan_in));
  return random_floats(static_cast<size_t>(count), seed, -s, s);
}

/// `cs`'s data from `seed`, x[nan_at] a NaN when nan_at >= 0.
Data make_data(const Case& cs, uint32_t seed, int64_t nan_at = -1) {
  const int64_t C = cs.in_c, E = cs.exp_c, O = cs.out_c, taps = cs.kh * cs.kw;
  Data d;
  d.x = random_floats(cs.x_floats(), seed, -3.0f, 3.0f);
  if (nan_at >= 0) d.x[nan_at] = kNaN;
  const std::vector<float> we = weights(E * C, C, seed + 1), be = random_floats(E, seed + 2);
  const std::vector<float> wd = weights(E * taps, taps, seed + 3);
  const std::vector<float> wp = weights(O * E, E, seed + 4), bp = random_floats(O, seed + 5);
  if (!cs.has(kNoDwBias)) d.dw_bias = random_floats(E, seed + 6);
  if (cs.has(kResidualOwn)) d.residual = random_floats(cs.y_floats(), seed + 7);
  if (cs.has(kAffine)) d.affine = random_floats(2 * E, seed + 12, -1.5f, 1.5f);
  d.dw_weight.resize(taps * E);  // [E, 1, kh, kw] -> [(ky * kw + kx) * E + c]
  for (int64_t c = 0; c < E; ++c) {
    for (int64_t t = 0; t < taps; ++t) d.dw_weight[t * E + c] = wd[c * taps + t];
  }
  if (cs.has(kExpand)) {
    d.expand_packed.resize(packed_weight_floats(E, C));
    pack_fc_weight(we.data(), be.data(), E, C, d.expand_packed.data());
  }
  if (cs.has(kProject)) {
    d.project_packed.resize(packed_weight_floats(O, E));
    pack_fc_weight(wp.data(), bp.data(), O, E, d.project_packed.data());
  }
  SeWeights se;
  if (cs.has(kSe)) {
    const int64_t S = cs.se_c();
    se.ws = weights(S * E, E, seed + 8);
    se.bs = random_floats(S, seed + 9);
    se.wg = weights(E * S, S, seed + 10);
    se.bg = random_floats(E, seed + 11);
    d.squeeze_packed.resize(packed_weight_floats(S, E));
    pack_fc_weight(se.ws.data(), se.bs.data(), S, E, d.squeeze_packed.data());
    d.excite_packed.resize(packed_weight_floats(E, S));
    pack_fc_weight(se.wg.data(), se.bg.data(), E, S, d.excite_packed.data());
  }
  const Inputs in = inputs_of(cs, d);
  d.ref = reference(cs, d.x.data(), we.data(), be.data(), wd.data(), in.dw_b, wp.data(), bp.data(),
                    in.residual, se, in.affine);
  return d;
}

BottleneckProblem make_problem(const Case& cs, const Inputs& in, float* y) {
  BottleneckProblem p;
  p.batch = cs.batch;
  p.in_h = cs.in_h;
  p.in_w = cs.in_w;
  p.in_c = cs.in_c;
  p.exp_c = cs.exp_c;
  p.out_h = cs.out_h();
  p.out_w = cs.out_w();
  p.out_c = cs.out_c;
  p.kernel_h = cs.kh;
  p.kernel_w = cs.kw;
  p.stride_h = cs.sh;
  p.stride_w = cs.sw;
  p.pad_top = cs.pt;
  p.pad_left = cs.pl;
  p.x = in.x;
  p.expand_packed = in.expand;
  p.expand = epilogue(cs.epi[0]);
  p.dw_weight = in.dw_w;
  p.dw_bias = in.dw_b;
  p.depthwise = epilogue(cs.epi[1]);
  p.project_packed = in.project;
  p.residual = in.residual;
  if (in.affine != nullptr) {
    p.post_scale = in.affine;
    p.post_shift = in.affine + cs.exp_c;
  }
  p.out_min = epilogue(cs.epi[2]).lo;
  p.out_max = epilogue(cs.epi[2]).hi;
  if (cs.has(kSe)) {
    p.se_c = cs.se_c();
    p.se_squeeze_packed = in.squeeze;
    p.se_squeeze = epilogue(cs.se[0]);
    p.se_excite_packed = in.excite;
    p.se_gate = epilogue(cs.se[1]);
  }
  p.y = y;
  return p;
}

int64_t threads_of(pthreadpool_t pool) {
  return pool != nullptr ? static_cast<int64_t>(pthreadpool_get_threads_count(pool)) : 1;
}

std::string describe(const Case& cs, GemmIsa isa, pthreadpool_t pool, int64_t band) {
  return name(cs) + " [" + gemm_isa_name(isa) + ", " + std::to_string(threads_of(pool)) +
         " thread(s), band " + std::to_string(band) + "]";
}

/// got against ref within 1e-4 · max(1, max |ref|) (float sums in another order), NaN where ref
/// is NaN; `width` pixels per row and `channels` per pixel name a wrong value's place.
void check(const std::vector<double>& ref, const float* got, int64_t width, int64_t channels,
           const std::string& what) {
  double scale = 1.0;
  for (double v : ref) scale = std::max(scale, std::fabs(v));
  const double tol = 1e-4 * scale;
  int bad = 0;
  for (size_t at = 0; at < ref.size(); ++at) {
    if (std::isnan(ref[at]) ? std::isnan(got[at]) : std::fabs(got[at] - ref[at]) <= tol) continue;
    if (bad++ < 5) {
      const int64_t px = static_cast<int64_t>(at) / channels;
      ADD_FAILURE() << what << ": [row " << px / width << ", col " << px % width << ", c "
                    << static_cast<int64_t>(at) % channels << "] = " << got[at] << ", want "
                    << ref[at] << " (tol " << tol << ")";
    }
  }
  if (bad > 5) ADD_FAILURE() << what << ": " << bad << " of " << ref.size() << " values wrong";
}

void expect_guard(const float* guard, const std::string& what) {
  for (int64_t i = 0; i < kGuardFloats; ++i) {
    if (guard[i] != kGuard) {
      ADD_FAILURE() << what << ": guard float " << i << " written";
      return;
    }
  }
}

/// Runs `cs` into a NaN-filled y and scratch (for the pool's threads) followed by guard floats.
void run_and_check(const Case& cs, const Data& d, pthreadpool_t pool, const std::string& what) {
  std::vector<float> y(cs.y_floats() + kGuardFloats, kGuard);
  std::fill_n(y.begin(), cs.y_floats(), kNaN);
  const BottleneckProblem p = make_problem(cs, inputs_of(cs, d), y.data());
  const uint64_t scratch_floats = bottleneck_scratch_floats(p, threads_of(pool));
  std::vector<float> scratch(scratch_floats + kGuardFloats, kGuard);
  std::fill_n(scratch.begin(), scratch_floats, kNaN);
  bottleneck_nhwc(p, scratch.data(), pool);
  check(d.ref, y.data(), cs.out_w(), cs.out_c, what);
  expect_guard(y.data() + cs.y_floats(), what + " y");
  expect_guard(scratch.data() + scratch_floats, what + " scratch");
}

TEST_F(CpuBottleneck, EveryIsaShapePoolAndBandAgainstDoubleReference) {
  const int64_t default_band = bottleneck_band_floats();
  Pool two(2), three(3);
  uint32_t seed = 1;
  for (const Case& cs : kCases) {
    ASSERT_GE(cs.out_h(), 1) << name(cs);
    ASSERT_GE(cs.out_w(), 1) << name(cs);
    const Data d = make_data(cs, seed += 10);
    for (int64_t band : {default_band, int64_t{1}, 5 * cs.in_w * cs.exp_c}) {
      bottleneck_band_floats() = band;
      const BottleneckProblem sizing = make_problem(cs, inputs_of(cs, d), nullptr);
      const uint64_t scratch3 = bottleneck_scratch_floats(sizing, 3);
      for (GemmIsa isa : supported_isas()) {
        ASSERT_TRUE(packed_gemm_force_isa(isa));
        EXPECT_EQ(bottleneck_scratch_floats(sizing, 3), scratch3) << "the ISA changed it";
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool, three.pool}) {
          run_and_check(cs, d, pool, describe(cs, isa, pool, band));
        }
      }
    }
  }
}

/// A read-only copy of `v` ending at a PROT_NONE page (null for an empty v).
std::unique_ptr<GuardedBuffer> read_only_copy(const std::vector<float>& v) {
  if (v.empty()) return nullptr;
  auto b = std::make_unique<GuardedBuffer>(sizeof(float) * v.size());
  EXPECT_NE(b->data(), nullptr);
  std::memcpy(b->data(), v.data(), sizeof(float) * v.size());
  EXPECT_TRUE(b->make_read_only());
  return b;
}

const float* data_of(const std::unique_ptr<GuardedBuffer>& b) {
  return b != nullptr ? b->data() : nullptr;
}

TEST_F(CpuBottleneck, ExactSizeBuffersEndingAtAGuardPage) {
  // x, the residual and the weights read-only, y and the scratch (for exactly the pool's
  // threads) writable, each ending at a PROT_NONE page: an over-read or over-write dies with
  // SIGSEGV. Default band and one output row per band.
  const int64_t default_band = bottleneck_band_floats();
  Pool three(3);
  uint32_t seed = 500;
  for (const Case& cs : kCases) {
    const Data d = make_data(cs, seed += 10);
    const auto x = read_only_copy(d.x), residual = read_only_copy(d.residual);
    const auto expand = read_only_copy(d.expand_packed), project = read_only_copy(d.project_packed);
    const auto dw_w = read_only_copy(d.dw_weight), dw_b = read_only_copy(d.dw_bias);
    const auto squeeze = read_only_copy(d.squeeze_packed);
    const auto excite = read_only_copy(d.excite_packed);
    const auto affine = read_only_copy(d.affine);
    const Inputs in{data_of(x),
                    data_of(expand),
                    data_of(dw_w),
                    data_of(dw_b),
                    data_of(project),
                    cs.has(kResidualX) ? data_of(x) : data_of(residual),
                    data_of(squeeze),
                    data_of(excite),
                    data_of(affine)};
    GuardedBuffer y(sizeof(float) * cs.y_floats());
    ASSERT_NE(y.data(), nullptr);
    for (int64_t band : {default_band, int64_t{1}}) {
      bottleneck_band_floats() = band;
      for (GemmIsa isa : supported_isas()) {
        ASSERT_TRUE(packed_gemm_force_isa(isa));
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), three.pool}) {
          std::fill_n(y.data(), cs.y_floats(), kNaN);
          const BottleneckProblem p = make_problem(cs, in, y.data());
          GuardedBuffer scratch(sizeof(float) * bottleneck_scratch_floats(p, threads_of(pool)));
          ASSERT_NE(scratch.data(), nullptr);
          bottleneck_nhwc(p, scratch.data(), pool);
          check(d.ref, y.data(), cs.out_w(), cs.out_c,
                describe(cs, isa, pool, band) + " guard pages");
        }
      }
    }
  }
}

/// The first case with squeeze-excitation (EfficientNet's stride-2 block).
const Case& first_se_case() {
  for (const Case& cs : kCases) {
    if (cs.has(kSe)) return cs;
  }
  return kCases[0];
}

TEST_F(CpuBottleneck, NoHeapAllocation) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "sanitizers own malloc";
  // MobileNetV2 stride 1 with the residual; EfficientNet's block with squeeze-excitation.
  for (const Case* c : {&kCases[1], &first_se_case()}) {
    const Case& cs = *c;
    const Data d = make_data(cs, 700);
    std::vector<float> y(cs.y_floats());
    const BottleneckProblem p = make_problem(cs, inputs_of(cs, d), y.data());
    Pool three(3);
    for (int64_t band : {bottleneck_band_floats(), int64_t{1}}) {
      bottleneck_band_floats() = band;
      std::vector<float> scratch(bottleneck_scratch_floats(p, 3));
      bottleneck_nhwc(p, scratch.data(), three.pool);  // warm up the pool
      for (GemmIsa isa : supported_isas()) {
        ASSERT_TRUE(packed_gemm_force_isa(isa));
        for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), three.pool}) {
          long allocations = 0;
          {
            testing_support::ArmedCounter counter;
            bottleneck_nhwc(p, scratch.data(), pool);
            allocations = counter.count();
          }
          EXPECT_EQ(allocations, 0) << describe(cs, isa, pool, band);
        }
      }
    }
  }
}

TEST_F(CpuBottleneck, ConcurrentCallsWithDistinctOutputsAndScratch) {
  // Two std::threads, one calling without a pool and one with a 2-thread pool of its own.
  const Case& cs = kCases[2];  // MobileNetV2 stride 1 at 56x56: several bands per task
  const Data d = make_data(cs, 800);
  Pool two(2);
  const pthreadpool_t pools[2] = {nullptr, two.pool};
  const uint64_t scratch_floats =
      bottleneck_scratch_floats(make_problem(cs, inputs_of(cs, d), nullptr), 2);
  std::vector<std::vector<float>> ys(2, std::vector<float>(cs.y_floats(), kNaN));
  std::vector<std::vector<float>> scratches(2, std::vector<float>(scratch_floats));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep) {
        bottleneck_nhwc(make_problem(cs, inputs_of(cs, d), ys[t].data()), scratches[t].data(),
                        pools[t]);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    check(d.ref, ys[t].data(), cs.out_w(), cs.out_c, "concurrent call " + std::to_string(t));
  }
}

TEST_F(CpuBottleneck, EmptyProblemsTouchNothing) {
  const Case& cs = kCases[0];
  const Data d = make_data(cs, 900);
  std::vector<float> y(cs.y_floats(), kGuard), scratch(4096, kGuard);
  for (int which = 0; which < 9; ++which) {  // each size 0 in turn, then too tall a kernel
    BottleneckProblem p = make_problem(cs, inputs_of(cs, d), y.data());
    int64_t* sizes[] = {&p.batch, &p.in_h,  &p.in_w,  &p.in_c,    &p.exp_c,
                        &p.out_h, &p.out_w, &p.out_c, &p.kernel_h};
    *sizes[which] = which < 8 ? 0 : kMaxBottleneckKernel + 1;
    EXPECT_EQ(bottleneck_scratch_floats(p, 2), 0u) << which;
    bottleneck_nhwc(p, scratch.data(), nullptr);
    for (float v : y) ASSERT_EQ(v, kGuard) << which;
    for (float v : scratch) ASSERT_EQ(v, kGuard) << which;
  }
}

TEST_F(CpuBottleneck, NanPropagatesThroughEveryStage) {
  // One NaN in x: the expanded pixel, every depthwise window over it and their projections are
  // NaN (through relu6 and clamp + hardswish), every other output is not.
  Pool three(3);
  bottleneck_band_floats() = 1;
  for (const Case* cs : {&kCases[0], &kCases[4], &kCases[13]}) {
    const Data d = make_data(*cs, 1100, (cs->in_h / 2 * cs->in_w + 3) * cs->in_c + 1);
    const auto nans = std::count_if(d.ref.begin(), d.ref.end(), [](double v) { return v != v; });
    ASSERT_GT(nans, 0);  // the reference has both
    ASSERT_LT(nans, static_cast<int64_t>(d.ref.size()));
    for (GemmIsa isa : supported_isas()) {
      ASSERT_TRUE(packed_gemm_force_isa(isa));
      for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), three.pool}) {
        run_and_check(*cs, d, pool, describe(*cs, isa, pool, 1) + " NaN in x");
      }
    }
  }
}

/// depthwise_row's contract in double.
std::vector<double> row_reference(const DepthwiseRow& r) {
  std::vector<double> ref(static_cast<size_t>(r.out_w * r.channels));
  for (int64_t ox = 0; ox < r.out_w; ++ox) {
    for (int64_t c = 0; c < r.channels; ++c) {
      double s = r.bias != nullptr ? r.bias[c] : 0.0;
      for (int64_t ky = 0; ky < r.kernel_h; ++ky) {
        for (int64_t kx = 0; kx < r.kernel_w; ++kx) {
          const int64_t ix = ox * r.stride_w - r.pad_left + kx;
          if (r.rows[ky] == nullptr || ix < 0 || ix >= r.in_w) continue;
          s += double{r.rows[ky][ix * r.channels + c]} *
               r.w[(ky * r.kernel_w + kx) * r.channels + c];
        }
      }
      double y = apply(r.epi, s);
      if (r.post_scale != nullptr) y = y * r.post_scale[c] + r.post_shift[c];
      if (r.residual != nullptr) y += r.residual[ox * r.channels + c];
      ref[ox * r.channels + c] = y;
    }
  }
  return ref;
}

TEST_F(CpuBottleneck, DepthwiseRowEveryIsaWithPaddingRows) {
  // Each input row read-only and ending at a PROT_NONE page; out between guard floats; null
  // (padding) rows at the top, the bottom, both or nowhere; the epilogues cycle through the
  // codes, every third call has no bias, every second a post-affine, two of four a residual (a
  // read-only row ending at a PROT_NONE page). Rows of 32 have 8-pixel chunks both inside and
  // reaching into the padding.
  const char kEpilogues[] = "nrhHc";
  uint32_t seed = 1000;
  int round = 0;
  for (int64_t channels : {1, 15, 16, 17, 33, 81}) {
    const std::vector<float> post_scale = random_floats(channels, ++seed);
    const std::vector<float> post_shift = random_floats(channels, ++seed);
    for (int64_t k : {3, 5, 7}) {
      for (int64_t in_w : {1, 7, 10, 23, 32}) {
        std::vector<std::unique_ptr<GuardedBuffer>> rows;
        for (int64_t ky = 0; ky < k; ++ky) {
          rows.push_back(read_only_copy(random_floats(in_w * channels, ++seed)));
        }
        const std::vector<float> w = weights(k * k * channels, k * k, ++seed);
        const std::vector<float> bias = random_floats(channels, ++seed);
        for (int64_t stride : {1, 2}) {
          for (int64_t pad = 0; pad <= k; ++pad) {  // pad k: columns of padding only
            if (in_w + 2 * pad < k) continue;       // no output column
            const unsigned bottom = 1u << (k - 1);
            for (unsigned nulls : {0u, 1u, bottom, 1u | bottom}) {  // bit ky: row ky is padding
              std::vector<const float*> ptrs;
              for (int64_t ky = 0; ky < k; ++ky) {
                ptrs.push_back((nulls >> ky & 1u) != 0 ? nullptr : rows[ky]->data());
              }
              const char code = kEpilogues[round % 5];
              DepthwiseRow r;
              r.rows = ptrs.data();
              r.in_w = in_w;
              r.channels = channels;
              r.out_w = (in_w + 2 * pad - k) / stride + 1;
              r.kernel_h = r.kernel_w = k;
              r.stride_w = stride;
              r.pad_left = pad;
              r.w = w.data();
              const bool affine = round % 2 == 1, residual = round % 4 >= 2;
              r.bias = round++ % 3 == 2 ? nullptr : bias.data();
              r.epi = epilogue(code);
              r.post_scale = affine ? post_scale.data() : nullptr;
              r.post_shift = affine ? post_shift.data() : nullptr;
              const int64_t n = r.out_w * channels;
              const std::unique_ptr<GuardedBuffer> res =
                  residual ? read_only_copy(random_floats(n, ++seed)) : nullptr;
              r.residual = residual ? res->data() : nullptr;
              const std::vector<double> ref = row_reference(r);
              for (GemmIsa isa : supported_isas()) {
                ASSERT_TRUE(packed_gemm_force_isa(isa));
                std::vector<float> out(n + 2 * kGuardFloats, kGuard);
                std::fill_n(out.begin() + kGuardFloats, n, kNaN);
                r.out = out.data() + kGuardFloats;
                depthwise_row(r);
                const std::string what =
                    "depthwise_row " + num(k) + "x" + num(k) + ", C " + num(channels) + ", in_w " +
                    num(in_w) + ", stride " + num(stride) + ", pad " + num(pad) + ", null rows " +
                    num(nulls) + ", epilogue " + code + (r.bias ? "" : ", no bias") +
                    (affine ? ", affine" : "") + (residual ? ", residual" : "") + " [" +
                    gemm_isa_name(isa) + "]";
                check(ref, r.out, r.out_w, channels, what);
                expect_guard(out.data(), what + " before out");
                expect_guard(r.out + n, what + " after out");
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(CpuBottleneck, DepthwiseRowsAtOnceEveryIsa) {
  // out_rows R > 1: output row i reads rows[i * stride_h ..] and writes (and adds the residual
  // at) row i of out; each must equal the one-row contract. Null rows at the top and the bottom
  // (padding), affine and residual on two cases of three, after a clamp or after a hard-swish
  // (then passes after the activation), out between guard floats.
  uint32_t seed = 5000;
  int round = 0;
  for (int64_t channels : {16, 33}) {
    for (int64_t k : {3, 7}) {
      for (int64_t in_w : {10, 32}) {
        for (int64_t stride : {1, 2}) {
          for (int64_t rows_at_once : {2, 4}) {
            const int64_t n_rows = (rows_at_once - 1) * stride + k;
            std::vector<std::unique_ptr<GuardedBuffer>> rows;
            std::vector<const float*> ptrs;
            for (int64_t t = 0; t < n_rows; ++t) {
              rows.push_back(read_only_copy(random_floats(in_w * channels, ++seed)));
              ptrs.push_back(t == 0 || t == n_rows - 1 ? nullptr : rows.back()->data());
            }
            const std::vector<float> w = weights(k * k * channels, k * k, ++seed);
            const std::vector<float> bias = random_floats(channels, ++seed);
            const std::vector<float> scale = random_floats(channels, ++seed);
            const std::vector<float> shift = random_floats(channels, ++seed);
            const bool post = round % 3 != 2;
            const char code = round++ % 2 == 0 ? 'r' : 'H';
            DepthwiseRow r;
            r.in_w = in_w;
            r.channels = channels;
            r.out_w = (in_w + 2 * (k / 2) - k) / stride + 1;
            r.kernel_h = r.kernel_w = k;
            r.stride_w = stride;
            r.pad_left = k / 2;
            r.out_rows = rows_at_once;
            r.stride_h = stride;
            r.w = w.data();
            r.bias = bias.data();
            r.epi = epilogue(code);
            const int64_t row_floats = r.out_w * channels, n = rows_at_once * row_floats;
            const std::unique_ptr<GuardedBuffer> res = read_only_copy(random_floats(n, ++seed));
            if (post) {
              r.post_scale = scale.data();
              r.post_shift = shift.data();
              r.residual = res->data();
            }
            std::vector<std::vector<double>> refs;
            for (int64_t i = 0; i < rows_at_once; ++i) {
              DepthwiseRow one = r;
              one.rows = ptrs.data() + i * stride;
              one.out_rows = 1;
              if (post) one.residual = res->data() + i * row_floats;
              refs.push_back(row_reference(one));
            }
            r.rows = ptrs.data();
            for (GemmIsa isa : supported_isas()) {
              ASSERT_TRUE(packed_gemm_force_isa(isa));
              std::vector<float> out(n + 2 * kGuardFloats, kGuard);
              std::fill_n(out.begin() + kGuardFloats, n, kNaN);
              r.out = out.data() + kGuardFloats;
              depthwise_row(r);
              const std::string what = "depthwise_row " + num(rows_at_once) + " rows, " + num(k) +
                                       "x" + num(k) + ", C " + num(channels) + ", in_w " +
                                       num(in_w) + ", stride " + num(stride) +
                                       ", epilogue " + code + (post ? ", affine, residual" : "") +
                                       " [" +
                                       gemm_isa_name(isa) + "]";
              for (int64_t i = 0; i < rows_at_once; ++i) {
                check(refs[i], r.out + i * row_floats, r.out_w, channels,
                      what + ", row " + num(i));
              }
              expect_guard(out.data(), what + " before out");
              expect_guard(r.out + n, what + " after out");
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tern::cpu
