// The kernel microbenchmarks' command line and run scaffolding (cpu_gemm_bench, cpu_conv_bench,
// cpu_winograd_bench, cpu_bottleneck_bench), on CLI11 (Debian's libcli11-dev, as tools/cli):
//
//   KernelBenchCli cli("cpu_conv_bench", "...", /*default_runs=*/20, /*default_threads=*/{1, 2});
//   cli.add_layer_filter();                      // --layer, for the benches with named layers
//   cli.app.add_flag("--residual", residual, "...");  // the bench's own flags
//   if (const int status = cli.parse(argc, argv); status >= 0) return status;
//
// The options they share: --runs N (timed runs per row), --threads LIST ("1,2": a row per thread
// count), --isa scalar|avx2|avx512 (force tern's kernels onto one ISA), --cputime (time with this
// process's CPU clock, see bench_timing.h), and with add_layer_filter() --layer NAME-SUBSTRING.
// Also the line each bench starts and ends with (settings, load average) and a pool per thread
// count.
#pragma once

#include <pthreadpool.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/packed_gemm.h"
#include "bench/bench_timing.h"

namespace bench_cli {

class KernelBenchCli {
 public:
  /// `name`: the program's name in --help; `runs_names`: the CLI11 names of the run count
  /// ("--runs"; cpu_bottleneck_bench has always called it --reps).
  KernelBenchCli(const std::string& name, const std::string& description, int default_runs,
                 std::vector<int> default_threads, const std::string& runs_names = "--runs")
      : app(description, name), runs(default_runs), threads(std::move(default_threads)) {
    app.add_option(runs_names, runs, "Timed runs per row")
        ->check(CLI::Range(1, 1 << 30))
        ->capture_default_str();
    std::string thread_list;
    for (size_t i = 0; i < threads.size(); ++i) {
      thread_list += (i ? "," : "") + std::to_string(threads[i]);
    }
    app.add_option("--threads", threads,
                   "Pool sizes, comma-separated: the rows again for each (1: no pool, the "
                   "caller's thread)")
        ->delimiter(',')
        ->allow_extra_args(false)  // one LIST per --threads: positional arguments may follow
        ->check(CLI::Range(1, 4096))
        ->default_str(thread_list);
    app.add_option("--isa", isa_, "Force tern's kernels onto this ISA (default: the best one)")
        ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
    app.add_flag("--cputime", bench_timing::g_cputime,
                 "Time with this process's CPU clock instead of the wall clock (one thread only: "
                 "leaves out the time other processes got)");
  }

  CLI::App app;
  int runs;
  std::vector<int> threads;

  /// Adds --layer NAME-SUBSTRING: only the layers whose name contains it (selected()).
  void add_layer_filter() {
    app.add_option("--layer", layer_, "Only the layers whose name contains this")
        ->type_name("NAME-SUBSTRING");
  }

  bool selected(const char* name) const {
    return layer_.empty() || std::string(name).find(layer_) != std::string::npos;
  }

  /// Parses the command line, then forces --isa. Returns -1 to go on, else main's exit status:
  /// 0 after --help, 2 after a usage error (printed with the usage hint) or an ISA this build or
  /// CPU cannot run.
  int parse(int argc, char** argv) {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int status = app.exit(e);
      return status == 0 ? 0 : 2;
    }
    if (!isa_.empty()) {
      const tern::cpu::GemmIsa isa = isa_ == "avx512" ? tern::cpu::GemmIsa::Avx512
                                     : isa_ == "avx2" ? tern::cpu::GemmIsa::Avx2
                                                      : tern::cpu::GemmIsa::Scalar;
      if (!tern::cpu::packed_gemm_force_isa(isa)) {
        std::fprintf(stderr, "isa %s is not supported here\n", isa_.c_str());
        return 2;
      }
    }
    return -1;
  }

  /// The settings line a bench starts with: `before` "isa I, R runs per row, wall-clock time"
  /// `after` ", load average before: L".
  void print_start(const std::string& before, const std::string& after = "") const {
    std::printf("%sisa %s, %d runs per row, %s time%s, load average before: %s\n", before.c_str(),
                tern::cpu::gemm_isa_name(tern::cpu::packed_gemm_isa()), runs,
                bench_timing::g_cputime ? "process CPU" : "wall-clock", after.c_str(),
                bench_timing::load_average().c_str());
  }

  /// The line a bench ends with.
  static void print_end() {
    std::printf("load average after: %s\n", bench_timing::load_average().c_str());
  }

 private:
  std::string isa_, layer_;
};

/// A pthreadpool of `threads` threads, as the delegate makes one (none for 1: the caller's thread).
class Pool {
 public:
  explicit Pool(int threads)
      : pool_(threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr) {}
  ~Pool() {
    if (pool_ != nullptr) pthreadpool_destroy(pool_);
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  pthreadpool_t get() const { return pool_; }

 private:
  pthreadpool_t pool_;
};

}  // namespace bench_cli
