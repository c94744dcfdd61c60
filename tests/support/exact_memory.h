// Caller memory of exact sizes for the hardening tests and the model hardening checker (no
// GoogleTest): tern::BasicMethodMemory in exact mode (one heap block per arena, a method
// allocator and a temp allocator, each exactly as large as asked, so ASan sees one byte past),
// with allocators that count their allocate() calls.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/memory_allocator.h"
#include "runtime/executor/method_meta.h"
#include "runtime/extension/method_memory.h"

namespace tern::testing_support {

/// A malloc'd block; freed with std::free.
using Bytes = HeapBlock;

/// Exactly `size` bytes aligned to `alignment` (at least pointer alignment).
inline Bytes exact_bytes(size_t size, size_t alignment = 64) {
  Bytes bytes = allocate_heap_block(size, alignment, /*exact=*/true);
  if (bytes == nullptr) throw std::bad_alloc();
  return bytes;
}

/// A MemoryAllocator that counts allocate() calls.
class CountingAllocator final : public MemoryAllocator {
 public:
  CountingAllocator() = default;
  CountingAllocator(void* base, size_t size) : MemoryAllocator(base, size) {}
  void* allocate(size_t size, size_t alignment) override {
    ++calls_;
    return MemoryAllocator::allocate(size, alignment);
  }
  long calls() const { return calls_; }

 private:
  long calls_ = 0;
};

/// The sizes of everything a method is given: method allocator, arenas, temp allocator.
struct MemorySizes : MethodMemorySizes {
  /// What `meta` plans (MethodMemorySizes::planned); throws std::runtime_error on its error.
  static MemorySizes planned(const MethodMeta& meta) {
    Result<MethodMemorySizes> planned = MethodMemorySizes::planned(meta);
    if (!planned.ok()) throw std::runtime_error(std::string("MethodMeta: ") + last_error_message());
    MemorySizes s;
    static_cast<MethodMemorySizes&>(s) = std::move(*planned);
    return s;
  }
};

/// Caller memory of exactly `sizes`; throws std::runtime_error when it cannot be allocated.
class ExactMemory : public BasicMethodMemory<CountingAllocator> {
 public:
  explicit ExactMemory(const MethodMemorySizes& sizes) {
    MethodMemoryOptions options;
    options.exact = true;
    if (allocate(sizes, options) != Error::Ok) {
      throw std::runtime_error(std::string("ExactMemory: ") + last_error_message());
    }
  }
  ExactMemory(size_t method_bytes, const std::vector<uint64_t>& arena_sizes,
              const std::vector<uint32_t>& arena_alignments, size_t temp_bytes)
      : ExactMemory(MethodMemorySizes{method_bytes, arena_sizes, arena_alignments, temp_bytes}) {}

  /// Everything sized as `meta` plans it.
  static std::unique_ptr<ExactMemory> from_meta(const MethodMeta& meta) {
    return std::make_unique<ExactMemory>(MemorySizes::planned(meta));
  }
};

}  // namespace tern::testing_support
