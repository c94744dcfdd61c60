// Microbenchmark: tern's NHWC convolution on the packed GEMM (backends/cpu/kernels/packed_conv.h)
// against XNNPACK's f32 convolution operator on ResNet-18's conv layers (224x224 input, batch 1)
// with the same pthreadpool size. Not a test.
//
//   cpu_conv_bench [--runs N] [--threads LIST] [--isa scalar|avx2|avx512] [--cputime]
//                  [--kc N] [--bblock BYTES] [--tasks N] [--direct-groups N] [--layer NAME]
//                  [--residual]
//
// --residual: instead of XNNPACK, times on the 3x3 stride-1 layers (the ones ResNet-18 ends a
// basic block with) y = relu(conv + bias + residual) fused into packed_conv_nhwc (ConvProblem::
// residual) against packed_conv_nhwc without ReLU followed by a separate add + ReLU pass over y,
// in a rotating order call by call (plus the same conv + ReLU with no residual: the floor);
// prints the medians and the time the fusion saves per layer.
//
// Built with -DTERN_BUILD_GEMM_BENCH=ON (target cpu_conv_bench). Default threads "1,2", 20 runs
// per row, the two libraries alternating call by call so that load from other processes hits
// both alike. Prints one row per layer and thread count (median and best GFLOP/s of each), then
// per thread count the total for one ResNet-18's worth of these layers (each layer's median time
// times its count in the net; and the same with each layer's fastest run).
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_conv.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"
#include "bench/kernel_bench_cli.h"

namespace {

using bench_timing::Stats;
using tern::cpu::ConvProblem;

struct Layer {
  const char* name;
  int64_t in_hw, in_c, out_c, kernel, stride, pad;
  int count;  // how many times ResNet-18 has it (0: another net's layer, not in the totals)
  int64_t groups = 1;
  int64_t out_hw() const { return (in_hw + 2 * pad - kernel) / stride + 1; }
  double flops() const {
    return 2.0 * out_hw() * out_hw() * out_c * kernel * kernel * static_cast<double>(in_c) /
           static_cast<double>(groups);
  }
};

// ResNet-18 (torchvision), 224x224 input. The 1x1/2 128->256 and 256->512 downsamples complete
// the net's conv layers.
const Layer kLayers[] = {
    {"stem 7x7/2 3->64 @224", 224, 3, 64, 7, 2, 3, 1},
    {"3x3 64->64 @56", 56, 64, 64, 3, 1, 1, 4},
    {"3x3/2 64->128 @56", 56, 64, 128, 3, 2, 1, 1},
    {"3x3 128->128 @28", 28, 128, 128, 3, 1, 1, 3},
    {"1x1/2 64->128 @56", 56, 64, 128, 1, 2, 0, 1},
    {"3x3/2 128->256 @28", 28, 128, 256, 3, 2, 1, 1},
    {"3x3 256->256 @14", 14, 256, 256, 3, 1, 1, 3},
    {"1x1/2 128->256 @28", 28, 128, 256, 1, 2, 0, 1},
    {"3x3/2 256->512 @14", 14, 256, 512, 3, 2, 1, 1},
    {"3x3 512->512 @7", 7, 512, 512, 3, 1, 1, 3},
    {"1x1/2 256->512 @14", 14, 256, 512, 1, 2, 0, 1},
    // The RGB stems of the small nets (tern's shallow direct conv; count 0: not ResNet-18's).
    {"stem 3x3/2 3->24 @224 (shufflenet)", 224, 3, 24, 3, 2, 1, 0},
    {"stem 3x3/2 3->32 @224 (mobilenet_v2)", 224, 3, 32, 3, 2, 1, 0},
    {"stem 3x3/2 3->16 @224 (mobilenet_v3)", 224, 3, 16, 3, 2, 1, 0},
    // Grouped 3x3 convs (count 0): RegNetX-400MF (group width 16), RegNetY-400MF (8) and
    // ResNeXt-50 32x4d (32 groups of 4 to 32 channels).
    {"regnet_x 3x3/2 32 g2 @112", 112, 32, 32, 3, 2, 1, 0, 2},
    {"regnet_x 3x3 64 g4 @28", 28, 64, 64, 3, 1, 1, 0, 4},
    {"regnet_x 3x3 160 g10 @14", 14, 160, 160, 3, 1, 1, 0, 10},
    {"regnet_x 3x3 400 g25 @7", 7, 400, 400, 3, 1, 1, 0, 25},
    {"regnet_y 3x3/2 48 g6 @112", 112, 48, 48, 3, 2, 1, 0, 6},
    {"regnet_y 3x3/2 104 g13 @56", 56, 104, 104, 3, 2, 1, 0, 13},
    {"regnet_y 3x3/2 208 g26 @28", 28, 208, 208, 3, 2, 1, 0, 26},
    {"regnet_y 3x3/2 440 g55 @14", 14, 440, 440, 3, 2, 1, 0, 55},
    {"regnet_y 3x3 48 g6 @56", 56, 48, 48, 3, 1, 1, 0, 6},
    {"regnet_y 3x3 104 g13 @28", 28, 104, 104, 3, 1, 1, 0, 13},
    {"regnet_y 3x3 208 g26 @14", 14, 208, 208, 3, 1, 1, 0, 26},
    {"regnet_y 3x3 440 g55 @7", 7, 440, 440, 3, 1, 1, 0, 55},
    {"resnext 3x3 128 g32 @56", 56, 128, 128, 3, 1, 1, 0, 32},
    {"resnext 3x3 256 g32 @28", 28, 256, 256, 3, 1, 1, 0, 32},
    {"resnext 3x3 512 g32 @14", 14, 512, 512, 3, 1, 1, 0, 32},
    {"resnext 3x3 1024 g32 @7", 7, 1024, 1024, 3, 1, 1, 0, 32},
};

/// One layer's inputs for tern: x, w [O, KH, KW, C/G] and bias drawn from [-0.05, 0.05) (seed 1,
/// in that order; x with `x_slack` more floats), w packed (each group's [O/G, KH*KW*C/G] matrix)
/// into a 64-byte aligned buffer, and the ConvProblem over them (batch 1; y, residual and clamp left to the
/// caller). `rng` and `dist` go on drawing for the caller's own buffers.
struct ConvSetup {
  ConvSetup(const Layer& l, size_t x_slack)
      : oh(l.out_hw()),
        k(l.kernel * l.kernel * l.in_c / l.groups),
        x_floats(static_cast<size_t>(l.in_hw * l.in_hw * l.in_c)),
        y_floats(static_cast<size_t>(oh * oh * l.out_c)),
        rng(1),
        dist(-0.05f, 0.05f),
        x(x_floats + x_slack),
        w(static_cast<size_t>(l.out_c * k)),
        bias(static_cast<size_t>(l.out_c)) {
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    for (float& v : bias) v = dist(rng);
    const int64_t og = l.out_c / l.groups;
    const uint64_t group_floats = tern::cpu::packed_weight_floats(og, k);
    const uint64_t floats = group_floats * static_cast<uint64_t>(l.groups);
    packed = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
    for (int64_t g = 0; g < l.groups; ++g) {
      tern::cpu::pack_fc_weight(w.data() + g * og * k, bias.data() + g * og, og, k,
                                packed + g * group_floats);
    }
    p.groups = l.groups;
    p.batch = 1;
    p.in_h = p.in_w = l.in_hw;
    p.in_c = l.in_c;
    p.out_h = p.out_w = oh;
    p.out_c = l.out_c;
    p.kernel_h = p.kernel_w = l.kernel;
    p.stride_h = p.stride_w = l.stride;
    p.pad_top = p.pad_left = l.pad;
    p.x = x.data();
    p.packed = packed;
  }
  ~ConvSetup() { std::free(packed); }
  ConvSetup(const ConvSetup&) = delete;
  ConvSetup& operator=(const ConvSetup&) = delete;

