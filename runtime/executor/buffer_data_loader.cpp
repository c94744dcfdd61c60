#include "runtime/executor/buffer_data_loader.h"

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"

namespace tern {

Result<FreeableBuffer> BufferDataLoader::load(size_t offset, size_t size) {
  TERN_CHECK_OR_RETURN_ERROR(range_within(offset, size, size_), InvalidArgument,
                             "buffer load of [%zu, +%zu) is outside the %zu-byte buffer", offset,
                             size, size_);
  TERN_CHECK_OR_RETURN_ERROR(data_ != nullptr || size_ == 0, InvalidArgument,
                             "buffer data loader has a null buffer of %zu bytes", size_);
  const uint8_t* base = static_cast<const uint8_t*>(data_);
  return FreeableBuffer(size == 0 ? nullptr : base + offset, size, nullptr);
}

}  // namespace tern
