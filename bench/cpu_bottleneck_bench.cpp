// Microbenchmark (not a test): tern's fused inverted bottleneck (bottleneck_nhwc) against the
// same block run unfused on tern's kernels (the expand GEMM over the pool, the depthwise rows
// over the pool, the project GEMM over the pool, each tensor written out in full), on the
// blocks of MobileNetV2 (224x224 input, batch 1), the two alternating call by call. Prints per
// block the median time of each and of the unfused parts, and the speedup; per thread count.
//   cpu_bottleneck_bench [--threads LIST] [--reps R] [--band FLOATS] [--isa ISA] [--cputime]
// (--runs is --reps; --help lists the options.)
#include <pthreadpool.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cpu/kernels/bottleneck.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"
#include "bench/kernel_bench_cli.h"

namespace {

using bench_timing::now_seconds;
using bench_timing::stats_of;
using tern::cpu::BottleneckProblem;

struct Block {
  const char* name;
  int64_t hw, c, e, o, stride;
  bool expand, residual;
};

const Block kBlocks[] = {
    {"112 32->16 (no expand)", 112, 32, 32, 16, 1, false, false},
    {"112 16->96->24 s2", 112, 16, 96, 24, 2, true, false},
    {"56 24->144->24 res", 56, 24, 144, 24, 1, true, true},
    {"56 24->144->32 s2", 56, 24, 144, 32, 2, true, false},
    {"28 32->192->32 res", 28, 32, 192, 32, 1, true, true},
    {"14 64->384->64 res", 14, 64, 384, 64, 1, true, true},
    {"14 96->576->96 res", 14, 96, 576, 96, 1, true, true},
    {"7 160->960->160 res", 7, 160, 960, 160, 1, true, true},
};

/// n floats starting on a 64-byte boundary (as in a tern arena), deterministic values in
/// [-0.5, 0.5).
struct Buf {
  explicit Buf(size_t n, unsigned seed = 0) : v(n + 16) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(v.data());
    p = v.data() + ((64 - a % 64) % 64) / sizeof(float);
    for (size_t i = 0; i < n; ++i) {
      p[i] = static_cast<float>((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f;
    }
  }
  float* data() { return p; }
  std::vector<float> v;
  float* p;
};

struct DwTask {
  const BottleneckProblem* p;
  const float* e;
  float* d;
};

void dw_rows(void* ctx, size_t oy) {
  const DwTask& t = *static_cast<const DwTask*>(ctx);
  const BottleneckProblem& p = *t.p;
  const float* rows[3];
  for (int ky = 0; ky < 3; ++ky) {
    const int64_t iy = static_cast<int64_t>(oy) * p.stride_h - 1 + ky;
    rows[ky] = iy >= 0 && iy < p.in_h ? t.e + iy * p.in_w * p.exp_c : nullptr;
  }
  tern::cpu::DepthwiseRow r;
  r.rows = rows;
  r.in_w = p.in_w;
  r.channels = p.exp_c;
  r.out_w = p.out_w;
  r.stride_w = p.stride_w;
  r.w = p.dw_weight;
  r.bias = p.dw_bias;
  r.epi = p.depthwise;
  r.out = t.d + static_cast<int64_t>(oy) * p.out_w * p.exp_c;
  tern::cpu::depthwise_row(r);
}

/// Every block on `threads` threads, `reps` times each: a row per block and their sum.
void run_blocks(int threads, int reps) {
  const bench_cli::Pool pool_owner(threads);
  pthreadpool_t pool = pool_owner.get();
  std::printf("threads %d\n", threads);
  std::printf("%-26s %9s %9s %7s | %8s %8s %8s\n", "block", "fused us", "split us", "speedup",
              "expand", "dw", "project");
  double total_f = 0, total_s = 0;
  for (const Block& b : kBlocks) {
    BottleneckProblem p;
    p.batch = 1;
    p.in_h = p.in_w = b.hw;
    p.in_c = b.c;
    p.exp_c = b.e;
    p.out_h = p.out_w = (b.hw - 1) / b.stride + 1;
    p.out_c = b.o;
    p.stride_h = p.stride_w = b.stride;
    Buf x(static_cast<size_t>(b.hw * b.hw * b.c), 1);
    Buf we(b.e * b.c, 2), wp(b.o * b.e, 3);
    Buf pe(tern::cpu::packed_weight_floats(b.e, b.c));
    Buf pp(tern::cpu::packed_weight_floats(b.o, b.e));
    tern::cpu::pack_fc_weight(we.data(), nullptr, b.e, b.c, pe.data());
    tern::cpu::pack_fc_weight(wp.data(), nullptr, b.o, b.e, pp.data());
    Buf wd(9 * b.e, 4), bd(b.e, 5);
    const int64_t out_px = p.out_h * p.out_w;
    Buf y(out_px * b.o), res(out_px * b.o, 6);
    Buf e(b.hw * b.hw * b.e), d(out_px * b.e);
    p.x = x.data();
    p.expand_packed = b.expand ? pe.data() : nullptr;
    p.expand.lo = 0;
    p.expand.hi = 6;
    p.dw_weight = wd.data();
    p.dw_bias = bd.data();
    p.depthwise.lo = 0;
    p.depthwise.hi = 6;
    p.project_packed = pp.data();
    p.residual = b.residual ? res.data() : nullptr;
    p.y = y.data();
    Buf scratch(tern::cpu::bottleneck_scratch_floats(p, threads));
    std::vector<double> tf, ts, t_e, t_d, t_p;
    for (int r = 0; r < reps; ++r) {
      double t0 = now_seconds();
      tern::cpu::bottleneck_nhwc(p, scratch.data(), pool);
      double t1 = now_seconds();
      tf.push_back(t1 - t0);
      // Unfused on tern's kernels.
      t0 = now_seconds();
      const float* ein = x.data();
      if (b.expand) {
        tern::cpu::GemmProblem g;
        g.m = b.hw * b.hw; g.n = b.e; g.k = b.c; g.a = x.data(); g.lda = b.c;
        g.packed = pe.data(); g.c = e.data(); g.ldc = b.e; g.out_min = 0; g.out_max = 6;
        tern::cpu::packed_gemm(g, pool);
        ein = e.data();
      }
      const double ta = now_seconds();
      DwTask dt{&p, ein, d.data()};
      if (pool) pthreadpool_parallelize_1d(pool, &dw_rows, &dt, p.out_h, 0);
      else for (int64_t oy = 0; oy < p.out_h; ++oy) dw_rows(&dt, oy);
      const double tb = now_seconds();
      tern::cpu::GemmProblem g;
      g.m = out_px; g.n = b.o; g.k = b.e; g.a = d.data(); g.lda = b.e; g.packed = pp.data();
      g.c = y.data(); g.ldc = b.o; g.residual = p.residual;
      tern::cpu::packed_gemm(g, pool);
      t1 = now_seconds();
      ts.push_back(t1 - t0);
      t_e.push_back(ta - t0);
      t_d.push_back(tb - ta);
      t_p.push_back(t1 - tb);
    }
    const double f = stats_of(tf).median_s * 1e6, s = stats_of(ts).median_s * 1e6;
    total_f += f;
    total_s += s;
    std::printf("%-26s %9.1f %9.1f %7.2f | %8.1f %8.1f %8.1f\n", b.name, f, s, s / f,
                stats_of(t_e).median_s * 1e6, stats_of(t_d).median_s * 1e6,
                stats_of(t_p).median_s * 1e6);
  }
  std::printf("%-26s %9.1f %9.1f %7.2f\n", "sum", total_f, total_s, total_s / total_f);
}

}  // namespace

int main(int argc, char** argv) {
  bench_cli::KernelBenchCli cli(
      "cpu_bottleneck_bench",
      "tern's fused inverted bottleneck against the same block stage by stage on MobileNetV2's "
      "blocks",
      /*default_runs=*/200, /*default_threads=*/{2}, /*runs_names=*/"--reps,--runs");
  cli.app
      .add_option("--band", tern::cpu::bottleneck_band_floats(),
                  "Expanded input floats a thread's band of output rows may need")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  if (const int status = cli.parse(argc, argv); status >= 0) return status;
  cli.print_start("fused bottleneck vs stage by stage, band " +
                  std::to_string(tern::cpu::bottleneck_band_floats()) + " floats, tern ");
  for (int t : cli.threads) run_blocks(t, cli.runs);
  cli.print_end();
  return 0;
}
