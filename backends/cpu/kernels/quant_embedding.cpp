// The quantized embedding gather (quant_embedding.h).
#include "backends/cpu/kernels/quant_embedding.h"

#include "backends/cpu/kernels/pool_flags.h"
#include "runtime/kernels/util/quant_formats.h"

namespace tern::cpu {
namespace {

struct Gather {
  const QuantWeightView* w = nullptr;
  const int64_t* indices = nullptr;
  float* out = nullptr;
};

void gather_row(void* context, size_t i) {
  const Gather& g = *static_cast<const Gather*>(context);
  const QuantWeightView& w = *g.w;
  const uint64_t row = static_cast<uint64_t>(g.indices[i]);
  float* dst = g.out + i * w.desc.cols;
  for (uint64_t c = 0; c < w.desc.cols; ++c) dst[c] = quant_weight_at(w, row, c);
}

}  // namespace

int64_t quant_embedding(const QuantWeightView& table, const int64_t* indices, int64_t count,
                        float* out, pthreadpool_t pool) {
  const int64_t v = static_cast<int64_t>(table.desc.rows);
  for (int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= v) return i;
  }
  Gather g;
  g.w = &table;
  g.indices = indices;
  g.out = out;
  // Enough elements per call to pay for the pool's dispatch.
  if (pool == nullptr || count < 2 || static_cast<uint64_t>(count) * table.desc.cols < 16384 ||
      pthreadpool_get_threads_count(pool) <= 1) {
    for (int64_t i = 0; i < count; ++i) gather_row(&g, static_cast<size_t>(i));
    return -1;
  }
  pthreadpool_parallelize_1d(pool, &gather_row, &g, static_cast<size_t>(count), kPoolFlags);
  return -1;
}

}  // namespace tern::cpu
