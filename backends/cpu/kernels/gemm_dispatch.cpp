// Run-time choice of the packed GEMM's microkernels: the best ISA this build and this CPU
// support (AVX-512F > AVX2+FMA > portable), detected once; tests and benchmarks may force one.
#include <atomic>

#include "backends/cpu/kernels/gemm_microkernel.h"
#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu {
namespace {

using gemm_detail::MicrokernelSet;

const MicrokernelSet* set_for(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx512:
      return gemm_detail::avx512_microkernels();
    case GemmIsa::Avx2:
      return gemm_detail::avx2_microkernels();
    case GemmIsa::Scalar:
      // The portable slot: NEON microkernels on aarch64 (gemm_neon.cpp), else generic vectors.
      if (const MicrokernelSet* neon = gemm_detail::neon_microkernels()) return neon;
      return gemm_detail::scalar_microkernels();
  }
  return nullptr;
}

bool cpu_has(GemmIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  __builtin_cpu_init();
  switch (isa) {
    case GemmIsa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case GemmIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmIsa::Scalar:
      return true;
  }
  return false;
#else
  return isa == GemmIsa::Scalar;
#endif
}

GemmIsa detect() {
  if (packed_gemm_isa_supported(GemmIsa::Avx512)) return GemmIsa::Avx512;
  if (packed_gemm_isa_supported(GemmIsa::Avx2)) return GemmIsa::Avx2;
  return GemmIsa::Scalar;
}

constexpr int kUnset = -1;
std::atomic<int> g_isa{kUnset};

}  // namespace

bool packed_gemm_isa_supported(GemmIsa isa) { return set_for(isa) != nullptr && cpu_has(isa); }

GemmIsa packed_gemm_isa() {
  int v = g_isa.load(std::memory_order_acquire);
  if (v == kUnset) {
    // Racing first callers all detect the same answer; the first store wins.
    int expected = kUnset;
    g_isa.compare_exchange_strong(expected, static_cast<int>(detect()), std::memory_order_acq_rel);
    v = g_isa.load(std::memory_order_acquire);
  }
  return static_cast<GemmIsa>(v);
}

bool packed_gemm_force_isa(GemmIsa isa) {
  if (!packed_gemm_isa_supported(isa)) return false;
  g_isa.store(static_cast<int>(isa), std::memory_order_release);
  return true;
}

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx512:
      return "avx512";
    case GemmIsa::Avx2:
      return "avx2";
    case GemmIsa::Scalar:
      return "scalar";
  }
  return "unknown";
}

namespace gemm_detail {
const MicrokernelSet* active_microkernels() { return set_for(packed_gemm_isa()); }
}  // namespace gemm_detail

}  // namespace tern::cpu
