// Registration of the cuda backend (tern's kernels and cuBLASLt behind BackendInterface).
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"

namespace tern {

/// Registers the cuda delegate under the name "cuda" (explicit registration; call once at
/// startup, not thread-safe like register_backend). It registers on machines without a GPU
/// too: is_available() then says false and programs run their portable fallback.
/// Errors as register_backend.
Error register_cuda_backend();

/// The cuda backend's interface object (static storage), for tests that drive it directly.
const BackendInterface& cuda_backend_interface();

/// Device allocations the backend has made in this process (its DeviceAllocator's count),
/// for tests proving execute() allocates none.
uint64_t cuda_device_allocation_count();
/// Bytes of device memory the backend holds now (its DeviceAllocator's live bytes).
uint64_t cuda_device_live_bytes();

/// Why the backend is unavailable here ("no CUDA device (...)"), empty when it is available.
const char* cuda_unavailable_reason();

}  // namespace tern
