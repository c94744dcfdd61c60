// Microbenchmark (not a test): tern's Winograd convolution (winograd_conv_nhwc; F(2x2, 3x3), or
// F(4x4, 3x3) with --tile 4) against its implicit-GEMM convolution (packed_conv_nhwc) on
// ResNet-18's 3x3 stride-1 layers (224x224 input, batch 1 unless --batch, fused ReLU) and on
// three larger ones of VGG / U-Net (count 0: not in the total), same pool size, the two
// alternating call by call. Prints per layer the median and fastest time of each, the speedup,
// and the largest difference between the two outputs relative to the largest |output|; then one
// ResNet-18's worth of these layers.
#include <pthreadpool.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/packed_conv.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "backends/cpu/kernels/winograd_transform.h"
#include "bench/bench_timing.h"
#include "bench/kernel_bench_cli.h"

namespace {

using bench_timing::Stats;

struct Layer {
  const char* name;
  int64_t hw, c, o;
  int count;  // how many times ResNet-18 has it
  double flops() const { return 2.0 * hw * hw * o * 9.0 * static_cast<double>(c); }
};

const Layer kLayers[] = {
    {"3x3 64->64 @56", 56, 64, 64, 4},
    {"3x3 128->128 @28", 28, 128, 128, 3},
    {"3x3 256->256 @14", 14, 256, 256, 3},
    {"3x3 512->512 @7", 7, 512, 512, 3},
    {"3x3 64->64 @112", 112, 64, 64, 0},
    {"3x3 256->256 @56", 56, 256, 256, 0},
    {"3x3 512->512 @28", 28, 512, 512, 0},
    {"3x3 1280->1280 @8", 8, 1280, 1280, 0},  // Stable Diffusion's UNet at 256 px
    {"3x3 1280->1280 @16", 16, 1280, 1280, 0},
};

float* aligned_floats(uint64_t n) {
  return static_cast<float*>(std::aligned_alloc(64, ((n * 4 + 63) / 64) * 64 + 64));
}

struct Result {
  bool ok = false;
  double direct_s = 0, winograd_s = 0, direct_best_s = 0, winograd_best_s = 0;
};

Result run(const Layer& l, int64_t batch, int threads, int runs, bool residual,
           tern::cpu::WinogradTile tile) {
  Result result;
  const int64_t hw = l.hw, c = l.c, o = l.o;
  const size_t x_floats = static_cast<size_t>(batch * hw * hw * c),
               y_floats = static_cast<size_t>(batch * hw * hw * o);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> x(x_floats), w(static_cast<size_t>(o * c * 9)), bias(static_cast<size_t>(o)),
      res(y_floats), y_direct(y_floats), y_winograd(y_floats);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : res) v = dist(rng);

  // packed_conv_nhwc wants [O, KH, KW, C]; w is PyTorch's [O, C, KH, KW].
  std::vector<float> w_ohwc(w.size());
  for (int64_t oo = 0; oo < o; ++oo)
    for (int64_t cc = 0; cc < c; ++cc)
      for (int64_t t = 0; t < 9; ++t) w_ohwc[(oo * 9 + t) * c + cc] = w[(oo * c + cc) * 9 + t];
  const uint64_t direct_floats = tern::cpu::packed_weight_floats(o, 9 * c);
  float* direct_packed = aligned_floats(direct_floats);
  tern::cpu::pack_fc_weight(w_ohwc.data(), bias.data(), o, 9 * c, direct_packed);
  float* wino_packed = aligned_floats(tern::cpu::winograd_weight_floats(o, c, tile));
  tern::cpu::pack_winograd_weight(w.data(), bias.data(), o, c, wino_packed, tile);

  tern::cpu::ConvProblem d;
  d.batch = batch;
  d.in_h = d.in_w = d.out_h = d.out_w = hw;
  d.in_c = c;
  d.out_c = o;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_left = 1;
  d.x = x.data();
  d.packed = direct_packed;
  d.y = y_direct.data();
  d.residual = residual ? res.data() : nullptr;
  d.out_min = 0.0f;
  d.out_max = std::numeric_limits<float>::infinity();

  tern::cpu::WinogradProblem p;
  p.batch = batch;
  p.in_h = p.in_w = p.out_h = p.out_w = hw;
  p.in_c = c;
  p.out_c = o;
  p.pad_top = p.pad_left = 1;
  p.x = x.data();
  p.packed = wino_packed;
  p.tile = tile;
  p.y = y_winograd.data();
  p.residual = d.residual;
  p.out_min = 0.0f;
  p.out_max = std::numeric_limits<float>::infinity();
  const uint64_t scratch_floats = tern::cpu::winograd_scratch_floats(p, threads);
  float* scratch = aligned_floats(scratch_floats);

