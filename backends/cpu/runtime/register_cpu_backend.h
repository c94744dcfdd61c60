// Registration of the cpu backend (XNNPACK subgraphs behind tern's BackendInterface).
#pragma once

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"

namespace tern {

/// Registers the XNNPACK delegate under the name "cpu" (explicit registration; call once at
/// startup, not thread-safe like register_backend). Calling it again re-registers the same
/// interface (Ok), as register_backend's rule says.
/// Errors as register_backend (e.g. MemoryAllocationFailed when the registry is full).
Error register_cpu_backend();

/// The cpu backend's interface object (static storage), for tests that drive it directly.
const BackendInterface& cpu_backend_interface();

}  // namespace tern
