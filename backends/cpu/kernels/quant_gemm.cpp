// The fused quantized GEMM's driver (quant_gemm.h): picks the ISA's kernel with the packed
// GEMM's dispatch and splits the output columns over the pool. Never allocates.
#include "backends/cpu/kernels/quant_gemm.h"

#include <atomic>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

constexpr int kLookupUnset = -1;
std::atomic<int> g_nf4_lookup{kLookupUnset};

Nf4Avx2Lookup detect_nf4_lookup() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_is("amd")) return Nf4Avx2Lookup::BytePlanes;
#endif
  return Nf4Avx2Lookup::Permute;
}

using quant_detail::QuantRowsFn;

/// A task computes this many weight rows at least (about 16 KiB of codes), and there are at
/// least kTasksPerThread tasks per pool thread when the weight has enough rows.
constexpr uint64_t kMinTaskBytes = 16 << 10;
constexpr int64_t kTasksPerThread = 8;

struct Split {
  const QuantGemmProblem* p = nullptr;
  QuantRowsFn fn = nullptr;
  int64_t rows_per_task = 0;
  int64_t n = 0;
};

void run_task(void* context, size_t i) {
  const Split& s = *static_cast<const Split*>(context);
  const int64_t n0 = static_cast<int64_t>(i) * s.rows_per_task;
  const int64_t n1 = n0 + s.rows_per_task < s.n ? n0 + s.rows_per_task : s.n;
  s.fn(*s.p, n0, n1);
}

QuantRowsFn select_kernel() {
  QuantRowsFn fn = nullptr;
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      fn = quant_detail::quant_rows_avx512();
      break;
    case GemmIsa::Avx2:
      fn = quant_detail::quant_rows_avx2();
      break;
    case GemmIsa::Scalar:
      break;
  }
  return fn != nullptr ? fn : quant_detail::quant_rows_generic();
}

}  // namespace

namespace quant_detail {

bool cpu_has_f16c() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Read once: CPUID serialises (and traps to the hypervisor in a VM), and every quant_gemm
  // call asks.
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace quant_detail

Nf4Avx2Lookup quant_nf4_avx2_lookup() {
  int v = g_nf4_lookup.load(std::memory_order_acquire);
  if (v == kLookupUnset) {
    int expected = kLookupUnset;
    g_nf4_lookup.compare_exchange_strong(expected, static_cast<int>(detect_nf4_lookup()),
                                         std::memory_order_acq_rel);
    v = g_nf4_lookup.load(std::memory_order_acquire);
  }
  return static_cast<Nf4Avx2Lookup>(v);
}

void quant_force_nf4_avx2_lookup(Nf4Avx2Lookup lookup) {
  g_nf4_lookup.store(static_cast<int>(lookup), std::memory_order_release);
}

void quant_gemm(const QuantGemmProblem& p, pthreadpool_t pool) {
  const int64_t n = static_cast<int64_t>(p.w.desc.rows);
  if (p.m <= 0 || n <= 0) return;
  if (p.m >= kQuantPanelMinRows && quant_detail::quant_fast_path_ok(p.w)) {
    quant_detail::panel_gemm(p, pool);
    return;
  }
  Split s;
  s.p = &p;
  s.fn = select_kernel();
  s.n = n;
  const int64_t threads =
      pool != nullptr ? static_cast<int64_t>(pthreadpool_get_threads_count(pool)) : 1;
  const uint64_t row_bytes = p.w.layout.row_bytes == 0 ? 1 : p.w.layout.row_bytes;
  int64_t per = static_cast<int64_t>((kMinTaskBytes + row_bytes - 1) / row_bytes);
  const int64_t spread = (n + threads * kTasksPerThread - 1) / (threads * kTasksPerThread);
  if (spread > per) per = spread;
  per = (per + 7) / 8 * 8;  // whole groups of 8 rows (the GEMV tile)
  s.rows_per_task = per;
  const int64_t tasks = (n + per - 1) / per;
  if (pool == nullptr || threads <= 1 || tasks <= 1) {
    s.fn(p, 0, n);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_task, &s, static_cast<size_t>(tasks), kPoolFlags);
}

}  // namespace tern::cpu
