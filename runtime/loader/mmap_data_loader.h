// MmapDataLoader: maps the whole file read-only; load() returns zero-copy slices.
#pragma once

#include "runtime/core/data_loader.h"

namespace tern {

/// Maps `path` once. Slices returned by load() point into the mapping and need no freeing
/// beyond the loader itself, which must outlive them.
class MmapDataLoader final : public DataLoader {
 public:
  /// AccessFailed names the path and the OS error.
  static Result<MmapDataLoader> from(const char* path);
  MmapDataLoader(MmapDataLoader&& other) noexcept;
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader() override;

  Result<size_t> size() const override;
  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  /// Drops the whole pages of [data, data + size) inside the mapping from this process's memory
  /// (madvise MADV_DONTNEED on a read-only private file mapping: the bytes read back from the
  /// file's page cache on the next touch). Ranges outside the mapping are ignored.
  void release_resident(const void* data, size_t size) override;

 private:
  MmapDataLoader(void* base, size_t size) : base_(base), size_(size) {}
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tern
