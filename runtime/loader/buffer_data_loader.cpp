#include "runtime/loader/buffer_data_loader.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"

namespace tern {
namespace {

void free_copy(void* /*context*/, void* data, size_t /*size*/) { std::free(data); }

}  // namespace

Result<FreeableBuffer> BufferDataLoader::load(size_t offset, size_t size) {
  TERN_CHECK_OR_RETURN_ERROR(range_within(offset, size, size_), InvalidArgument,
                             "buffer load of [%zu, +%zu) is outside the %zu-byte buffer", offset,
                             size, size_);
  TERN_CHECK_OR_RETURN_ERROR(data_ != nullptr || size_ == 0, InvalidArgument,
                             "buffer data loader has a null buffer of %zu bytes", size_);
  if (size == 0) return FreeableBuffer(nullptr, 0, nullptr);
  const uint8_t* data = static_cast<const uint8_t*>(data_) + offset;
  const size_t lowest = offset == 0 ? kLoaderAlignment : (offset & (~offset + 1));
  const size_t promised = lowest < kLoaderAlignment ? lowest : kLoaderAlignment;
  if (reinterpret_cast<uintptr_t>(data) % promised == 0) {
    return FreeableBuffer(data, size, nullptr);
  }
  void* copy = nullptr;
  TERN_CHECK_OR_RETURN_ERROR(posix_memalign(&copy, kLoaderAlignment, size) == 0 && copy != nullptr,
                             MemoryAllocationFailed,
                             "cannot allocate %zu bytes to align a range of the caller's "
                             "unaligned buffer to %zu bytes",
                             size, kLoaderAlignment);
  std::memcpy(copy, data, size);
  return FreeableBuffer(copy, size, free_copy);
}

}  // namespace tern
