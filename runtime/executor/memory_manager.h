// MemoryManager: the memory a Method may use, all owned by the caller.
#pragma once

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"

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
};

}  // namespace tern
