// Microbenchmark: tern's NHWC convolution on the packed GEMM (backends/cpu/kernels/packed_conv.h)
// against XNNPACK's f32 convolution operator on ResNet-18's conv layers (224x224 input, batch 1)
// with the same pthreadpool size. Not a test.
//
//   cpu_conv_bench [--runs N] [--threads LIST] [--isa scalar|avx2|avx512] [--cputime]
//                  [--kc N] [--bblock BYTES] [--tasks N] [--layer NAME] [--residual]
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
#include <time.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_conv.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"

namespace {

using tern::cpu::ConvProblem;
using tern::cpu::GemmIsa;

struct Layer {
  const char* name;
  int64_t in_hw, in_c, out_c, kernel, stride, pad;
  int count;  // how many times ResNet-18 has it
  int64_t out_hw() const { return (in_hw + 2 * pad - kernel) / stride + 1; }
  double flops() const {
    return 2.0 * out_hw() * out_hw() * out_c * kernel * kernel * static_cast<double>(in_c);
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
};

using bench_timing::g_cputime;
using bench_timing::load_average;
using bench_timing::now_seconds;
using bench_timing::parse_list;
using bench_timing::Stats;
using bench_timing::stats_of;

struct Result {
  bool ok = false;
  double tern_s = 0, xnn_s = 0;            // medians
  double tern_best_s = 0, xnn_best_s = 0;  // fastest runs
};

Result run(const Layer& l, int threads, int runs) {
  Result result;
  const int64_t oh = l.out_hw(), k = l.kernel * l.kernel * l.in_c;
  const size_t x_floats = static_cast<size_t>(l.in_hw * l.in_hw * l.in_c);
  const size_t y_floats = static_cast<size_t>(oh * oh * l.out_c);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  // XNNPACK reads up to XNN_EXTRA_BYTES past its input: pad x.
  std::vector<float> x(x_floats + 64), w(static_cast<size_t>(l.out_c * k)),
      bias(static_cast<size_t>(l.out_c)), y_tern(y_floats), y_xnn(y_floats);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);

  // tern: w [O, KH, KW, C] is the [O, KH*KW*C] matrix; packed in a 64-byte aligned buffer.
  const uint64_t floats = tern::cpu::packed_weight_floats(l.out_c, k);
  float* packed = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
  tern::cpu::pack_fc_weight(w.data(), bias.data(), l.out_c, k, packed);
  ConvProblem p;
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
  p.y = y_tern.data();
  p.out_min = 0.0f;  // a fused ReLU, as in the net
  p.out_max = std::numeric_limits<float>::infinity();

  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  xnn_operator_t op = nullptr;
  const uint32_t pad = static_cast<uint32_t>(l.pad), ks = static_cast<uint32_t>(l.kernel),
                 st = static_cast<uint32_t>(l.stride);
  xnn_status status = xnn_create_convolution2d_nhwc_f32(
      pad, pad, pad, pad, ks, ks, st, st, 1, 1, 1, static_cast<size_t>(l.in_c),
      static_cast<size_t>(l.out_c), static_cast<size_t>(l.in_c), static_cast<size_t>(l.out_c),
      w.data(), bias.data(), 0.0f, std::numeric_limits<float>::infinity(), 0, &op);
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

