#include "backends/cuda/runtime/device_allocator.h"

#include <cuda_runtime.h>

namespace tern::cuda {

Error DeviceAllocator::allocate(size_t bytes, const char* what, void** out) {
  *out = nullptr;
  if (bytes == 0) return Error::Ok;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
    return set_error_message(Error::DelegateMemoryAllocationFailed,
                             "cuda backend: cannot allocate %zu bytes of device memory for %s: "
                             "%s",
                             bytes, what, cudaGetErrorString(e));
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  live_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  *out = p;
  return Error::Ok;
}

void DeviceAllocator::free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  (void)cudaFree(ptr);
  live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

DeviceAllocator& device_allocator() {
  static DeviceAllocator allocator;
  return allocator;
}

}  // namespace tern::cuda
