// Timing helpers shared by the kernel microbenchmarks (cpu_gemm_bench, cpu_conv_bench):
// median/best of samples, a wall or CPU clock, the load average, and "1,2" list parsing.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
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

inline std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p != '\0';) {
    out.push_back(std::atoi(p));
    while (*p != '\0' && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace bench_timing
