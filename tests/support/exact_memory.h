// Caller memory of exact sizes for the hardening tests and the model hardening checker (no
// GoogleTest): one heap block per arena, a method allocator and a temp allocator, each exactly
// as large as asked (so ASan sees one byte past), with allocators that count their allocate()
// calls.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method_meta.h"

namespace tern::testing_support {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
/// A malloc'd block; freed with std::free.
using Bytes = std::unique_ptr<uint8_t, FreeDeleter>;

/// Exactly `size` bytes aligned to `alignment` (at least pointer alignment).
inline Bytes exact_bytes(size_t size, size_t alignment = 64) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) throw std::bad_alloc();
  return Bytes(static_cast<uint8_t*>(p));
}

/// A MemoryAllocator that counts allocate() calls.
class CountingAllocator final : public MemoryAllocator {
 public:
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
struct MemorySizes {
  uint64_t method_bytes = 0;
  std::vector<uint64_t> arenas;
  std::vector<uint32_t> alignments;  ///< of each arena's base
  uint64_t temp_bytes = 0;

  /// What `meta` plans.
  static MemorySizes planned(const MethodMeta& meta) {
    MemorySizes s;
    s.method_bytes = meta.method_allocator_bytes();
    s.temp_bytes = meta.temp_allocator_bytes();
    for (size_t a = 0; a < meta.num_arenas(); ++a) {
      s.arenas.push_back(meta.arena_size(a).get());
      s.alignments.push_back(meta.arena_alignment(a).get());
    }
    return s;
  }
};

/// Caller memory of exactly `sizes`.
class ExactMemory {
 public:
  explicit ExactMemory(const MemorySizes& sizes)
      : method_buffer_(exact_bytes(static_cast<size_t>(sizes.method_bytes))),
        method_allocator_(method_buffer_.get(), static_cast<size_t>(sizes.method_bytes)),
        temp_buffer_(exact_bytes(static_cast<size_t>(sizes.temp_bytes))),
        temp_allocator_(temp_buffer_.get(), static_cast<size_t>(sizes.temp_bytes)) {
    for (size_t a = 0; a < sizes.arenas.size(); ++a) {
      const size_t size = static_cast<size_t>(sizes.arenas[a]);
      const uint32_t alignment = sizes.alignments[a] < 64 ? 64 : sizes.alignments[a];
      arena_buffers_.push_back(exact_bytes(size, alignment));
      arenas_.emplace_back(arena_buffers_.back().get(), size);
    }
    planned_ = HierarchicalAllocator(Span<Span<uint8_t>>(arenas_.data(), arenas_.size()));
    manager_.method_allocator = &method_allocator_;
    manager_.planned_memory = &planned_;
    manager_.temp_allocator = &temp_allocator_;
  }
  ExactMemory(size_t method_bytes, const std::vector<uint64_t>& arena_sizes,
              const std::vector<uint32_t>& arena_alignments, size_t temp_bytes)
      : ExactMemory(MemorySizes{method_bytes, arena_sizes, arena_alignments, temp_bytes}) {}
  ExactMemory(const ExactMemory&) = delete;
  ExactMemory& operator=(const ExactMemory&) = delete;

  /// Everything sized as `meta` plans it.
  static std::unique_ptr<ExactMemory> from_meta(const MethodMeta& meta) {
    return std::make_unique<ExactMemory>(MemorySizes::planned(meta));
  }

  MemoryManager* manager() { return &manager_; }
  const CountingAllocator& method_allocator() const { return method_allocator_; }
  const CountingAllocator& temp_allocator() const { return temp_allocator_; }

 private:
  Bytes method_buffer_;
  CountingAllocator method_allocator_;
  std::vector<Bytes> arena_buffers_;
  std::vector<Span<uint8_t>> arenas_;
  HierarchicalAllocator planned_;
  Bytes temp_buffer_;
  CountingAllocator temp_allocator_;
  MemoryManager manager_;
};

}  // namespace tern::testing_support
