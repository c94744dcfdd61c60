// Microbenchmark of the vectorized GELU alone (portable::gelu_f32: the exact erfc form and the
// tanh form of runtime/kernels/util/vector_math.h, the code the portable gelu kernel and the cpu
// backend's GEMM epilogues run): ns per element over a cache-resident array, one thread, for
// each instruction-set variant this machine runs. Not a test; build against a configured build
// tree, e.g. build:
//
//   g++ -O2 -std=c++17 -I. bench/gelu_micro.cpp build/runtime/kernels/libtern_kernel_util.a
//       -o /tmp/gelu_micro   (one command)
//   /tmp/gelu_micro [n=4096] [reps=30]
//
// Prints, per form and variant, the best over reps of 200 passes over n floats spread over
// [-6.6, 6.6] (both of the erfc form's sign cases, and the tanh form's).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/bench_timing.h"
#include "runtime/kernels/util/gelu_array.h"
#include "runtime/kernels/util/simd_dispatch.h"

using tern::portable::SimdLevel;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 30;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = (i % 97) * 0.137f - 6.6f;
  const struct { SimdLevel level; const char* name; } levels[] = {
      {SimdLevel::Baseline, "baseline"}, {SimdLevel::Avx2, "avx2"}, {SimdLevel::Avx512, "avx512"}};
  for (bool tanh_form : {false, true}) {
    for (const auto& l : levels) {
      if (tern::portable::simd_level_supported() < l.level) continue;
      tern::portable::simd_level_cap() = l.level;
      const bench_timing::Stats st = bench_timing::time_interleaved(0, reps, false, {[&] {
        for (int k = 0; k < 200; ++k) tern::portable::gelu_f32(tanh_form, x.data(), y.data(), n);
      }})[0];
      std::printf("gelu %-5s %-8s %.3f ns/element\n", tanh_form ? "tanh" : "erf", l.name,
                  st.best_s * 1e9 / (200.0 * static_cast<double>(n)));
    }
  }
  return 0;
}
