// Timing helpers shared by the kernel microbenchmarks (cpu_gemm_bench, cpu_conv_bench,
// cpu_winograd_bench, cpu_bottleneck_bench): median/best of samples, a wall or CPU clock, calls
// timed interleaved, the load average. Their command line: kernel_bench_cli.h.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench_timing {

struct Stats {
  double median_s, best_s;
};

inline Stats stats_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return {median, samples.front()};
}

/// Wall-clock seconds, or with --cputime this process's CPU seconds (meaningful with one thread
/// only: it leaves out the time the OS gave to other processes, for tuning on a loaded machine).
inline bool g_cputime = false;

inline double now_seconds() {
  if (g_cputime) {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline std::string load_average() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  char buf[128] = {};
  const size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string s(buf, got);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// Times the calls in `fns` interleaved call by call, so that load from other processes hits them
/// alike: `warmup` untimed rounds, then `runs` timed ones, each calling every fn once, in order, or
/// with `rotate` starting one later each round (so that none always runs after the same one).
/// Returns each fn's Stats, in the order of `fns`.
inline std::vector<Stats> time_interleaved(int warmup, int runs, bool rotate,
                                           const std::vector<std::function<void()>>& fns) {
  const size_t n = fns.size();
  std::vector<std::vector<double>> samples(n);
  for (int i = 0; i < warmup + runs; ++i) {
    for (size_t step = 0; step < n; ++step) {
      const size_t which = rotate ? (static_cast<size_t>(i) + step) % n : step;
      const double t0 = now_seconds();
      fns[which]();
      const double t1 = now_seconds();
      if (i >= warmup) samples[which].push_back(t1 - t0);
    }
  }
  std::vector<Stats> stats;
  for (std::vector<double>& s : samples) stats.push_back(stats_of(std::move(s)));
  return stats;
}

}  // namespace bench_timing