  const int warmup = 2;
  std::vector<double> t_tern, t_xnn;
  for (int i = 0; i < warmup + runs; ++i) {
    const double t0 = now_seconds();
    tern::cpu::packed_conv_nhwc(p, pool);
    const double t1 = now_seconds();
    xnn_run_operator(op, pool);
    const double t2 = now_seconds();
    if (i >= warmup) {
      t_tern.push_back(t1 - t0);
      t_xnn.push_back(t2 - t1);
    }
  }
  double max_diff = 0;
  for (size_t i = 0; i < y_floats; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(y_tern[i] - y_xnn[i])));
  }

  const Stats s_t = stats_of(t_tern), s_x = stats_of(t_xnn);
  const double flops = l.flops();
  std::printf(
      "%-24s x%d  %d thr | tern %7.1f GFLOP/s (best %7.1f) | xnnpack %7.1f (best %7.1f) | "
      "tern/xnn %.2fx | max|diff| %.1e\n",
      l.name, l.count, threads, flops / s_t.median_s * 1e-9, flops / s_t.best_s * 1e-9,
      flops / s_x.median_s * 1e-9, flops / s_x.best_s * 1e-9, s_x.median_s / s_t.median_s,
      max_diff);
  std::fflush(stdout);

  xnn_delete_operator(op);
  if (pool != nullptr) pthreadpool_destroy(pool);
  std::free(packed);
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
  const int64_t oh = l.out_hw(), k = l.kernel * l.kernel * l.in_c;
  const size_t x_floats = static_cast<size_t>(l.in_hw * l.in_hw * l.in_c);
  const size_t y_floats = static_cast<size_t>(oh * oh * l.out_c);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> x(x_floats), w(static_cast<size_t>(l.out_c * k)),
      bias(static_cast<size_t>(l.out_c)), residual(y_floats), y_fused(y_floats),
      y_separate(y_floats);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : residual) v = dist(rng);
  const uint64_t floats = tern::cpu::packed_weight_floats(l.out_c, k);
  float* packed = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
  tern::cpu::pack_fc_weight(w.data(), bias.data(), l.out_c, k, packed);
  ConvProblem p;
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

  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  const int warmup = 2;
  std::vector<double> t_fused, t_separate, t_conv;
  for (int i = 0; i < warmup + runs; ++i) {
    // The three variants in a rotating order, so none always runs after the same one.
    for (int step = 0; step < 3; ++step) {
      const int which = (i + step) % 3;
      const double t0 = now_seconds();
      if (which == 0) {
        tern::cpu::packed_conv_nhwc(fused, pool);
      } else if (which == 1) {
        tern::cpu::packed_conv_nhwc(plain, pool);
        add_relu(y_separate.data(), residual.data(), y_floats);
      } else {
        tern::cpu::packed_conv_nhwc(conv_only, pool);
      }
      const double t1 = now_seconds();
      if (i >= warmup) (which == 0 ? t_fused : which == 1 ? t_separate : t_conv).push_back(t1 - t0);
    }
  }
  double max_diff = 0;
  for (size_t i = 0; i < y_floats; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(y_fused[i] - y_separate[i])));
  }
  const Stats s_f = stats_of(t_fused), s_s = stats_of(t_separate), s_c = stats_of(t_conv);
  std::printf(
      "%-24s x%d  %d thr | fused %7.1f us (best %7.1f) | conv + add/relu %7.1f us (best %7.1f) | "
      "saved %5.1f us = %4.1f%% | conv+relu alone %7.1f us (best %7.1f) | y %4.0f KiB | "
      "max|diff| %.1e\n",
      l.name, l.count, threads, s_f.median_s * 1e6, s_f.best_s * 1e6, s_s.median_s * 1e6,
      s_s.best_s * 1e6, (s_s.median_s - s_f.median_s) * 1e6,
      100.0 * (s_s.median_s - s_f.median_s) / s_s.median_s, s_c.median_s * 1e6, s_c.best_s * 1e6,
      y_floats * 4.0 / 1024.0, max_diff);
  std::fflush(stdout);
  if (pool != nullptr) pthreadpool_destroy(pool);
  std::free(packed);
  result.ok = max_diff < 1e-4;
  result.fused_s = s_f.median_s;
  result.separate_s = s_s.median_s;
  result.conv_s = s_c.median_s;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  std::vector<int> threads = {1, 2};
  std::string only;
  bool residual = false;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (std::strcmp(arg, "--cputime") == 0) {
      g_cputime = true;
    } else if (std::strcmp(arg, "--residual") == 0) {
      residual = true;
    } else if (std::strcmp(arg, "--runs") == 0 && has_value) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(arg, "--threads") == 0 && has_value) {
      threads = parse_list(argv[++i]);
    } else if (std::strcmp(arg, "--isa") == 0 && has_value) {
      const std::string name = argv[++i];
      const GemmIsa isa = name == "avx512" ? GemmIsa::Avx512
                          : name == "avx2" ? GemmIsa::Avx2
                                           : GemmIsa::Scalar;
      if (!tern::cpu::packed_gemm_force_isa(isa)) {
        std::fprintf(stderr, "isa %s is not supported here\n", name.c_str());
        return 2;
      }
    } else if (std::strcmp(arg, "--kc") == 0 && has_value) {
      tern::cpu::gemm_detail::conv_blocking().kc_max = std::atoll(argv[++i]);
    } else if (std::strcmp(arg, "--bblock") == 0 && has_value) {
      tern::cpu::gemm_detail::conv_blocking().b_block_bytes = std::atoll(argv[++i]);
    } else if (std::strcmp(arg, "--tasks") == 0 && has_value) {
      tern::cpu::gemm_detail::conv_blocking().tasks_per_thread = std::atoll(argv[++i]);
    } else if (std::strcmp(arg, "--layer") == 0 && has_value) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: cpu_conv_bench [--runs N] [--threads 1,2] [--isa ISA] [--cputime] "
                   "[--kc N] [--bblock BYTES] [--tasks N] [--layer NAME-SUBSTRING] "
                   "[--residual]\n");
      return 2;
    }
  }
  if (residual) {
    std::printf(
        "fused residual vs conv + add/relu pass, tern isa %s, %d runs per row, %s time, "
        "load average before: %s\n",
        tern::cpu::gemm_isa_name(tern::cpu::packed_gemm_isa()), runs,
        g_cputime ? "process CPU" : "wall-clock", load_average().c_str());
    int failures = 0;
    for (int t : threads) {
      double fused = 0, separate = 0;
      for (const Layer& l : kLayers) {
        if (l.kernel != 3 || l.stride != 1) continue;
        if (!only.empty() && std::string(l.name).find(only) == std::string::npos) continue;
        const ResidualResult r = run_residual(l, t, runs);
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
    std::printf("load average after: %s\n", load_average().c_str());
    return failures == 0 ? 0 : 1;
  }
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
  std::printf("tern isa %s, %d runs per row, %s time, load average before: %s\n",
              tern::cpu::gemm_isa_name(tern::cpu::packed_gemm_isa()), runs,
              g_cputime ? "process CPU" : "wall-clock", load_average().c_str());
  int failures = 0;
  for (int t : threads) {
    double total_flops = 0, total_tern = 0, total_xnn = 0, best_tern = 0, best_xnn = 0;
    for (const Layer& l : kLayers) {
      if (!only.empty() && std::string(l.name).find(only) == std::string::npos) continue;
      const Result r = run(l, t, runs);
      if (!r.ok) ++failures;
      total_flops += l.count * l.flops();
      total_tern += l.count * r.tern_s;
      total_xnn += l.count * r.xnn_s;
      best_tern += l.count * r.tern_best_s;
      best_xnn += l.count * r.xnn_best_s;
    }
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
  std::printf("load average after: %s\n", load_average().c_str());
  xnn_deinitialize();
  return failures == 0 ? 0 : 1;
}
