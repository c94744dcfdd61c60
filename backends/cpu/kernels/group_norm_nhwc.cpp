#include "backends/cpu/kernels/group_norm_nhwc.h"

#include <cmath>
#include <cstdint>

#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Bands of pixels per sample: the unit of work of each pass (sums of a band are kept apart in
/// scratch, so the number is fixed whatever the pool).
constexpr int64_t kBands = 8;

int64_t bands_of(const GroupNormProblem& p) { return p.pixels < kBands ? p.pixels : kBands; }

enum class Pass { Sum, Deviation, Apply };

struct Task {
  const GroupNormProblem* p;
  Pass pass;
  int64_t bands;
  float* sums;         ///< [batch, bands, channels]
  const float* shift;  ///< [batch, channels]: Deviation: the channel's group mean; Apply: shift
  const float* scale;  ///< [batch, channels] (Apply)
};

void run_band(void* context, size_t index) {
  const Task& t = *static_cast<const Task*>(context);
  const GroupNormProblem& p = *t.p;
  const int64_t n = static_cast<int64_t>(index) / t.bands;
  const int64_t b = static_cast<int64_t>(index) % t.bands;
  const int64_t first = p.pixels * b / t.bands, last = p.pixels * (b + 1) / t.bands;
  const int64_t c = p.channels;
  const float* x = p.x + n * p.pixels * c;
  if (t.pass == Pass::Apply) {
    const float* scale = t.scale + n * c;
    const float* shift = t.shift + n * c;
    float* y = p.y + n * p.pixels * c;
    for (int64_t px = first; px < last; ++px) {
      const float* xr = x + px * c;
      float* yr = y + px * c;
      for (int64_t i = 0; i < c; ++i) yr[i] = xr[i] * scale[i] + shift[i];
    }
    return;
  }
  float* sums = t.sums + (n * t.bands + b) * c;
  for (int64_t i = 0; i < c; ++i) sums[i] = 0.0f;
  if (t.pass == Pass::Sum) {
    for (int64_t px = first; px < last; ++px) {
      const float* xr = x + px * c;
      for (int64_t i = 0; i < c; ++i) sums[i] += xr[i];
    }
    return;
  }
  const float* mean = t.shift + n * c;
  for (int64_t px = first; px < last; ++px) {
    const float* xr = x + px * c;
    for (int64_t i = 0; i < c; ++i) {
      const float d = xr[i] - mean[i];
      sums[i] += d * d;
    }
  }
}

void run(Task* t, pthreadpool_t pool) {
  const size_t tasks = static_cast<size_t>(t->p->batch * t->bands);
  if (pool == nullptr || tasks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    for (size_t i = 0; i < tasks; ++i) run_band(t, i);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_band, t, tasks, kPoolFlags);
}

/// The per-group totals of sums [bands, channels] of sample n, divided by the group's count,
/// written per channel into out [channels].
void group_means(const GroupNormProblem& p, const float* sums, int64_t bands, float* out,
                 double* group_out) {
  const int64_t per = p.channels / p.groups;
  const double count = static_cast<double>(p.pixels) * static_cast<double>(per);
  for (int64_t g = 0; g < p.groups; ++g) {
    double total = 0.0;
    for (int64_t b = 0; b < bands; ++b) {
      for (int64_t i = g * per; i < (g + 1) * per; ++i) total += sums[b * p.channels + i];
    }
    group_out[g] = total / count;
    for (int64_t i = g * per; i < (g + 1) * per; ++i) out[i] = static_cast<float>(group_out[g]);
  }
}

}  // namespace

uint64_t group_norm_scratch_floats(const GroupNormProblem& p) {
  if (p.batch <= 0 || p.pixels <= 0 || p.channels <= 0) return 0;
  // sums [batch, bands, C], shift and scale [batch, C], the groups' means and variances in
  // double (2 floats each) [batch, 2, G].
  const uint64_t b = static_cast<uint64_t>(p.batch), c = static_cast<uint64_t>(p.channels);
  // One more float: the doubles start on an 8-byte boundary.
  return b * (static_cast<uint64_t>(bands_of(p)) * c + 2 * c + 4 * static_cast<uint64_t>(p.groups)) +
         1;
}

void group_norm_nhwc(const GroupNormProblem& p, float* scratch, pthreadpool_t pool) {
  if (p.batch <= 0 || p.pixels <= 0 || p.channels <= 0) return;
  const int64_t bands = bands_of(p), c = p.channels;
  float* sums = scratch;
  float* shift = sums + p.batch * bands * c;
  float* scale = shift + p.batch * c;
  float* after = scale + p.batch * c;
  if ((reinterpret_cast<uintptr_t>(after) & (sizeof(double) - 1)) != 0) ++after;
  double* stats = reinterpret_cast<double*>(after);  // [batch, 2, G]
  Task t{&p, Pass::Sum, bands, sums, shift, scale};
  run(&t, pool);
  for (int64_t n = 0; n < p.batch; ++n) {
    group_means(p, sums + n * bands * c, bands, shift + n * c, stats + n * 2 * p.groups);
  }
  t.pass = Pass::Deviation;
  run(&t, pool);
  const int64_t per = c / p.groups;
  for (int64_t n = 0; n < p.batch; ++n) {
    double* mean = stats + n * 2 * p.groups;
    double* var = mean + p.groups;
    group_means(p, sums + n * bands * c, bands, scale + n * c, var);
    for (int64_t g = 0; g < p.groups; ++g) {
      const double rstd = 1.0 / std::sqrt(var[g] + static_cast<double>(p.eps));
      for (int64_t i = g * per; i < (g + 1) * per; ++i) {
        const double s = rstd * p.gamma[i];
        scale[n * c + i] = static_cast<float>(s);
        shift[n * c + i] = static_cast<float>(p.beta[i] - mean[g] * s);
      }
    }
  }
  t.pass = Pass::Apply;
  run(&t, pool);
}

}  // namespace tern::cpu
