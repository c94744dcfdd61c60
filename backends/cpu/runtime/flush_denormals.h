// The calling thread's subnormal-float mode while a cpu delegate executes (internal to
// backends/cpu/runtime).
#pragma once

#include <cstdint>

namespace tern::cpu {

/// While alive, the calling thread flushes subnormal floats to zero (x86: MXCSR's FTZ and DAZ;
/// aarch64: FPCR's FZ; elsewhere nothing changes); the destructor restores the state it found.
/// The delegate's stages run under it, and its kernels' pool tasks under pthreadpool's own
/// flag (kernels/pool_flags.h): XNNPACK's numerics everywhere in the delegate. The portable
/// kernels, outside it, keep subnormals.
class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals();
  ~ScopedFlushDenormals();
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  uint64_t saved_ = 0;
};

/// Whether the calling thread flushes subnormal floats now (false where it cannot tell).
bool flushing_denormals();

}  // namespace tern::cpu
