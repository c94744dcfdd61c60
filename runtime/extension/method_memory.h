// MethodMemory: every buffer one loaded method runs in (its method allocator, one buffer per
// planned arena, its temp allocator), allocated on the heap from its MethodMeta, and the
// MemoryManager over them. Heap at allocate() only; nothing here runs during execute().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace tern {

/// Frees a HeapBlock (std::free).
struct HeapBlockDeleter {
  void operator()(uint8_t* block) const;
};
/// One heap block from allocate_heap_block(), owned by whoever holds it.
using HeapBlock = std::unique_ptr<uint8_t, HeapBlockDeleter>;

/// A heap block of `size` bytes whose base is aligned to `alignment` (a power of two; raised to
/// at least pointer alignment). `exact`: the block is exactly `size` bytes (1 when `size` is 0),
/// so that a read one byte past is outside it (ASan reports it); otherwise it is rounded up to
/// a multiple of the alignment. Null when `alignment` is not a power of two, when the size
/// exceeds PTRDIFF_MAX (refused before asking the heap) or when the heap is exhausted. Sets no
/// error message.
HeapBlock allocate_heap_block(uint64_t size, size_t alignment, bool exact);

/// The sizes of everything a method is given. planned() reads them from a MethodMeta; callers
/// may change them before allocating (tests shrink one buffer to see a load fail).
struct MethodMemorySizes {
  uint64_t method_bytes = 0;         ///< the method allocator's buffer
  std::vector<uint64_t> arenas;      ///< bytes of arena i
  std::vector<uint32_t> alignments;  ///< alignment of arena i's base (same length as arenas)
  uint64_t temp_bytes = 0;           ///< the temp allocator's buffer

  /// What `meta` plans: method_allocator_bytes(), arena_size(i) and arena_alignment(i) of
  /// every arena, temp_allocator_bytes(). Errors: those of MethodMeta::arena_size() and
  /// MethodMeta::arena_alignment().
  static Result<MethodMemorySizes> planned(const MethodMeta& meta);
};

/// How MethodMemory sizes and places its buffers; the defaults give exactly what the sizes
/// ask, in 64-byte aligned blocks rounded up to 64 bytes.
struct MethodMemoryOptions {
  /// Added to the method allocator's buffer, for backends that keep their host state in the
  /// method allocator (MethodMeta::method_allocator_bytes() does not count it).
  uint64_t extra_method_bytes = 0;
  /// The temp allocator's buffer has at least this many bytes.
  uint64_t min_temp_bytes = 0;
  /// Alignment of every buffer's base (a power of two); an arena gets the larger of this and
  /// its own alignment.
  size_t alignment = 64;
  /// true: each heap block is exactly as large as its buffer (see allocate_heap_block), for
  /// tests that let ASan catch one byte past; false: blocks rounded up to their alignment.
  bool exact = false;
};

/// The heap blocks behind a BasicMethodMemory and the spans over them; owns the blocks. Use
/// BasicMethodMemory (or MethodMemory) unless you build the allocators yourself.
class MethodBuffers {
 public:
  MethodBuffers() = default;
  MethodBuffers(const MethodBuffers&) = delete;
  MethodBuffers& operator=(const MethodBuffers&) = delete;

  /// Allocates every buffer of `sizes` as `options` says, all or none, in this order: the
  /// method allocator's, arena 0, 1, ..., the temp allocator's. Errors: InvalidState when
  /// called before (a MethodBuffers allocates once); InvalidArgument for an alignment that is
  /// not a power of two or `sizes.alignments` not as long as `sizes.arenas`; InvalidProgram
  /// for an arena alignment that is not a power of two; MemoryAllocationFailed, naming the
  /// buffer and its size in bytes, when a size overflows or the heap refuses a block.
  Error allocate(const MethodMemorySizes& sizes, const MethodMemoryOptions& options);

  /// The sizes allocated (extra_method_bytes and min_temp_bytes applied); empty before a
  /// successful allocate().
  const MethodMemorySizes& sizes() const { return sizes_; }
  /// The method allocator's buffer: sizes().method_bytes bytes, valid while this lives.
  Span<uint8_t> method_buffer() const {
    return Span<uint8_t>(method_block_.get(), static_cast<size_t>(sizes_.method_bytes));
  }
  /// Arena i's buffer is arenas()[i], exactly sizes().arenas[i] bytes, valid while this lives.
  Span<Span<uint8_t>> arenas() { return Span<Span<uint8_t>>(arenas_.data(), arenas_.size()); }
  Span<const Span<uint8_t>> arenas() const {
    return Span<const Span<uint8_t>>(arenas_.data(), arenas_.size());
  }
  /// The temp allocator's buffer: sizes().temp_bytes bytes, valid while this lives.
  Span<uint8_t> temp_buffer() const {
    return Span<uint8_t>(temp_block_.get(), static_cast<size_t>(sizes_.temp_bytes));
  }

