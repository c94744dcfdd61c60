#include "runtime/kernels/portable/conv_geometry.h"

#include <cinttypes>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern::portable {

Error conv_tensor_args(const char* op, Span<EValue*> args, size_t num_args, uint32_t spatial,
                       ConvTensors* t) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, num_args, num_args));
  TERN_ASSIGN_OR_RETURN(t->x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(t->weight, tensor_arg(op, args, 1, "weight"));
  TERN_ASSIGN_OR_RETURN(t->bias, optional_tensor_arg(op, args, 2, "bias"));
  TERN_ASSIGN_OR_RETURN(t->out, tensor_arg(op, args, num_args - 1, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "x", *t->x, spatial + 1, spatial + 2));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "weight", *t->weight, spatial + 2, spatial + 2));
  return check_dtype(op, "out", *t->out, DType::F32);
}

Error check_conv_output(const char* op, const ConvGeometry& g, uint32_t spatial, bool batched,
                        const ConvTensors& t) {
  if (t.bias != nullptr) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "bias", *t.bias, DType::F32));
    const int64_t want_bias[1] = {g.out_channels};
    TERN_RETURN_IF_ERROR(check_shape(op, "bias", *t.bias, Span<const int64_t>(want_bias)));
  }
  int64_t want[4];
  uint32_t rank = 0;
  if (batched) want[rank++] = g.batch;
  want[rank++] = g.out_channels;
  if (spatial == 2) want[rank++] = g.out_h;
  want[rank++] = g.out_w;
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *t.out, Span<const int64_t>(want, rank)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *t.out, *t.x, "x"));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *t.out, *t.weight, "weight"));
  if (t.bias != nullptr) TERN_RETURN_IF_ERROR(check_no_overlap(op, *t.out, *t.bias, "bias"));
  return Error::Ok;
}

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
