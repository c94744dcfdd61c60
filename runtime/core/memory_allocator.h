// MemoryAllocator: a bump allocator over caller-owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "runtime/core/checked_math.h"

namespace tern {

/// Hands out aligned pieces of one caller-owned buffer, front to back. Never frees single
/// pieces; reset() frees all. Returns null when the buffer is exhausted, never aborts.
/// The caller keeps `base` alive and unmoved for as long as any allocation is in use.
class MemoryAllocator {
 public:
  static constexpr size_t kDefaultAlignment = alignof(std::max_align_t);

  MemoryAllocator() = default;
  MemoryAllocator(void* base, size_t size)
      : base_(static_cast<uint8_t*>(base)), size_(base ? size : 0) {}
  virtual ~MemoryAllocator() = default;

  /// `size` bytes aligned to `alignment` (a power of two), or null when they do not fit or
  /// `alignment` is not a power of two. size 0 returns a valid non-null pointer.
  virtual void* allocate(size_t size, size_t alignment = kDefaultAlignment) {
    if (!is_power_of_two(alignment) || base_ == nullptr) {
      return nullptr;
    }
    const uint64_t base_addr = reinterpret_cast<uintptr_t>(base_);
    uint64_t start;
    if (!checked_align_up(base_addr + used_, alignment, &start)) {
      return nullptr;
    }
    uint64_t end;
    if (!checked_add(start, size, &end) || end > base_addr + size_) {
      return nullptr;
    }
    used_ = static_cast<size_t>(end - base_addr);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(start));
  }

  /// An uninitialized array of `count` T, or null (also on size overflow).
  template <typename T>
  T* allocate_array(size_t count, size_t alignment = alignof(T)) {
    uint64_t bytes;
    if (!checked_mul(count, sizeof(T), &bytes)) {
      return nullptr;
    }
    return static_cast<T*>(allocate(static_cast<size_t>(bytes), alignment));
  }

  /// Default-constructs one T in the buffer, or null.
  template <typename T>
  T* allocate_instance() {
    void* p = allocate(sizeof(T), alignof(T));
    return p ? new (p) T() : nullptr;
  }

  /// Frees every allocation at once.
  virtual void reset() { used_ = 0; }

  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }
  size_t used() const { return used_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

}  // namespace tern
