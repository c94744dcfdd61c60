// The one object through which the cuda backend allocates device memory, so that tests can
// count device allocations (none may happen during execute).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace tern::cuda {

/// cudaMalloc / cudaFree with counters. Thread-safe. The process has one (device_allocator()).
class DeviceAllocator {
 public:
  /// Allocates `bytes` (> 0) of device memory on the current device into *out (256-byte
  /// aligned, cudaMalloc's promise). DelegateMemoryAllocationFailed with a message naming
  /// `what`, the size and the CUDA error when the device cannot.
  Error allocate(size_t bytes, const char* what, void** out);
  /// Frees what allocate() returned (`bytes`: the size asked for); null is ignored.
  void free(void* ptr, size_t bytes);
  /// Successful allocate() calls since the process started (never decreases).
  uint64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }
  /// Bytes currently allocated.
  uint64_t live_bytes() const { return live_bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> live_bytes_{0};
};

/// The process-wide allocator the backend uses (static storage).
DeviceAllocator& device_allocator();

}  // namespace tern::cuda
