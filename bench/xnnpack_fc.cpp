// Raw XNNPACK fully-connected layer timing, the baseline for tern's cpu delegate overhead.
//
//   xnnpack_fc BATCH IN OUT THREADS RUNS WARMUP
//
// Creates one f32 fully-connected operator (random weights and bias, fixed seed), sets it up once,
// then times xnn_run_operator WARMUP + RUNS times on a pthreadpool of THREADS threads and
// prints one JSON object: {"median_ms":..., "min_ms":..., "p90_ms":..., "max_ms":..., "runs":N}.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

namespace {

int fail(const char* what, int status) {
  std::fprintf(stderr, "xnnpack_fc: %s failed (status %d)\n", what, status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: xnnpack_fc BATCH IN OUT THREADS RUNS WARMUP\n");
    return 2;
  }
  const size_t batch = std::strtoull(argv[1], nullptr, 10);
  const size_t in = std::strtoull(argv[2], nullptr, 10);
  const size_t out = std::strtoull(argv[3], nullptr, 10);
  const size_t threads = std::strtoull(argv[4], nullptr, 10);
  const int runs = std::atoi(argv[5]);
  const int warmup = std::atoi(argv[6]);
  if (batch == 0 || in == 0 || out == 0 || runs <= 0 || warmup < 0) {
    std::fprintf(stderr, "xnnpack_fc: sizes and RUNS must be positive\n");
    return 2;
  }

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> weights(in * out), bias(out), input(batch * in), output(batch * out);
  for (float& v : weights) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : input) v = dist(rng);

  xnn_status status = xnn_initialize(nullptr);
  if (status != xnn_status_success) return fail("xnn_initialize", status);
  pthreadpool_t pool = threads > 1 ? pthreadpool_create(threads) : nullptr;
  xnn_operator_t op = nullptr;
  status = xnn_create_fully_connected_nc_f32(in, out, in, out, weights.data(), bias.data(),
                                             -std::numeric_limits<float>::infinity(),
                                             std::numeric_limits<float>::infinity(), 0, &op);
  if (status != xnn_status_success) return fail("xnn_create_fully_connected_nc_f32", status);
  status = xnn_setup_fully_connected_nc_f32(op, batch, input.data(), output.data(), pool);
  if (status != xnn_status_success) return fail("xnn_setup_fully_connected_nc_f32", status);

  std::vector<double> samples;
  for (int i = 0; i < warmup + runs; ++i) {
    const auto a = std::chrono::steady_clock::now();
    status = xnn_run_operator(op, pool);
    const auto b = std::chrono::steady_clock::now();
    if (status != xnn_status_success) return fail("xnn_run_operator", status);
    if (i >= warmup) samples.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  // Check the output against a naive dot product for row 0, column 0 (a sanity check only).
  double ref = bias[0];
  for (size_t k = 0; k < in; ++k) ref += static_cast<double>(input[k]) * weights[k];
  if (std::fabs(ref - output[0]) > 1e-3) {
    std::fprintf(stderr, "xnnpack_fc: output[0] = %f, expected %f\n", output[0], ref);
    return 1;
  }

  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  const size_t rank = std::max<size_t>(1, (9 * n + 9) / 10);
  std::printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"p90_ms\": %.6f, \"max_ms\": %.6f, \"runs\": %zu, "
              "\"threads\": %zu}\n",
              median, samples.front(), samples[rank - 1], samples.back(), n, threads);
  xnn_delete_operator(op);
  if (pool != nullptr) pthreadpool_destroy(pool);
  xnn_deinitialize();
  return 0;
}
