// The flags every tern kernel passes to pthreadpool_parallelize (internal to backends/cpu).
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Subnormal floats are flushed to zero while a kernel's tasks run on the pool's workers (FTZ
/// and DAZ on x86, FZ on Arm; pthreadpool saves and restores each thread's state around the
/// call), as XNNPACK's operators run theirs: a subnormal operand costs an Intel core a
/// microcode assist of ~100 cycles (MobileViT with random weights ran 4.5x slower for them).
/// The delegate's caller thread gets the same state for the whole execute
/// (runtime/flush_denormals.h).
constexpr uint32_t kPoolFlags = PTHREADPOOL_FLAG_DISABLE_DENORMALS;

}  // namespace tern::cpu
