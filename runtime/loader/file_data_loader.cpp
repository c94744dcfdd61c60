#include "runtime/loader/file_data_loader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"
#include "runtime/loader/regular_file.h"

namespace tern {
namespace {

constexpr size_t kMinAlignment = 64;
constexpr size_t kMaxAlignment = 4096;

/// The largest power of two dividing `offset`, clamped to [64, 4096], so that a segment
/// aligned in the file is equally aligned in memory.
size_t buffer_alignment(size_t offset) {
  if (offset == 0) return kMaxAlignment;
  const size_t lowest = offset & (~offset + 1);
  if (lowest < kMinAlignment) return kMinAlignment;
  return lowest > kMaxAlignment ? kMaxAlignment : lowest;
}

void free_heap(void* /*context*/, void* data, size_t /*size*/) { std::free(data); }

}  // namespace

Result<FileDataLoader> FileDataLoader::from(const char* path) {
  TERN_ASSIGN_OR_RETURN(const RegularFile file, open_regular_file(path));
  return FileDataLoader(file.fd, file.size);
}

FileDataLoader::FileDataLoader(FileDataLoader&& other) noexcept
    : fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
  other.size_ = 0;
}

FileDataLoader::~FileDataLoader() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Result<size_t> FileDataLoader::size() const {
  TERN_CHECK_OR_RETURN_ERROR(fd_ >= 0, InvalidState, "file data loader was moved from");
  return size_;
}

Result<FreeableBuffer> FileDataLoader::load(size_t offset, size_t size) {
  TERN_CHECK_OR_RETURN_ERROR(fd_ >= 0, InvalidState, "file data loader was moved from");
  TERN_CHECK_OR_RETURN_ERROR(range_within(offset, size, size_), InvalidArgument,
                             "file load of [%zu, +%zu) is outside the %zu-byte file", offset, size,
                             size_);
  if (size == 0) {
    return FreeableBuffer(nullptr, 0, nullptr);
  }
  void* data = nullptr;
  const size_t alignment = buffer_alignment(offset);
  TERN_CHECK_OR_RETURN_ERROR(
      posix_memalign(&data, alignment, size) == 0 && data != nullptr, MemoryAllocationFailed,
      "cannot allocate %zu bytes (alignment %zu) to read the file", size, alignment);
  uint8_t* out = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      std::free(data);
      TERN_RETURN_ERROR(AccessFailed, "read of [%zu, +%zu) failed at byte %zu: %s", offset, size,
                        offset + done, strerror(err));
    }
    if (got == 0) {
      std::free(data);
      TERN_RETURN_ERROR(AccessFailed,
                        "read of [%zu, +%zu) hit the end of the file at byte %zu (the file "
                        "shrank after it was opened?)",
                        offset, size, offset + done);
    }
    done += static_cast<size_t>(got);
  }
  return FreeableBuffer(data, size, free_heap);
}

}  // namespace tern