 private:
  MethodMemorySizes sizes_;
  HeapBlock method_block_;
  std::vector<HeapBlock> arena_blocks_;
  std::vector<Span<uint8_t>> arenas_;
  HeapBlock temp_block_;
};

/// Owns every buffer one method runs in and the MemoryManager over them: pass manager() to
/// Program::load_method() and keep this object alive, unmoved, as long as the Method lives
/// (the manager points at allocators inside it, hence no copy and no move; hold it in a
/// unique_ptr or a node that never moves). `Allocator` is the type of the method and temp
/// allocators: MemoryAllocator, or a subclass constructible from (void* base, size_t size),
/// default-constructible and assignable (tests count allocate() calls this way).
template <class Allocator = MemoryAllocator>
class BasicMethodMemory {
  static_assert(std::is_base_of<MemoryAllocator, Allocator>::value,
                "BasicMethodMemory: Allocator must derive from MemoryAllocator");

 public:
  /// Nothing allocated yet: manager() has null allocators until allocate() succeeds.
  BasicMethodMemory() = default;
  BasicMethodMemory(const BasicMethodMemory&) = delete;
  BasicMethodMemory& operator=(const BasicMethodMemory&) = delete;

  /// Allocates what `meta` plans (MethodMemorySizes::planned()) as `options` says. Errors:
  /// those of MethodMemorySizes::planned() and of the overload below. The messages name the
  /// buffer, not the method: callers chain their own context (chain_error_message).
  Error allocate(const MethodMeta& meta, const MethodMemoryOptions& options = {}) {
    TERN_ASSIGN_OR_RETURN(MethodMemorySizes sizes, MethodMemorySizes::planned(meta));
    return allocate(sizes, options);
  }
  /// Allocates every buffer of `sizes` as `options` says and points manager() at them; on an
  /// error nothing is allocated. Call once. Errors: as MethodBuffers::allocate().
  Error allocate(const MethodMemorySizes& sizes, const MethodMemoryOptions& options = {}) {
    TERN_RETURN_IF_ERROR(buffers_.allocate(sizes, options));
    const Span<uint8_t> method = buffers_.method_buffer();
    const Span<uint8_t> temp = buffers_.temp_buffer();
    method_allocator_ = Allocator(method.data(), method.size());
    planned_memory_ = HierarchicalAllocator(buffers_.arenas());
    temp_allocator_ = Allocator(temp.data(), temp.size());
    manager_.method_allocator = &method_allocator_;
    manager_.planned_memory = &planned_memory_;
    manager_.temp_allocator = &temp_allocator_;
    return Error::Ok;
  }

  /// The memory manager over this object's allocators; valid (and pointing here) while this
  /// object lives. Callers may repoint its fields (tests do, to provoke load errors).
  MemoryManager* manager() { return &manager_; }
  /// The method allocator, over buffers().method_buffer().
  Allocator& method_allocator() { return method_allocator_; }
  const Allocator& method_allocator() const { return method_allocator_; }
  /// The temp allocator, over buffers().temp_buffer().
  Allocator& temp_allocator() { return temp_allocator_; }
  const Allocator& temp_allocator() const { return temp_allocator_; }
  /// The planned arenas' buffers (arena i: exactly sizes().arenas[i] bytes).
  Span<const Span<uint8_t>> arenas() const { return buffers_.arenas(); }
  /// The sizes allocated (options applied); empty before a successful allocate().
  const MethodMemorySizes& sizes() const { return buffers_.sizes(); }
  /// The heap blocks themselves.
  const MethodBuffers& buffers() const { return buffers_; }

 private:
  MethodBuffers buffers_;
  Allocator method_allocator_;
  HierarchicalAllocator planned_memory_;
  Allocator temp_allocator_;
  MemoryManager manager_;
};

/// BasicMethodMemory with plain bump allocators: what Module uses.
using MethodMemory = BasicMethodMemory<MemoryAllocator>;

/// A program's shared state buffer (format 1.2, docs/format.md "Shared state") on the heap:
/// Program::shared_state_bytes(), 64-byte aligned, allocated and initialised once; empty when
/// the program has none. What Module and the C API give every method of a program.
class SharedStateBuffer {
 public:
  /// Allocates the buffer and initialises it (Program::init_shared_state). Call once.
  /// MemoryAllocationFailed naming the size.
  Error allocate(const Program& program);
  /// The buffer (empty before allocate() or for a program without shared state).
  Span<uint8_t> span() const { return span_; }

 private:
  HeapBlock block_;
  Span<uint8_t> span_;
};

}  // namespace tern
