// tern::split(x, split_sizes, dim, out0, out1, ...): consecutive pieces of x along dim; each
// a view (nothing copied) when the planner aliased it.
#include <cinttypes>
#include <cstdio>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/util/split_piece.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error split(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::split";
  TERN_CHECK_OR_RETURN_ERROR(args.size() >= 4, InvalidArgument,
                             "%s: expected x, split_sizes, dim and at least one output, found %zu "
                             "arguments",
                             op, args.size());
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> sizes,
                        int_list_arg(op, args, 1, "split_sizes", SIZE_MAX));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 2, "dim"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_CHECK_OR_RETURN_ERROR(x->rank > 0, InvalidArgument,
                             "%s: x: a rank-0 tensor cannot be split", op);
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", raw_dim, x->rank));
  const size_t num_outputs = args.size() - 3;
  char list[160];
  for (size_t k = 0; k < num_outputs; ++k) {
    char name[32];
    std::snprintf(name, sizeof(name), "out%zu", k);
    TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3 + k, name));
    TERN_RETURN_IF_ERROR(check_dtype(op, name, *out, x->dtype));
    int64_t start = 0, len = 0;
    TERN_CHECK_OR_RETURN_ERROR(
        split_piece(sizes.data(), sizes.size(), x->sizes[dim], num_outputs, k, &start, &len),
        InvalidArgument,
        "%s: split_sizes %s do not split dim %u of size %" PRId64 " into %zu outputs (expected "
        "one non-negative size per output summing to %" PRId64 ", or one chunk size)",
        op, format_shape(sizes, list, sizeof(list)), dim, x->sizes[dim], num_outputs,
        x->sizes[dim]);
    FixedShape shape;
    shape.rank = x->rank;
    for (uint32_t d = 0; d < x->rank; ++d) shape.sizes[d] = d == dim ? len : x->sizes[d];
    TERN_RETURN_IF_ERROR(check_shape(op, name, *out, shape.span()));
    copy_piece(*x, dim, start, len, 1, *out);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
