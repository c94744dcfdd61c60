// Microbenchmark: tern's packed GEMM (backends/cpu/kernels) against XNNPACK's f32 fully-connected
// operator on the same shapes and the same pthreadpool size. Not a test.
//
//   cpu_gemm_bench [--runs N] [--threads LIST] [--isa scalar|avx2|avx512] [--cputime]
//                  [--kc N] [--ablock BYTES] [--ablock-streaming BYTES] [--streaming-b BYTES]
//                  [--tasks N] [--no-prefetch-next] [MxNxK ...]
//
// Built with -DTERN_BUILD_GEMM_BENCH=ON (target cpu_gemm_bench). Default shapes: the GEMV
// 1x4096x4096 and the GEMMs 128x2048x512, 128x512x2048, 3136x64x576, 784x128x1152 (M x N x K:
// A [M, K], W [N, K]); default threads "1,2"; 60 runs each, the two libraries alternating call by
// call so that load from other processes hits both alike. Prints one row per shape and thread
// count: median (and best) GFLOP/s of each, and for M = 1 the weight bandwidth in GB/s.
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
#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"
#include "bench/kernel_bench_cli.h"

namespace {

using bench_timing::Stats;
using tern::cpu::GemmProblem;

struct Shape {
  int64_t m, n, k;
};

/// "MxNxK" with each > 0, or false.
bool parse_shape(const std::string& text, Shape* s) {
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 ||
      k <= 0) {
    return false;
  }
  *s = {m, n, k};
  return true;
}

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

  const bench_cli::Pool pool_owner(threads);
  pthreadpool_t pool = pool_owner.get();
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

  const std::vector<Stats> times = bench_timing::time_interleaved(
      /*warmup=*/3, runs, /*rotate=*/false,
      {[&] { tern::cpu::packed_gemm(p, pool); }, [&] { xnn_run_operator(op, pool); }});
  double max_diff = 0;
  for (size_t i = 0; i < m * n; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(c_tern[i] - c_xnn[i])));
  }

  const Stats& st_t = times[0];
  const Stats& st_x = times[1];
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
  std::free(packed);
  return max_diff < 1e-3 ? 0 : 1;
}

void noop_task(void*, size_t) {}

/// The pool's own round trip (an empty 2-item parallel call): on a machine where other processes
/// keep the cores busy, waiting for every worker to be scheduled dominates short parallel calls.
void pool_round_trip(int threads, int runs) {
  const bench_cli::Pool pool(threads);
  const Stats st = bench_timing::time_interleaved(
      /*warmup=*/3, runs, /*rotate=*/false,
      {[&] { pthreadpool_parallelize_1d(pool.get(), &noop_task, nullptr, 2, 0); }})[0];
  std::printf("pool round trip (empty parallel call), %d threads: median %.1f us, best %.1f us\n",
              threads, st.median_s * 1e6, st.best_s * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  bench_cli::KernelBenchCli cli("cpu_gemm_bench",
                                "tern's packed GEMM against XNNPACK's f32 fully-connected operator",
                                /*default_runs=*/60, /*default_threads=*/{1, 2});
  tern::cpu::gemm_detail::GemmBlocking& blocking = tern::cpu::gemm_detail::gemm_blocking();
  cli.app.add_option("--kc", blocking.kc_max, "K rows per block")->capture_default_str();
  cli.app.add_option("--ablock", blocking.a_block_bytes, "A block kept in L2 per task, in bytes")
      ->capture_default_str();
  cli.app
      .add_option("--ablock-streaming", blocking.streaming_a_block_bytes,
                  "A block when the packed B exceeds --streaming-b bytes (from the L2 size)")
      ->capture_default_str();
  cli.app
      .add_option("--streaming-b", blocking.streaming_b_bytes,
                  "Packed B bytes above which B counts as streaming (half the L2)")
      ->capture_default_str();
  cli.app.add_option("--tasks", blocking.tasks_per_thread, "At least this many tasks per thread")
      ->capture_default_str();
  bool no_prefetch_next = false;
  cli.app.add_flag("--no-prefetch-next", no_prefetch_next,
                   "M tiles do not fetch the next N tile's B into L2 "
                   "(GemmBlocking::prefetch_next_b)");
  std::vector<std::string> shape_args;
  cli.app
      .add_option("shapes", shape_args,
                  "M x N x K (A [M, K], W [N, K]); default 1x4096x4096 128x2048x512 "
                  "128x512x2048 3136x64x576 784x128x1152")
      ->type_name("MxNxK")
      ->check(CLI::Validator(
          [](std::string& text) {
            Shape s;
            return parse_shape(text, &s) ? std::string() : "not MxNxK with M, N, K > 0: " + text;
          },
          ""));
  if (const int status = cli.parse(argc, argv); status >= 0) return status;
  blocking.prefetch_next_b = !no_prefetch_next;
  std::vector<Shape> shapes;
  for (const std::string& text : shape_args) {
    Shape s;
    parse_shape(text, &s);
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    shapes = {
        {1, 4096, 4096}, {128, 2048, 512}, {128, 512, 2048}, {3136, 64, 576}, {784, 128, 1152}};
  }
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
  cli.print_start("tern ");
  for (int t : cli.threads) {
    if (t > 1) pool_round_trip(t, cli.runs);
  }
  int failures = 0;
  for (const Shape& s : shapes) {
    for (int t : cli.threads) failures += run(s, t, cli.runs);
  }
  cli.print_end();
  xnn_deinitialize();
  return failures == 0 ? 0 : 1;
}
