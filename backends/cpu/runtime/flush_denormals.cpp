#include "backends/cpu/runtime/flush_denormals.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tern::cpu {
namespace {

#if defined(__SSE__) || defined(__x86_64__)
constexpr uint32_t kFlushBits = 0x8040;  // MXCSR: FTZ (bit 15) and DAZ (bit 6)
uint64_t read_state() { return _mm_getcsr(); }
void write_state(uint64_t s) { _mm_setcsr(static_cast<unsigned int>(s)); }
#elif defined(__aarch64__)
constexpr uint64_t kFlushBits = uint64_t{1} << 24;  // FPCR: FZ
uint64_t read_state() {
  uint64_t s;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(s));
  return s;
}
void write_state(uint64_t s) { __asm__ __volatile__("msr fpcr, %0" : : "r"(s)); }
#else
constexpr uint64_t kFlushBits = 0;
uint64_t read_state() { return 0; }
void write_state(uint64_t) {}
#endif

}  // namespace

ScopedFlushDenormals::ScopedFlushDenormals() : saved_(read_state()) {
  if (kFlushBits != 0) write_state(saved_ | kFlushBits);
}

ScopedFlushDenormals::~ScopedFlushDenormals() {
  if (kFlushBits != 0) write_state(saved_);
}

bool flushing_denormals() { return kFlushBits != 0 && (read_state() & kFlushBits) == kFlushBits; }

}  // namespace tern::cpu
