// BufferDataLoader: a program already in memory (embedded array, downloaded bytes).
#pragma once

#include "runtime/core/data_loader.h"

namespace tern {

/// Wraps a caller's buffer, which the caller keeps alive and unchanged for as long as the
/// loader and any Program loaded from it. A 64-byte aligned buffer is used in place (zero
/// copy); otherwise load() keeps the alignment promise with an aligned heap copy of each range.
class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size) : data_(data), size_(size) {}
  Result<size_t> size() const override { return size_; }
  Result<FreeableBuffer> load(size_t offset, size_t size) override;

 private:
  const void* data_;
  size_t size_;
};

}  // namespace tern
