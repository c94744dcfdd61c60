// tern::slice(x, dim, start, end, step, out) and tern::select(x, dim, index, out): pieces of
// x along one dim; views (nothing copied) when the planner aliased a contiguous piece.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error slice(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::slice";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 5, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  bool has_start = false, has_end = false;
  int64_t start = 0, end = INT64_MAX;
  TERN_RETURN_IF_ERROR(optional_int_arg(op, args, 2, "start", &has_start, &start));
  TERN_RETURN_IF_ERROR(optional_int_arg(op, args, 3, "end", &has_end, &end));
  TERN_ASSIGN_OR_RETURN(const int64_t step, int_arg(op, args, 4, "step"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(x->rank > 0, InvalidArgument,
                             "%s: x: a rank-0 tensor cannot be sliced", op);
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", raw_dim, x->rank));
  TERN_CHECK_OR_RETURN_ERROR(step > 0, InvalidArgument,
                             "%s: step: expected a positive step, found %" PRId64, op, step);
  // ATen: negative bounds count from the end; both clamp into [0, size]; end >= start.
  const int64_t size = x->sizes[dim];
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  if (start > size) start = size;
  if (end < start) end = start;
  if (end > size) end = size;
  const int64_t span = end - start;
  const int64_t len = span == 0 ? 0 : (span - 1) / step + 1;
  FixedShape shape;
  shape.rank = x->rank;
  for (uint32_t d = 0; d < x->rank; ++d) shape.sizes[d] = d == dim ? len : x->sizes[d];
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  copy_piece(*x, dim, start, len, step, *out);
  return Error::Ok;
}

Error select(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::select";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(int64_t index, int_arg(op, args, 2, "index"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(x->rank > 0, InvalidArgument,
                             "%s: x: select() cannot be applied to a rank-0 tensor", op);
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", raw_dim, x->rank));
  const int64_t size = x->sizes[dim];
  TERN_CHECK_OR_RETURN_ERROR(index >= -size && index < size, InvalidArgument,
                             "%s: index %" PRId64 " out of range for dim %u of size %" PRId64
                             " (expected in [%" PRId64 ", %" PRId64 "])",
                             op, index, dim, size, -size, size - 1);
  if (index < 0) index += size;
  FixedShape shape;
  for (uint32_t d = 0; d < x->rank; ++d) {
    if (d != dim) shape.sizes[shape.rank++] = x->sizes[d];
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  copy_piece(*x, dim, index, 1, 1, *out);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
