// `tern bench MODEL.pte ...`: latency percentiles, load time, peak RSS, per-step profile and
// Chrome trace. Reports failures by throwing std::runtime_error (see commands.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::cli {

/// Options of `tern bench`.
struct BenchOptions {
  std::string model;
  std::string method;               ///< empty: "forward" if present, else the first method
  uint32_t iterations = 50;         ///< timed executes (at least 1)
  uint32_t warmup = 5;              ///< untimed executes after the first one
  uint32_t threads = 0;             ///< MethodLoadOptions::num_threads (0: backend default)
  bool profile = false;             ///< print the per-step and per-op tables
  std::string trace;                ///< write a Chrome trace JSON here (empty: none)
  std::string json;                 ///< write a JSON summary here (empty: none)
  std::vector<std::string> inputs;  ///< .npy files, one per input; empty: generated
  bool ones = false;                ///< generated inputs are ones (else seeded random)
  uint64_t seed = 0;                ///< seed of the random inputs
};

/// Runs the benchmark and prints its report on stdout; returns the exit code (0).
int cmd_bench(const BenchOptions& options);

}  // namespace tern::cli
