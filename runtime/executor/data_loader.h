// DataLoader: where a program's bytes come from (a file read with pread, an mmap, or a
// caller's buffer), and FreeableBuffer, the bytes it hands out.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

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

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

/// Source of a program's bytes. Implementations: FileDataLoader (pread into heap buffers at
/// load), MmapDataLoader (zero-copy), BufferDataLoader (a caller's memory).
class DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// Total size in bytes.
  virtual Result<size_t> size() const = 0;
  /// The bytes [offset, offset + size), aligned to at least 64 bytes when offset is a
  /// multiple of 64 (mmap: page-aligned base; file: aligned heap buffer; buffer: the
  /// caller's alignment). The buffer stays valid until freed, and the loader must outlive it.
  /// Out of range: InvalidArgument naming the range and the size.
  virtual Result<FreeableBuffer> load(size_t offset, size_t size) = 0;
  /// A hint after a one-off read of bytes a load() returned (e.g. checksumming them): they need
  /// not stay in this process's memory. They stay valid; a loader whose buffers are backed by
  /// their source (MmapDataLoader) drops the pages and the next touch reads them again from the
  /// page cache, so weights only verified (a delegate's portable fallback) never count in the
  /// process's RSS. Heap and caller buffers ignore it (the default).
  virtual void release_resident(const void* data, size_t size) {
    (void)data;
    (void)size;
  }
};

}  // namespace tern
