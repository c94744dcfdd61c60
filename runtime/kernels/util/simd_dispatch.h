// Which instruction-set variant of a vectorized portable kernel runs on this CPU.
//
// Kernels that the compiler vectorizes (plain C++, no intrinsics) can compile the same
// always-inline body a second and third time for AVX2+FMA and AVX-512 with GCC/Clang target
// attributes, and pick one at run time with simd_level(), as gemm.cpp does. Elsewhere (other
// architectures or compilers, or TERN_SIMD_NO_DISPATCH) only the baseline build exists.
#pragma once

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(TERN_SIMD_NO_DISPATCH)
#define TERN_SIMD_X86_DISPATCH 1
#define TERN_SIMD_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define TERN_SIMD_TARGET_AVX512 __attribute__((target("avx512f,fma")))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TERN_SIMD_INLINE inline __attribute__((always_inline))
#else
#define TERN_SIMD_INLINE inline
#endif

namespace tern::portable {

/// Instruction-set variants, widest last.
enum class SimdLevel { Baseline, Avx2, Avx512 };

/// The widest variant this build has and this CPU supports, whatever the cap.
inline SimdLevel simd_level_supported() {
#if defined(TERN_SIMD_X86_DISPATCH)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    return SimdLevel::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::Avx2;
#endif
  return SimdLevel::Baseline;
}

/// The widest variant later calls may pick (default: Avx512, no cap). Not thread-safe: for
/// tests and benchmarks that run every variant on one machine.
inline SimdLevel& simd_level_cap() {
  static SimdLevel cap = SimdLevel::Avx512;
  return cap;
}

/// The variant to run: the widest supported, within simd_level_cap().
inline SimdLevel simd_level() {
  const SimdLevel supported = simd_level_supported();
  return supported < simd_level_cap() ? supported : simd_level_cap();
}

}  // namespace tern::portable
