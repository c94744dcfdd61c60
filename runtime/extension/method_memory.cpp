// MethodMemory's heap blocks: sizes from MethodMeta, one aligned block per buffer.
#include "runtime/extension/method_memory.h"

#include <cstdlib>
#include <utility>

#include "runtime/core/checked_math.h"

namespace tern {

void HeapBlockDeleter::operator()(uint8_t* block) const { std::free(block); }

HeapBlock allocate_heap_block(uint64_t size, size_t alignment, bool exact) {
  if (!is_power_of_two(alignment)) return HeapBlock();
  if (alignment < sizeof(void*)) alignment = sizeof(void*);  // posix_memalign's minimum
  uint64_t bytes = size == 0 ? 1 : size;
  if (!exact && !checked_align_up(bytes, alignment, &bytes)) return HeapBlock();
  if (bytes > static_cast<uint64_t>(PTRDIFF_MAX)) return HeapBlock();
  void* p = nullptr;
  if (posix_memalign(&p, alignment, static_cast<size_t>(bytes)) != 0) return HeapBlock();
  return HeapBlock(static_cast<uint8_t*>(p));
}

Result<MethodMemorySizes> MethodMemorySizes::planned(const MethodMeta& meta) {
  MethodMemorySizes sizes;
  sizes.method_bytes = meta.method_allocator_bytes();
  sizes.temp_bytes = meta.temp_allocator_bytes();
  sizes.arenas.reserve(meta.num_arenas());
  sizes.alignments.reserve(meta.num_arenas());
  for (size_t a = 0; a < meta.num_arenas(); ++a) {
    TERN_ASSIGN_OR_RETURN(uint64_t size, meta.arena_size(a));
    TERN_ASSIGN_OR_RETURN(uint32_t alignment, meta.arena_alignment(a));
    sizes.arenas.push_back(size);
    sizes.alignments.push_back(alignment);
  }
  return sizes;
}

Error MethodBuffers::allocate(const MethodMemorySizes& sizes, const MethodMemoryOptions& options) {
  TERN_CHECK_OR_RETURN_ERROR(method_block_ == nullptr, InvalidState,
                             "method memory: already allocated (allocate() is called once)");
  TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(options.alignment), InvalidArgument,
                             "method memory: buffer alignment %zu is not a power of two",
                             options.alignment);
  TERN_CHECK_OR_RETURN_ERROR(sizes.alignments.size() == sizes.arenas.size(), InvalidArgument,
                             "method memory: %zu arena sizes but %zu arena alignments",
                             sizes.arenas.size(), sizes.alignments.size());
  MethodMemorySizes final_sizes = sizes;
  TERN_CHECK_OR_RETURN_ERROR(
      checked_add(sizes.method_bytes, options.extra_method_bytes, &final_sizes.method_bytes),
      MemoryAllocationFailed,
      "cannot allocate the method allocator buffer: %llu + %llu extra bytes overflow",
      static_cast<unsigned long long>(sizes.method_bytes),
      static_cast<unsigned long long>(options.extra_method_bytes));
  if (final_sizes.temp_bytes < options.min_temp_bytes) {
    final_sizes.temp_bytes = options.min_temp_bytes;
  }

  HeapBlock method_block =
      allocate_heap_block(final_sizes.method_bytes, options.alignment, options.exact);
  TERN_CHECK_OR_RETURN_ERROR(method_block != nullptr, MemoryAllocationFailed,
                             "cannot allocate the method allocator buffer of %llu bytes",
                             static_cast<unsigned long long>(final_sizes.method_bytes));

  std::vector<HeapBlock> arena_blocks;
  std::vector<Span<uint8_t>> arenas;
  arena_blocks.reserve(sizes.arenas.size());
  arenas.reserve(sizes.arenas.size());
  for (size_t a = 0; a < sizes.arenas.size(); ++a) {
    const uint64_t size = sizes.arenas[a];
    const uint32_t own_alignment = sizes.alignments[a];
    TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(own_alignment), InvalidProgram,
                               "arena %zu alignment %u is not a power of two", a, own_alignment);
    const size_t alignment = own_alignment > options.alignment ? own_alignment : options.alignment;
    HeapBlock block = allocate_heap_block(size, alignment, options.exact);
    TERN_CHECK_OR_RETURN_ERROR(block != nullptr, MemoryAllocationFailed,
                               "cannot allocate the buffer of arena %zu: %llu bytes aligned to %zu",
                               a, static_cast<unsigned long long>(size), alignment);
    arenas.emplace_back(block.get(), static_cast<size_t>(size));
    arena_blocks.push_back(std::move(block));
  }

  HeapBlock temp_block =
      allocate_heap_block(final_sizes.temp_bytes, options.alignment, options.exact);
  TERN_CHECK_OR_RETURN_ERROR(temp_block != nullptr, MemoryAllocationFailed,
                             "cannot allocate the temp allocator buffer of %llu bytes",
                             static_cast<unsigned long long>(final_sizes.temp_bytes));

  sizes_ = std::move(final_sizes);
  method_block_ = std::move(method_block);
  arena_blocks_ = std::move(arena_blocks);
  arenas_ = std::move(arenas);
  temp_block_ = std::move(temp_block);
  return Error::Ok;
}

Error SharedStateBuffer::allocate(const Program& program) {
  const size_t bytes = program.shared_state_bytes();
  if (bytes == 0) return Error::Ok;
  block_ = allocate_heap_block(bytes, 64, false);
  TERN_CHECK_OR_RETURN_ERROR(block_ != nullptr, MemoryAllocationFailed,
                             "cannot allocate the program's %zu-byte shared state buffer", bytes);
  span_ = Span<uint8_t>(block_.get(), bytes);
  return program.init_shared_state(span_);
}

}  // namespace tern
