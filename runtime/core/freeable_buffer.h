// FreeableBuffer: bytes handed from one owner to another that may need freeing (a view of a
// caller's buffer, a slice of an mmap, a heap copy).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"

namespace tern {

/// Bytes that may need freeing: a view of a caller's buffer, a slice of an mmap, or a
/// heap copy. Move-only; frees itself on destruction through the function it was given.
class FreeableBuffer {
 public:
  using FreeFn = void (*)(void* context, void* data, size_t size);

  FreeableBuffer() = default;
  /// `free_fn` (may be null) is called once with (context, data, size) on free().
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn, void* context = nullptr)
      : data_(data), size_(size), free_fn_(free_fn), context_(context) {}
  FreeableBuffer(FreeableBuffer&& other) noexcept { *this = static_cast<FreeableBuffer&&>(other); }
  FreeableBuffer& operator=(FreeableBuffer&& other) noexcept {
    if (this != &other) {
      free();
      data_ = other.data_; size_ = other.size_; free_fn_ = other.free_fn_; context_ = other.context_;
      other.data_ = nullptr; other.size_ = 0; other.free_fn_ = nullptr; other.context_ = nullptr;
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  void free() {
    if (free_fn_ != nullptr) {
      free_fn_(context_, const_cast<void*>(data_), size_);
    }
    data_ = nullptr; size_ = 0; free_fn_ = nullptr; context_ = nullptr;
  }
  const void* data() const { return data_; }
  size_t size() const { return size_; }
  /// The bytes as a span (valid until freed).
  Span<const uint8_t> bytes() const {
    return Span<const uint8_t>(static_cast<const uint8_t*>(data_), size_);
  }

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace tern
