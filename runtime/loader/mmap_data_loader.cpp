#include "runtime/loader/mmap_data_loader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"
#include "runtime/loader/regular_file.h"

namespace tern {

Result<MmapDataLoader> MmapDataLoader::from(const char* path) {
  TERN_ASSIGN_OR_RETURN(const RegularFile file, open_regular_file(path));
  const int fd = file.fd;
  const size_t size = file.size;
  if (size == 0) {
    ::close(fd);
    return MmapDataLoader(nullptr, 0);
  }
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  TERN_CHECK_OR_RETURN_ERROR(base != MAP_FAILED, AccessFailed, "cannot mmap '%s' (%zu bytes): %s",
                             path, size, strerror(err));
  return MmapDataLoader(base, size);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) noexcept
    : base_(other.base_), size_(other.size_) {
  other.base_ = nullptr;
  other.size_ = 0;
}

MmapDataLoader::~MmapDataLoader() {
  if (base_ != nullptr) {
    ::munmap(base_, size_);
  }
}

Result<size_t> MmapDataLoader::size() const { return size_; }

Result<FreeableBuffer> MmapDataLoader::load(size_t offset, size_t size) {
  TERN_CHECK_OR_RETURN_ERROR(range_within(offset, size, size_), InvalidArgument,
                             "mmap load of [%zu, +%zu) is outside the %zu-byte file", offset, size,
                             size_);
  if (size == 0) {
    return FreeableBuffer(nullptr, 0, nullptr);
  }
  return FreeableBuffer(static_cast<const uint8_t*>(base_) + offset, size, nullptr);
}

void MmapDataLoader::release_resident(const void* data, size_t size) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(base_);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  if (base_ == nullptr || begin < base || begin - base > size_ || size > size_ - (begin - base)) {
    return;
  }
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page;  // whole pages only
  const uintptr_t end = (begin + size) / page * page;
  if (end > first) {
    // Advice only: a failure leaves the pages resident, which is still correct.
    (void)::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
  }
}

}  // namespace tern
