// FileDataLoader: reads a file with pread into aligned heap buffers, at load time.
#pragma once

#include "runtime/core/data_loader.h"

namespace tern {

/// Owns an open file descriptor. Each load() reads the range into a new 64-byte aligned heap
/// buffer (allocation at load time is allowed; execute() never loads).
class FileDataLoader final : public DataLoader {
 public:
  /// Opens `path`; AccessFailed names the path and the OS error.
  static Result<FileDataLoader> from(const char* path);
  FileDataLoader(FileDataLoader&& other) noexcept;
  FileDataLoader& operator=(FileDataLoader&&) = delete;
  ~FileDataLoader() override;

  Result<size_t> size() const override;
  Result<FreeableBuffer> load(size_t offset, size_t size) override;

 private:
  FileDataLoader(int fd, size_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  size_t size_ = 0;
};

}  // namespace tern