  const bench_cli::Pool pool_owner(threads);
  pthreadpool_t pool = pool_owner.get();
  // Alternate which runs first, so neither always follows the other.
  const std::vector<Stats> times = bench_timing::time_interleaved(
      /*warmup=*/2, runs, /*rotate=*/true,
      {[&] { tern::cpu::winograd_conv_nhwc(p, scratch, pool); },
       [&] { tern::cpu::packed_conv_nhwc(d, pool); }});
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < y_floats; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(y_direct[i] - y_winograd[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(y_direct[i])));
  }
  const double rel = max_diff / std::max(max_abs, 1e-30);

  const Stats& s_w = times[0];
  const Stats& s_d = times[1];
  std::printf(
      "%-18s x%d %d thr | packed_conv %8.1f us (best %8.1f) = %6.1f GFLOP/s | winograd %8.1f us "
      "(best %8.1f) = %6.1f eff. GFLOP/s | speedup %.2fx (best %.2fx) | scratch %5.0f KiB | "
      "max|diff|/max|y| %.1e\n",
      l.name, l.count, threads, s_d.median_s * 1e6, s_d.best_s * 1e6,
      batch * l.flops() / s_d.median_s * 1e-9, s_w.median_s * 1e6, s_w.best_s * 1e6,
      batch * l.flops() / s_w.median_s * 1e-9, s_d.median_s / s_w.median_s, s_d.best_s / s_w.best_s,
      scratch_floats * 4.0 / 1024.0, rel);
  std::fflush(stdout);

  std::free(direct_packed);
  std::free(wino_packed);
  std::free(scratch);
  result.ok = rel < 1e-4;
  result.direct_s = s_d.median_s;
  result.winograd_s = s_w.median_s;
  result.direct_best_s = s_d.best_s;
  result.winograd_best_s = s_w.best_s;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  bench_cli::KernelBenchCli cli(
      "cpu_winograd_bench",
      "tern's Winograd conv against its implicit-GEMM conv on ResNet-18's 3x3/1 layers",
      /*default_runs=*/30, /*default_threads=*/{1, 2});
  cli.add_layer_filter();
  int64_t batch = 1;
  cli.app.add_option("--batch", batch, "Images per call")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  int tile_side = 2;
  cli.app.add_option("--tile", tile_side, "Winograd outputs per tile side: 2 = F(2x2,3x3), 4 = F(4x4,3x3)")
      ->check(CLI::IsMember({2, 4}))
      ->capture_default_str();
  bool residual = false;
  cli.app.add_flag("--residual", residual, "Fuse a residual add into both convs");
  tern::cpu::winograd_detail::WinogradBlocking& blocking =
      tern::cpu::winograd_detail::winograd_blocking();
  cli.app.add_option("--kc", blocking.kc_max, "Input channels per K block")->capture_default_str();
  cli.app
      .add_option("--block-bytes", blocking.block_bytes,
                  "A task's V + M for one block of tiles (L2), in bytes")
      ->capture_default_str();
  cli.app
      .add_option("--large-u", blocking.large_u_bytes,
                  "A task's share of U above which blocks take --large-u-block bytes")
      ->capture_default_str();
  cli.app
      .add_option("--large-u-block", blocking.large_u_block_bytes,
                  "Block bytes of a task with a large share of U")
      ->capture_default_str();
  cli.app
      .add_option("--min-tiles", blocking.min_tiles_per_part,
                  "Fewer tiles per thread: split out_c across threads")
      ->capture_default_str();
  if (const int status = cli.parse(argc, argv); status >= 0) return status;
  const tern::cpu::WinogradTile tile =
      tile_side == 4 ? tern::cpu::WinogradTile::F4x4 : tern::cpu::WinogradTile::F2x2;
  cli.print_start("winograd F(" + std::to_string(tile_side) + "x" + std::to_string(tile_side) +
                      ", 3x3) vs packed_conv, batch " + std::to_string(batch) + ", ",
                  ", kc_max " + std::to_string(blocking.kc_max) + ", block " +
                      std::to_string(blocking.block_bytes >> 10) + " KiB, min tiles/part " +
                      std::to_string(blocking.min_tiles_per_part) +
                      (residual ? ", fused residual" : ""));
  int failures = 0;
  for (int t : cli.threads) {
    double direct = 0, wino = 0, direct_best = 0, wino_best = 0;
    for (const Layer& l : kLayers) {
      if (!cli.selected(l.name)) continue;
      const Result r = run(l, batch, t, cli.runs, residual, tile);
      if (!r.ok) ++failures;
      direct += l.count * r.direct_s;
      wino += l.count * r.winograd_s;
      direct_best += l.count * r.direct_best_s;
      wino_best += l.count * r.winograd_best_s;
    }
    std::printf(
        "TOTAL (ResNet-18's 3x3/1 layers, each times its count) %d thr | packed_conv %.3f ms | "
        "winograd %.3f ms | speedup %.2fx | fastest runs %.3f vs %.3f ms = %.2fx\n",
        t, direct * 1e3, wino * 1e3, direct / wino, direct_best * 1e3, wino_best * 1e3,
        direct_best / wino_best);
  }
  cli.print_end();
  return failures == 0 ? 0 : 1;
}
