// Page-locked host ranges shared by every cuda delegate of the process, for zero-copy weights
// (docs/jetson.md): a delegate holds the pages of each weight it reads in place; a page range is
// registered with the driver once, by the first holder, and unregistered when its last holder
// lets go. Two delegates may hold the same weights (a program's prefill and decode methods) or
// neighbouring ones that share a page; the driver refuses to register a page twice, so the
// registry pins only what no range covers yet and keeps the pinned ranges disjoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "runtime/core/error.h"

namespace tern::cuda {

/// How ranges are pinned: the driver in the backend, fakes in tests.
struct HostRangeOps {
  /// Pins `bytes` (page multiple) at `begin` (page-aligned); an Error with a message on failure.
  Error (*pin)(void* begin, size_t bytes) = nullptr;
  /// Unpins a range `pin` pinned (same `begin`).
  void (*unpin)(void* begin) = nullptr;
};

class HostRangeRegistry {
 public:
  /// Most disjoint pinned ranges at once (holds that would need more fail).
  static constexpr size_t kMaxRanges = 1024;

  /// `page`: the pinning granularity, a power of two.
  HostRangeRegistry(HostRangeOps ops, size_t page);

  /// Holds the pages covering [data, data + bytes) (bytes > 0): pins the parts no pinned range
  /// covers yet (each as a range of its own) and counts one more holder on every pinned range
  /// the pages overlap. All or nothing: on an error nothing is pinned or counted.
  Error hold(const void* data, size_t bytes);
  /// Undoes one successful hold(data, bytes) (the same arguments): one holder less on every
  /// pinned range the pages overlap; a range without holders is unpinned.
  void release(const void* data, size_t bytes);
  /// Pinned ranges now.
  size_t ranges() const;
  /// Holders of the pinned range containing `data` (0 when no range contains it).
  uint32_t holders(const void* data) const;

 private:
  struct Range {
    uintptr_t begin;
    uintptr_t end;
    uint32_t holders;
  };
  void page_bounds(const void* data, size_t bytes, uintptr_t* begin, uintptr_t* end) const;

  HostRangeOps ops_;
  uintptr_t page_;
  mutable std::mutex mutex_;
  Range ranges_[kMaxRanges];  ///< sorted by begin, disjoint
  size_t count_ = 0;
  Range gaps_[kMaxRanges];  ///< hold()'s scratch (under the mutex)
};

/// The process's registry, pinning with cudaHostRegister (mapped, read-only where the device
/// supports it) at the system page size.
HostRangeRegistry& host_range_registry();

}  // namespace tern::cuda
