// Microbenchmark: tern's packed GEMM (backends/cpu/kernels) against XNNPACK's f32 fully-connected
// operator on the same shapes and the same pthreadpool size. Not a test.
//
//   cpu_gemm_bench [--runs N] [--threads LIST] [--isa scalar|avx2|avx512] [--cputime]
//                  [--kc N] [--ablock BYTES] [--tasks N] [MxNxK ...]
//
// Built with -DTERN_BUILD_GEMM_BENCH=ON (target cpu_gemm_bench). Default shapes: the GEMV
// 1x4096x4096 and the GEMMs 128x2048x512, 128x512x2048, 3136x64x576, 784x128x1152 (M x N x K:
// A [M, K], W [N, K]); default threads "1,2"; 60 runs each, the two libraries alternating call by
// call so that load from other processes hits both alike. Prints one row per shape and thread
// count: median (and best) GFLOP/s of each, and for M = 1 the weight bandwidth in GB/s.
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
#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"

namespace {

using tern::cpu::GemmIsa;
using tern::cpu::GemmProblem;

struct Shape {
  int64_t m, n, k;
};

using bench_timing::g_cputime;
using bench_timing::load_average;
using bench_timing::now_seconds;
using bench_timing::parse_list;
using bench_timing::Stats;
using bench_timing::stats_of;

int run(const Shape& s, int threads, int runs) {
  const size_t m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n),
               k = static_cast<size_t>(s.k);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> w(n * k), bias(n), a(m * k), c_tern(m * n), c_xnn(m * n);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : a) v = dist(rng);

  // tern: packed weights in a 64-byte aligned buffer.
  const uint64_t floats = tern::cpu::packed_weight_floats(s.n, s.k);
  float* packed = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
  tern::cpu::pack_fc_weight(w.data(), bias.data(), s.n, s.k, packed);
  GemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.a = a.data();
  p.lda = s.k;
  p.packed = packed;
  p.c = c_tern.data();
  p.ldc = s.n;

  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  // XNNPACK reads up to XNN_EXTRA_BYTES past its input: give it a padded copy of A.
  std::vector<float> a_xnn(m * k + 64);
  std::copy(a.begin(), a.end(), a_xnn.begin());
  xnn_operator_t op = nullptr;
  xnn_status st = xnn_create_fully_connected_nc_f32(k, n, k, n, w.data(), bias.data(),
                                                    -std::numeric_limits<float>::infinity(),
                                                    std::numeric_limits<float>::infinity(), 0, &op);
  if (st != xnn_status_success) {
    std::fprintf(stderr, "xnn_create_fully_connected_nc_f32 failed (%d)\n", st);
    return 1;
  }
  st = xnn_setup_fully_connected_nc_f32(op, m, a_xnn.data(), c_xnn.data(), pool);
  if (st != xnn_status_success) {
    std::fprintf(stderr, "xnn_setup_fully_connected_nc_f32 failed (%d)\n", st);
    return 1;
  }

  const int warmup = 3;
  std::vector<double> t_tern, t_xnn;
  for (int i = 0; i < warmup + runs; ++i) {
    const double t0 = now_seconds();
    tern::cpu::packed_gemm(p, pool);
    const double t1 = now_seconds();
    xnn_run_operator(op, pool);
    const double t2 = now_seconds();
    const double dt = t1 - t0, dx = t2 - t1;
    if (i >= warmup) {
      t_tern.push_back(dt);
      t_xnn.push_back(dx);
    }
  }
  double max_diff = 0;
  for (size_t i = 0; i < m * n; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(c_tern[i] - c_xnn[i])));
  }

  const Stats st_t = stats_of(t_tern), st_x = stats_of(t_xnn);
  const double flops = 2.0 * s.m * s.n * s.k;
  std::printf(
      "%5lld x %5lld x %5lld  %d thr | tern %7.1f GFLOP/s (best %7.1f) | xnnpack %7.1f "
      "(best %7.1f) | tern/xnn %.2fx",
      static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
      threads, flops / st_t.median_s * 1e-9, flops / st_t.best_s * 1e-9,
      flops / st_x.median_s * 1e-9, flops / st_x.best_s * 1e-9, st_x.median_s / st_t.median_s);
  if (s.m == 1) {
    const double bytes = 4.0 * static_cast<double>(floats);
    std::printf(" | weights: tern %.1f GB/s, xnnpack %.1f GB/s", bytes / st_t.median_s * 1e-9,
                4.0 * n * (k + 1) / st_x.median_s * 1e-9);
  }
  std::printf(" | max|diff| %.1e\n", max_diff);
  std::fflush(stdout);

  xnn_delete_operator(op);
  if (pool != nullptr) pthreadpool_destroy(pool);
  std::free(packed);
  return max_diff < 1e-3 ? 0 : 1;
}

void noop_task(void*, size_t) {}

/// The pool's own round trip (an empty 2-item parallel call): on a machine where other processes
/// keep the cores busy, waiting for every worker to be scheduled dominates short parallel calls.
void pool_round_trip(int threads, int runs) {
  pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(threads));
  std::vector<double> samples;
  for (int i = 0; i < 3 + runs; ++i) {
    const double t0 = now_seconds();
    pthreadpool_parallelize_1d(pool, &noop_task, nullptr, 2, 0);
    if (i >= 3) samples.push_back(now_seconds() - t0);
  }
  const Stats st = stats_of(samples);
  std::printf("pool round trip (empty parallel call), %d threads: median %.1f us, best %.1f us\n",
              threads, st.median_s * 1e6, st.best_s * 1e6);
  pthreadpool_destroy(pool);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 60;
  std::vector<int> threads = {1, 2};
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (std::strcmp(arg, "--cputime") == 0) {
      g_cputime = true;
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
      tern::cpu::gemm_detail::gemm_blocking().kc_max = std::atoll(argv[++i]);
    } else if (std::strcmp(arg, "--ablock") == 0 && has_value) {
      tern::cpu::gemm_detail::gemm_blocking().a_block_bytes = std::atoll(argv[++i]);
    } else if (std::strcmp(arg, "--tasks") == 0 && has_value) {
      tern::cpu::gemm_detail::gemm_blocking().tasks_per_thread = std::atoll(argv[++i]);
    } else {
      long long m = 0, n = 0, k = 0;
      if (std::sscanf(arg, "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
        std::fprintf(stderr,
                     "usage: cpu_gemm_bench [--runs N] [--threads 1,2] [--isa ISA] [--cputime] "
                     "[--kc N] [--ablock BYTES] [--tasks N] [MxNxK ...]\n");
        return 2;
      }
      shapes.push_back({m, n, k});
    }
  }
  if (shapes.empty()) {
    shapes = {
        {1, 4096, 4096}, {128, 2048, 512}, {128, 512, 2048}, {3136, 64, 576}, {784, 128, 1152}};
  }
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
  std::printf("tern isa %s, %d runs per row, %s time, load average before: %s\n",
              tern::cpu::gemm_isa_name(tern::cpu::packed_gemm_isa()), runs,
              g_cputime ? "process CPU" : "wall-clock", load_average().c_str());
  for (int t : threads) {
    if (t > 1) pool_round_trip(t, runs);
  }
  int failures = 0;
  for (const Shape& s : shapes) {
    for (int t : threads) failures += run(s, t, runs);
  }
  std::printf("load average after: %s\n", load_average().c_str());
  xnn_deinitialize();
  return failures == 0 ? 0 : 1;
}
