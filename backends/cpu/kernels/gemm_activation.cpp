// The GEMM epilogue's activations: plain loops over the vector_math.h forms (the portable
// kernels' own, so a delegate and its portable fallback agree), compiled three times with
// target attributes and picked with the microkernels' ISA.
#include "backends/cpu/kernels/gemm_activation.h"

#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"
#include "runtime/kernels/util/vector_math.h"

namespace tern::cpu {
namespace {

namespace vmath = portable::vmath;

// Elements per block: a constant trip count lets the loop vectorize; a tail goes through a
// local buffer.
constexpr int64_t kBlock = 16;

template <GemmActivation kAct>
TERN_SIMD_INLINE float apply(float v) {
  if (kAct == GemmActivation::Hardswish) {
    const float r = v + 3.0f;
    const float c = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return v * c / 6.0f;
  }
  if (kAct == GemmActivation::GeluErf) return vmath::gelu_erf(v);
  return vmath::gelu_tanh(v);
}

template <GemmActivation kAct>
TERN_SIMD_INLINE void loop(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float* p = x + i;
    for (int64_t j = 0; j < kBlock; ++j) p[j] = apply<kAct>(p[j]);
  }
  if (i < n) {
    alignas(64) float tail[kBlock] = {};
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(tail, x + i, bytes);
    for (int64_t j = 0; j < kBlock; ++j) tail[j] = apply<kAct>(tail[j]);
    std::memcpy(x + i, tail, bytes);
  }
}

template <GemmActivation kAct>
void run_baseline(float* x, int64_t n) {
  loop<kAct>(x, n);
}

#if defined(TERN_SIMD_X86_DISPATCH)
template <GemmActivation kAct>
TERN_SIMD_TARGET_AVX2 void run_avx2(float* x, int64_t n) {
  loop<kAct>(x, n);
}

template <GemmActivation kAct>
TERN_SIMD_TARGET_AVX512 void run_avx512(float* x, int64_t n) {
  loop<kAct>(x, n);
}
#endif

template <GemmActivation kAct>
ActivationFn pick() {
#if defined(TERN_SIMD_X86_DISPATCH)
  switch (packed_gemm_isa()) {
    case GemmIsa::Avx512:
      return &run_avx512<kAct>;
    case GemmIsa::Avx2:
      return &run_avx2<kAct>;
    case GemmIsa::Scalar:
      break;
  }
#endif
  return &run_baseline<kAct>;
}

}  // namespace

ActivationFn gemm_activation_fn(GemmActivation act) {
  switch (act) {
    case GemmActivation::None:
      return nullptr;
    case GemmActivation::Hardswish:
      return pick<GemmActivation::Hardswish>();
    case GemmActivation::GeluErf:
      return pick<GemmActivation::GeluErf>();
    case GemmActivation::GeluTanh:
      return pick<GemmActivation::GeluTanh>();
  }
  return nullptr;
}

}  // namespace tern::cpu
