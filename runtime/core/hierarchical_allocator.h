// HierarchicalAllocator: the planned arenas of a method, addressed by (arena id, offset).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {

/// Where an arena lives. Host arenas are CPU memory; device arenas belong to a backend.
enum class DeviceType : uint8_t { Host = 0, Cuda = 1, Vulkan = 2 };

/// One caller-owned buffer per planned arena. The caller keeps every buffer alive for as
/// long as the Method that uses it.
class HierarchicalAllocator {
 public:
  HierarchicalAllocator() = default;
  /// `arenas[i]` is arena i; `devices` (optional, same length) tags each one.
  explicit HierarchicalAllocator(Span<Span<uint8_t>> arenas,
                                 Span<const DeviceType> devices = {})
      : arenas_(arenas), devices_(devices) {}

  size_t num_arenas() const { return arenas_.size(); }

  /// Pointer to [offset, offset + size) of arena `arena_id`, bounds-checked and
  /// overflow-safe; an error names the arena, the range and the arena's size.
  Result<void*> get_offset_address(uint32_t arena_id, uint64_t offset, uint64_t size) const {
    TERN_CHECK_OR_RETURN_ERROR(arena_id < arenas_.size(), InvalidArgument,
                               "arena %u requested but only %zu arena buffers were provided",
                               arena_id, arenas_.size());
    const Span<uint8_t>& arena = arenas_[arena_id];
    TERN_CHECK_OR_RETURN_ERROR(
        range_within(offset, size, arena.size()), MemoryAllocationFailed,
        "arena %u: bytes [%llu, +%llu) do not fit in the provided buffer of %zu bytes",
        arena_id, static_cast<unsigned long long>(offset),
        static_cast<unsigned long long>(size), arena.size());
    TERN_CHECK_OR_RETURN_ERROR(arena.data() != nullptr || arena.size() == 0, InvalidArgument,
                               "arena %u: buffer is null", arena_id);
    return static_cast<void*>(arena.data() + offset);
  }

  /// The buffer of arena `arena_id` (the caller checks the id against num_arenas()).
  Span<uint8_t> arena(uint32_t arena_id) const { return arenas_[arena_id]; }
  DeviceType device(uint32_t arena_id) const {
    return arena_id < devices_.size() ? devices_[arena_id] : DeviceType::Host;
  }

 private:
  Span<Span<uint8_t>> arenas_;
  Span<const DeviceType> devices_;
};

}  // namespace tern
