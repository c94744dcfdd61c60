// MemoryManager: the memory a Method may use, all owned by the caller.
#pragma once

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/span.h"

namespace tern {

/// The caller keeps every allocator (and the memory behind it) alive for the Method's life.
struct MemoryManager {
  /// Holds the method's own structures (values, tensor views, resolved instructions).
  /// Size it with MethodMeta::method_allocator_bytes().
  MemoryAllocator* method_allocator = nullptr;
  /// One buffer per planned arena, sized with MethodMeta::arena_size().
  HierarchicalAllocator* planned_memory = nullptr;
  /// Scratch for kernels during execute(); reset after every instruction. Size it with
  /// MethodMeta::temp_allocator_bytes(); may be null when that is 0.
  MemoryAllocator* temp_allocator = nullptr;
  /// The program's shared state buffer (format 1.2), for methods that use shared state:
  /// Program::shared_state_bytes() bytes, 64-byte aligned, initialised once with
  /// Program::init_shared_state(); the same buffer for every method of the program. Empty
  /// otherwise.
  Span<uint8_t> shared_state;
};

}  // namespace tern
