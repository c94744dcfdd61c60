#include "backends/cuda/runtime/host_range_registry.h"

#include <cuda_runtime.h>
#include <unistd.h>

namespace tern::cuda {

HostRangeRegistry::HostRangeRegistry(HostRangeOps ops, size_t page)
    : ops_(ops), page_(static_cast<uintptr_t>(page)) {}

void HostRangeRegistry::page_bounds(const void* data, size_t bytes, uintptr_t* begin,
                                    uintptr_t* end) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  *begin = p & ~(page_ - 1);
  *end = (p + bytes + page_ - 1) & ~(page_ - 1);
}

Error HostRangeRegistry::hold(const void* data, size_t bytes) {
  TERN_CHECK_OR_RETURN_ERROR(data != nullptr && bytes > 0, InvalidArgument,
                             "cuda backend: holding host range %p of %zu bytes", data, bytes);
  uintptr_t b = 0, e = 0;
  page_bounds(data, bytes, &b, &e);
  std::lock_guard<std::mutex> lock(mutex_);
  // The gaps of [b, e) that no pinned range covers, in order.
  Range* gaps = gaps_;
  size_t num_gaps = 0;
  uintptr_t cursor = b;
  for (size_t i = 0; i < count_ && ranges_[i].begin < e; ++i) {
    const Range& r = ranges_[i];
    if (r.end <= cursor) continue;
    if (r.begin > cursor) {
      TERN_CHECK_OR_RETURN_ERROR(num_gaps < kMaxRanges, MemoryAllocationFailed,
                                 "cuda backend: more than %zu pinned host ranges", kMaxRanges);
      gaps[num_gaps++] = {cursor, r.begin, 0};
    }
    cursor = r.end;
  }
  if (cursor < e) {
    TERN_CHECK_OR_RETURN_ERROR(num_gaps < kMaxRanges, MemoryAllocationFailed,
                               "cuda backend: more than %zu pinned host ranges", kMaxRanges);
    gaps[num_gaps++] = {cursor, e, 0};
  }
  TERN_CHECK_OR_RETURN_ERROR(count_ + num_gaps <= kMaxRanges, MemoryAllocationFailed,
                             "cuda backend: pinning %zu more host ranges would pass the limit of "
                             "%zu (%zu pinned)",
                             num_gaps, kMaxRanges, count_);
  for (size_t g = 0; g < num_gaps; ++g) {
    const Error pinned =
        ops_.pin(reinterpret_cast<void*>(gaps[g].begin), static_cast<size_t>(gaps[g].end - gaps[g].begin));
    if (pinned != Error::Ok) {
      for (size_t u = 0; u < g; ++u) ops_.unpin(reinterpret_cast<void*>(gaps[u].begin));
      return pinned;
    }
  }
  // Insert the new ranges in order, then count this holder on every range of [b, e).
  for (size_t g = 0; g < num_gaps; ++g) {
    size_t at = count_;
    while (at > 0 && ranges_[at - 1].begin > gaps[g].begin) {
      ranges_[at] = ranges_[at - 1];
      --at;
    }
    ranges_[at] = gaps[g];
    ++count_;
  }
  for (size_t i = 0; i < count_; ++i) {
    if (ranges_[i].begin < e && ranges_[i].end > b) ++ranges_[i].holders;
  }
  return Error::Ok;
}

void HostRangeRegistry::release(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return;
  uintptr_t b = 0, e = 0;
  page_bounds(data, bytes, &b, &e);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t kept = 0;
  for (size_t i = 0; i < count_; ++i) {
    Range r = ranges_[i];
    if (r.begin < e && r.end > b && r.holders > 0 && --r.holders == 0) {
      ops_.unpin(reinterpret_cast<void*>(r.begin));
      continue;
    }
    ranges_[kept++] = r;
  }
  count_ = kept;
}

size_t HostRangeRegistry::ranges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

uint32_t HostRangeRegistry::holders(const void* data) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < count_; ++i) {
    if (ranges_[i].begin <= p && p < ranges_[i].end) return ranges_[i].holders;
  }
  return 0;
}

namespace {

Error pin_with_driver(void* begin, size_t bytes) {
  int device = 0, read_only = 0;
  unsigned int flags = cudaHostRegisterMapped;
  // A read-only mapping (an mmapped program file) can only be registered read-only.
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, device) ==
          cudaSuccess &&
      read_only != 0) {
    flags |= cudaHostRegisterReadOnly;
  }
  const cudaError_t e = cudaHostRegister(begin, bytes, flags);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return set_error_message(Error::DelegateMemoryAllocationFailed,
                             "cuda backend: cudaHostRegister of %zu bytes at %p: %s (%s)", bytes,
                             begin, cudaGetErrorString(e), cudaGetErrorName(e));
  }
  return Error::Ok;
}

void unpin_with_driver(void* begin) {
  if (cudaHostUnregister(begin) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

HostRangeRegistry& host_range_registry() {
  static HostRangeRegistry registry({pin_with_driver, unpin_with_driver},
                                    static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  return registry;
}

}  // namespace tern::cuda
