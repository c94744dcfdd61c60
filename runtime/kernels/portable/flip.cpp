// tern::flip(x, dims, out): x with the order of its elements reversed along each listed dim
// (torch.flip); a copy through the strided copy with those dims' strides negated.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error flip(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::flip";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> dims,
                        int_list_arg(op, args, 1, "dims", kMaxRank));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  bool flipped[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    // A 0-D x takes dims 0 and -1 (as ATen), and flipping it is a copy.
    TERN_ASSIGN_OR_RETURN(const uint32_t d, wrap_dim(op, "dims", dims[i], x->rank));
    TERN_CHECK_OR_RETURN_ERROR(!flipped[d], InvalidArgument,
                               "%s: dims: dim %u appears more than once", op, d);
    flipped[d] = true;
  }
  if (x->numel() == 0) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(out->data != x->data || x->numel() <= 1, InvalidArgument,
                             "%s: out shares x's memory; a flipped copy needs its own", op);
  int64_t strides[kMaxRank];
  contiguous_strides(x->shape(), strides);
  int64_t start = 0;  // the element of x that out's first element is
  for (uint32_t d = 0; d < x->rank; ++d) {
    if (!flipped[d]) continue;
    start += (x->sizes[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  const size_t es = element_size(x->dtype);
  strided_copy(out->data, static_cast<const uint8_t*>(x->data) + static_cast<size_t>(start) * es,
               es, x->shape(), strides);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
