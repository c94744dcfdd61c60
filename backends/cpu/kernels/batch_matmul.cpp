// The batched product of two activations (batch_matmul.h): pack each batch's B, then the
// packed GEMM on it.
#include "backends/cpu/kernels/batch_matmul.h"

#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

struct Task {
  const BatchMatMulProblem* p = nullptr;
  float* scratch = nullptr;
  pthreadpool_t inner = nullptr;  ///< the pool for each product (null inside a batch task)
};

void run_batch(const Task& t, int64_t i) {
  const BatchMatMulProblem& p = *t.p;
  const uint64_t packed_floats = packed_weight_floats(p.n, p.k);
  float* packed = t.scratch + static_cast<uint64_t>(i) * packed_floats;
  const float* b = p.b + i * p.k * p.n;
  if (p.trans_b) {
    pack_fc_weight(b, nullptr, p.n, p.k, packed);  // B[b] is [n, k]: the FC weight layout
  } else {
    pack_kn_weight(b, p.k, p.n, packed);
  }
  GemmProblem g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.a = p.a + i * p.m * p.k;
  g.lda = p.k;
  g.packed = packed;
  g.c = p.c + i * p.m * p.n;
  g.ldc = p.n;
  packed_gemm(g, t.inner);
}

void batch_task(void* context, size_t i) {
  run_batch(*static_cast<const Task*>(context), static_cast<int64_t>(i));
}

}  // namespace

uint64_t batch_matmul_scratch_floats(const BatchMatMulProblem& p) {
  return static_cast<uint64_t>(p.batch) * packed_weight_floats(p.n, p.k);
}

void pack_kn_weight(const float* b, int64_t k, int64_t n, float* out) {
  constexpr int64_t kW = kPanelWidth;
  const int64_t panels = (n + kW - 1) / kW;
  for (int64_t j = 0; j < panels; ++j) {
    float* panel = out + j * kW * (k + 1);
    const int64_t cols = n - j * kW < kW ? n - j * kW : kW;
    std::memset(panel, 0, sizeof(float) * kW);  // bias
    for (int64_t r = 0; r < k; ++r) {
      float* row = panel + kW + r * kW;
      std::memcpy(row, b + r * n + j * kW, sizeof(float) * static_cast<size_t>(cols));
      if (cols < kW) std::memset(row + cols, 0, sizeof(float) * static_cast<size_t>(kW - cols));
    }
  }
}

/// Products of fewer multiply-adds run on the caller's thread (no pool dispatch).
constexpr int64_t kMinMacsForPool = int64_t{1} << 19;

void batch_matmul(const BatchMatMulProblem& p, float* scratch, pthreadpool_t pool) {
  if (p.batch * p.m * p.n * p.k < kMinMacsForPool) pool = nullptr;
  const int64_t threads =
      pool == nullptr ? 1 : static_cast<int64_t>(pthreadpool_get_threads_count(pool));
  Task t;
  t.p = &p;
  t.scratch = scratch;
  if (threads > 1 && p.batch >= threads) {
    pthreadpool_parallelize_1d(pool, &batch_task, &t, static_cast<size_t>(p.batch), kPoolFlags);
    return;
  }
  t.inner = pool;
  for (int64_t i = 0; i < p.batch; ++i) run_batch(t, i);
}

}  // namespace tern::cpu
