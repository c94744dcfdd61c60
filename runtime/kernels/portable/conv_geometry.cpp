#include "runtime/kernels/portable/conv_geometry.h"

#include <cinttypes>

#include "runtime/kernels/util/scratch_sizes.h"

namespace tern::portable {

Error window_output_size(const char* op, const char* dim_name, int64_t in, int64_t k,
                         int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                         int64_t* out) {
  int64_t padded = 0;
  int64_t span = 0;
  bool ok = !__builtin_mul_overflow(pad, int64_t{2}, &padded) &&
            !__builtin_add_overflow(in, padded, &padded) &&
            !__builtin_mul_overflow(dilation, k - 1, &span) &&
            !__builtin_add_overflow(span, int64_t{1}, &span);
  TERN_CHECK_OR_RETURN_ERROR(ok, InvalidArgument,
                             "%s: %s: size %" PRId64 ", padding %" PRId64 ", kernel %" PRId64
                             " and dilation %" PRId64 " overflow",
                             op, dim_name, in, pad, k, dilation);
  TERN_CHECK_OR_RETURN_ERROR(padded >= span, InvalidArgument,
                             "%s: %s: the window (kernel %" PRId64 ", dilation %" PRId64
                             ") spans %" PRId64 " but the padded input has %" PRId64
                             ": output size would be below 1",
                             op, dim_name, k, dilation, span, padded);
  const int64_t room = padded - span;
  int64_t size = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (size - 1) * stride >= in + pad) --size;
  *out = size;
  return Error::Ok;
}

Error allocate_scratch(const char* op, MemoryAllocator* allocator, uint64_t bytes, float** out) {
  *out = nullptr;
  if (bytes == 0) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(allocator != nullptr, MemoryAllocationFailed,
                             "%s: needs %" PRIu64 " bytes of scratch but has no temp allocator",
                             op, bytes);
  void* p = bytes <= SIZE_MAX ? allocator->allocate(static_cast<size_t>(bytes), kScratchAlignment)
                              : nullptr;
  TERN_CHECK_OR_RETURN_ERROR(p != nullptr, MemoryAllocationFailed,
                             "%s: needs %" PRIu64 " bytes of scratch, the temp allocator has %zu "
                             "of %zu bytes free",
                             op, bytes, allocator->size() - allocator->used(), allocator->size());
  *out = static_cast<float*>(p);
  return Error::Ok;
}

}  // namespace tern::portable