  const int64_t oh, k;
  const size_t x_floats, y_floats;
  std::mt19937 rng;
  std::uniform_real_distribution<float> dist;
  std::vector<float> x, w, bias;
  float* packed = nullptr;
  ConvProblem p;
};

struct Result {
  bool ok = false;
  double tern_s = 0, xnn_s = 0;            // medians
  double tern_best_s = 0, xnn_best_s = 0;  // fastest runs
};

Result run(const Layer& l, int threads, int runs) {
  Result result;
  // XNNPACK reads up to XNN_EXTRA_BYTES past its input: pad x.
  ConvSetup setup(l, /*x_slack=*/64);
  const std::vector<float>& x = setup.x;  // w [O, KH, KW, C/G]: XNNPACK's [G, O/G, KH, KW, C/G]
  const size_t y_floats = setup.y_floats;
  std::vector<float> y_tern(y_floats), y_xnn(y_floats);
  ConvProblem& p = setup.p;
  p.y = y_tern.data();
  p.out_min = 0.0f;  // a fused ReLU, as in the net
  p.out_max = std::numeric_limits<float>::infinity();

  const bench_cli::Pool pool_owner(threads);
  pthreadpool_t pool = pool_owner.get();
  xnn_operator_t op = nullptr;
  const uint32_t pad = static_cast<uint32_t>(l.pad), ks = static_cast<uint32_t>(l.kernel),
                 st = static_cast<uint32_t>(l.stride);
  const uint32_t groups = static_cast<uint32_t>(l.groups);
  xnn_status status = xnn_create_convolution2d_nhwc_f32(
      pad, pad, pad, pad, ks, ks, st, st, 1, 1, groups, static_cast<size_t>(l.in_c / l.groups),
      static_cast<size_t>(l.out_c / l.groups), static_cast<size_t>(l.in_c),
      static_cast<size_t>(l.out_c),
      setup.w.data(), setup.bias.data(), 0.0f, std::numeric_limits<float>::infinity(), 0, &op);
  if (status != xnn_status_success) {
    std::fprintf(stderr, "xnn_create_convolution2d_nhwc_f32 failed (%d)\n", status);
    return result;
  }
  status =
      xnn_setup_convolution2d_nhwc_f32(op, 1, static_cast<size_t>(l.in_hw),
                                       static_cast<size_t>(l.in_hw), x.data(), y_xnn.data(), pool);
  if (status != xnn_status_success) {
    std::fprintf(stderr, "xnn_setup_convolution2d_nhwc_f32 failed (%d)\n", status);
    return result;
  }

  const std::vector<Stats> times = bench_timing::time_interleaved(
      /*warmup=*/2, runs, /*rotate=*/false,
      {[&] { tern::cpu::packed_conv_nhwc(p, pool); }, [&] { xnn_run_operator(op, pool); }});
  double max_diff = 0;
  for (size_t i = 0; i < y_floats; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(y_tern[i] - y_xnn[i])));
  }

  const Stats& s_t = times[0];
  const Stats& s_x = times[1];
  const double flops = l.flops();
  std::printf(
      "%-24s x%d  %d thr | tern %7.1f GFLOP/s (best %7.1f) | xnnpack %7.1f (best %7.1f) | "
      "tern/xnn %.2fx | max|diff| %.1e\n",
      l.name, l.count, threads, flops / s_t.median_s * 1e-9, flops / s_t.best_s * 1e-9,
      flops / s_x.median_s * 1e-9, flops / s_x.best_s * 1e-9, s_x.median_s / s_t.median_s,
      max_diff);
  std::fflush(stdout);

  xnn_delete_operator(op);
  result.ok = max_diff < 1e-3;
  result.tern_s = s_t.median_s;
  result.xnn_s = s_x.median_s;
  result.tern_best_s = s_t.best_s;
  result.xnn_best_s = s_x.best_s;
  return result;
}

