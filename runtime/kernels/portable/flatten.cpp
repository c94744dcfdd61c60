// tern::flatten(x, start_dim, end_dim, out): a view merging dims start..end into one.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/view_kernel.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error flatten(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::flatten";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t start_raw, int_arg(op, args, 1, "start_dim"));
  TERN_ASSIGN_OR_RETURN(const int64_t end_raw, int_arg(op, args, 2, "end_dim"));
  TERN_ASSIGN_OR_RETURN(const uint32_t start, wrap_dim(op, "start_dim", start_raw, x->rank));
  TERN_ASSIGN_OR_RETURN(const uint32_t end, wrap_dim(op, "end_dim", end_raw, x->rank));
  TERN_CHECK_OR_RETURN_ERROR(start <= end, InvalidArgument,
                             "%s: start_dim %u (from %" PRId64 ") comes after end_dim %u (from "
                             "%" PRId64 ")",
                             op, start, start_raw, end, end_raw);
  FixedShape shape;
  if (x->rank == 0) {  // ATen: a scalar flattens to [1]
    shape.rank = 1;
    shape.sizes[0] = 1;
    return finish_view(op, *x, *out, shape.span());
  }
  for (uint32_t d = 0; d < start; ++d) shape.sizes[shape.rank++] = x->sizes[d];
  int64_t merged = 1;
  for (uint32_t d = start; d <= end; ++d) merged *= x->sizes[d];  // x's numel was checked
  shape.sizes[shape.rank++] = merged;
  for (uint32_t d = end + 1; d < x->rank; ++d) shape.sizes[shape.rank++] = x->sizes[d];
  return finish_view(op, *x, *out, shape.span());
}

}  // namespace portable
}  // namespace tern
