// The compilers' generic 4-float vector (GCC and Clang vector extensions: SSE on x86-64, NEON
// on aarch64, scalar code elsewhere) and its unaligned loads and stores (internal to
// backends/cpu/kernels: the portable Winograd transforms, the interleaves of strided copies).
#pragma once

#include <cstring>

namespace tern::cpu::detail {

typedef float Vec4 __attribute__((vector_size(16)));

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline void store4(float* p, Vec4 v) { std::memcpy(p, &v, sizeof(v)); }

}  // namespace tern::cpu::detail