/// Medians of the fused residual conv and of conv-then-add on one layer; ok = the outputs agree.
struct ResidualResult {
  bool ok = false;
  double fused_s = 0, separate_s = 0, conv_s = 0;
};

/// The unfused epilogue: y = max(y + residual, 0), one pass over y and the residual.
__attribute__((noinline)) void add_relu(float* y, const float* residual, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = y[i] + residual[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

ResidualResult run_residual(const Layer& l, int threads, int runs) {
  ResidualResult result;
  ConvSetup setup(l, /*x_slack=*/0);
  const size_t y_floats = setup.y_floats;
  std::vector<float> residual(y_floats), y_fused(y_floats), y_separate(y_floats);
  for (float& v : residual) v = setup.dist(setup.rng);
  const ConvProblem& p = setup.p;
  ConvProblem fused = p;
  fused.y = y_fused.data();
  fused.residual = residual.data();
  fused.out_min = 0.0f;
  fused.out_max = std::numeric_limits<float>::infinity();
  ConvProblem plain = p;  // no clamp: the ReLU comes after the add
  plain.y = y_separate.data();
  ConvProblem conv_only = fused;  // the floor: the same conv with its ReLU and no residual
  conv_only.residual = nullptr;
  std::vector<float> y_conv(y_floats);
  conv_only.y = y_conv.data();

  const bench_cli::Pool pool_owner(threads);
  pthreadpool_t pool = pool_owner.get();
  // The three variants in a rotating order, so none always runs after the same one.
  const std::vector<Stats> times = bench_timing::time_interleaved(
      /*warmup=*/2, runs, /*rotate=*/true,
      {[&] { tern::cpu::packed_conv_nhwc(fused, pool); },
       [&] {
         tern::cpu::packed_conv_nhwc(plain, pool);
         add_relu(y_separate.data(), residual.data(), y_floats);
       },
       [&] { tern::cpu::packed_conv_nhwc(conv_only, pool); }});
  double max_diff = 0;
  for (size_t i = 0; i < y_floats; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(y_fused[i] - y_separate[i])));
  }
  const Stats& s_f = times[0];
  const Stats& s_s = times[1];
  const Stats& s_c = times[2];
  std::printf(
      "%-24s x%d  %d thr | fused %7.1f us (best %7.1f) | conv + add/relu %7.1f us (best %7.1f) | "
      "saved %5.1f us = %4.1f%% | conv+relu alone %7.1f us (best %7.1f) | y %4.0f KiB | "
      "max|diff| %.1e\n",
      l.name, l.count, threads, s_f.median_s * 1e6, s_f.best_s * 1e6, s_s.median_s * 1e6,
      s_s.best_s * 1e6, (s_s.median_s - s_f.median_s) * 1e6,
      100.0 * (s_s.median_s - s_f.median_s) / s_s.median_s, s_c.median_s * 1e6, s_c.best_s * 1e6,
      y_floats * 4.0 / 1024.0, max_diff);
  std::fflush(stdout);
  result.ok = max_diff < 1e-4;
  result.fused_s = s_f.median_s;
  result.separate_s = s_s.median_s;
  result.conv_s = s_c.median_s;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  bench_cli::KernelBenchCli cli(
      "cpu_conv_bench",
      "tern's NHWC convolution (packed_conv_nhwc) against XNNPACK's on ResNet-18's conv layers",
      /*default_runs=*/20, /*default_threads=*/{1, 2});
  cli.add_layer_filter();
  tern::cpu::gemm_detail::ConvBlocking& blocking = tern::cpu::gemm_detail::conv_blocking();
  cli.app.add_option("--kc", blocking.kc_max, "K rows per block")->capture_default_str();
  cli.app.add_option("--bblock", blocking.b_block_bytes, "A task's B block kept in L2, in bytes")
      ->capture_default_str();
  cli.app.add_option("--tasks", blocking.tasks_per_thread, "At least this many tasks per thread")
      ->capture_default_str();
  cli.app.add_option("--direct-groups", blocking.direct_group_max_cols,
                     "Grouped convs with at most this many output channels a group run as direct "
                     "convolutions (0: the implicit GEMM)")
      ->capture_default_str();
  bool residual = false;
  cli.app.add_flag("--residual", residual,
                   "Instead of XNNPACK: on the 3x3 stride-1 layers, the fused residual + ReLU "
                   "against the conv and a separate add + ReLU pass");
  if (const int status = cli.parse(argc, argv); status >= 0) return status;
  if (residual) {
    cli.print_start("fused residual vs conv + add/relu pass, tern ");
    int failures = 0;
    for (int t : cli.threads) {
      double fused = 0, separate = 0;
      for (const Layer& l : kLayers) {
        if (l.kernel != 3 || l.stride != 1 || !cli.selected(l.name)) continue;
        const ResidualResult r = run_residual(l, t, cli.runs);
        if (!r.ok) ++failures;
        // Each stage's two basic blocks end in a 3x3/1 conv with a residual add: two of the
        // 64->64 layer's four, two of the other 3x3/1 layers' three.
        const int with_residual = (l.count + 1) / 2;
        fused += with_residual * r.fused_s;
        separate += with_residual * r.separate_s;
      }
      std::printf(
          "TOTAL (3x3/1 convs that end a ResNet-18 basic block) %d thr | fused %.3f ms | "
          "conv + add/relu %.3f ms | saved %.3f ms\n",
          t, fused * 1e3, separate * 1e3, (separate - fused) * 1e3);
    }
    cli.print_end();
    return failures == 0 ? 0 : 1;
  }
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
  cli.print_start("tern ");
  int failures = 0;
  for (int t : cli.threads) {
    double total_flops = 0, total_tern = 0, total_xnn = 0, best_tern = 0, best_xnn = 0;
    for (const Layer& l : kLayers) {
      if (!cli.selected(l.name)) continue;
      const Result r = run(l, t, cli.runs);
      if (!r.ok) ++failures;
      total_flops += l.count * l.flops();
      total_tern += l.count * r.tern_s;
      total_xnn += l.count * r.xnn_s;
      best_tern += l.count * r.tern_best_s;
      best_xnn += l.count * r.xnn_best_s;
    }
    if (total_flops == 0) continue;  // only other nets' layers selected: no ResNet-18 total
    std::printf(
        "TOTAL (one ResNet-18's conv layers, %.2f GFLOP) %d thr | tern %.2f ms = %.1f GFLOP/s | "
        "xnnpack %.2f ms = %.1f GFLOP/s | tern/xnn %.2fx\n",
        total_flops * 1e-9, t, total_tern * 1e3, total_flops / total_tern * 1e-9, total_xnn * 1e3,
        total_flops / total_xnn * 1e-9, total_xnn / total_tern);
    // On a loaded machine the medians of multi-threaded runs include waits for descheduled
    // workers; the sum of the fastest runs is the better estimate of an idle machine.
    std::printf(
        "TOTAL of fastest runs %d thr | tern %.2f ms = %.1f GFLOP/s | xnnpack %.2f ms = %.1f "
        "GFLOP/s | tern/xnn %.2fx\n",
        t, best_tern * 1e3, total_flops / best_tern * 1e-9, best_xnn * 1e3,
        total_flops / best_xnn * 1e-9, best_xnn / best_tern);
  }
  cli.print_end();
  xnn_deinitialize();
  return failures == 0 ? 0 : 1;
}
