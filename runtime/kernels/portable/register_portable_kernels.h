// Explicit registration of every portable kernel (no static initialisers).
#pragma once

#include "runtime/core/error.h"

namespace tern {

/// Registers every portable kernel ("tern::add", "tern::mul", "tern::relu", "tern::linear",
/// "tern::reshape", ...) in the kernel registry. Call once at startup, before loading methods;
/// calling again re-registers the same functions. MemoryAllocationFailed when the registry is
/// full. Not thread-safe (see register_kernel).
Error register_portable_kernels();

}  // namespace tern
