#include "backends/cpu/kernels/layer_norm_rows.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

constexpr int kLanes = 16;
/// Rows per pool task: enough work per task to pay for the dispatch.
constexpr int64_t kMinFloatsPerTask = 8192;

float lane_sum(const float (&v)[kLanes]) {
  float s[kLanes / 2];
  for (int l = 0; l < kLanes / 2; ++l) s[l] = v[l] + v[l + kLanes / 2];
  float t[kLanes / 4];
  for (int l = 0; l < kLanes / 4; ++l) t[l] = s[l] + s[l + kLanes / 4];
  return (t[0] + t[2]) + (t[1] + t[3]);
}

void rms_normalize_row(const float* x, float* y, int64_t n, const float* gamma, float eps) {
  float sq[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) sq[l] += x[i + l] * x[i + l];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i] * x[i];
  const float scale = 1.0f / std::sqrt((lane_sum(sq) + tail) / static_cast<float>(n) + eps);
  for (i = 0; i < n; ++i) y[i] = x[i] * scale * gamma[i];  // y may be x: read, then written
}

void normalize_row(const float* x, float* y, int64_t n, const float* gamma, const float* beta,
                   float eps) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  const float mean = (lane_sum(acc) + tail) / static_cast<float>(n);
  float sq[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - mean;
      sq[l] += d * d;
    }
  }
  tail = 0.0f;
  for (; i < n; ++i) tail += (x[i] - mean) * (x[i] - mean);
  const float var = (lane_sum(sq) + tail) / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (i = 0; i + kLanes <= n; i += kLanes) {
    float block[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      block[l] = (x[i + l] - mean) * rstd * gamma[i + l] + beta[i + l];
    }
    std::memcpy(y + i, block, sizeof(block));  // y may be x: each lane read before written
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

struct Task {
  const LayerNormProblem* p;
  int64_t rows_per_task;
};

void band(void* context, size_t index) {
  const Task& t = *static_cast<const Task*>(context);
  const LayerNormProblem& p = *t.p;
  const int64_t first = static_cast<int64_t>(index) * t.rows_per_task;
  const int64_t last = first + t.rows_per_task < p.rows ? first + t.rows_per_task : p.rows;
  for (int64_t r = first; r < last; ++r) {
    if (p.rms) {
      rms_normalize_row(p.x + r * p.cols, p.y + r * p.cols, p.cols, p.gamma, p.eps);
    } else {
      normalize_row(p.x + r * p.cols, p.y + r * p.cols, p.cols, p.gamma, p.beta, p.eps);
    }
  }
}

}  // namespace

void layer_norm_rows(const LayerNormProblem& p, pthreadpool_t pool) {
  if (p.rows <= 0 || p.cols <= 0) return;
  Task t{&p, (kMinFloatsPerTask + p.cols - 1) / p.cols};
  const int64_t tasks = (p.rows + t.rows_per_task - 1) / t.rows_per_task;
  if (pool == nullptr || tasks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t i = 0; i < tasks; ++i) band(&t, static_cast<size_t>(i));
    return;
  }
  pthreadpool_parallelize_1d(pool, &band, &t, static_cast<size_t>(tasks), kPoolFlags);
}

}  // namespace tern::cpu
