// MmapDataLoader: maps the whole file read-only; load() returns zero-copy slices.
#pragma once

#include "runtime/executor/data_loader.h"

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

 private:
  MmapDataLoader(void* base, size_t size) : base_(base), size_(size) {}
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tern
