// DataLoader: where a program's bytes come from (a file read with pread, an mmap, or a
// caller's buffer). The implementations live in runtime/loader/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/freeable_buffer.h"
#include "runtime/core/result.h"

namespace tern {

/// The alignment DataLoader::load() guarantees for ranges at multiples of it: enough for
/// every kernel's vector loads and for FlatBuffers.
constexpr size_t kLoaderAlignment = 64;

/// Source of a program's bytes. Implementations: FileDataLoader (pread into heap buffers at
/// load), MmapDataLoader (zero-copy), BufferDataLoader (a caller's memory).
class DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// Total size in bytes.
  virtual Result<size_t> size() const = 0;
  /// The bytes [offset, offset + size). The alignment promise every loader keeps, and the
  /// Program relies on without copying: the data is aligned to at least
  /// min(kLoaderAlignment, the largest power of two dividing `offset`), so a range at a
  /// 64-byte multiple comes back 64-byte aligned (mmap: page-aligned base; file: aligned heap
  /// buffer; caller's buffer: used in place when aligned, else an aligned copy of the range).
  /// The buffer stays valid until freed, and the loader must outlive it.
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
