// tern::expand(x, sizes, out): broadcasts x to `sizes` (-1 keeps a dim) as a copy.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error expand(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::expand";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> sizes,
                        int_list_arg(op, args, 1, "sizes", kMaxRank));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(sizes.size() >= x->rank, InvalidArgument,
                             "%s: sizes: expected at least %u entries (x's rank), found %zu", op,
                             x->rank, sizes.size());
  const uint32_t rank = static_cast<uint32_t>(sizes.size());
  const uint32_t lead = rank - x->rank;
  int64_t x_strides[kMaxRank];
  contiguous_strides(x->shape(), x_strides);
  FixedShape shape;
  shape.rank = rank;
  int64_t strides[kMaxRank];
  char xs[160];
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t want = sizes[d];
    if (d < lead) {
      TERN_CHECK_OR_RETURN_ERROR(want >= 0, InvalidArgument,
                                 "%s: sizes: %" PRId64 " at new leading dim %u; expected a size "
                                 ">= 0",
                                 op, want, d);
      shape.sizes[d] = want;
      strides[d] = 0;
      continue;
    }
    const int64_t have = x->sizes[d - lead];
    if (want == -1 || want == have) {
      shape.sizes[d] = have;
      strides[d] = x_strides[d - lead];
    } else {
      TERN_CHECK_OR_RETURN_ERROR(have == 1 && want >= 0, InvalidArgument,
                                 "%s: sizes: cannot expand dim %u of x %s (size %" PRId64
                                 ") to %" PRId64 "; only size-1 dims expand",
                                 op, d - lead, format_shape(x->shape(), xs, sizeof(xs)), have,
                                 want);
      shape.sizes[d] = want;
      strides[d] = 0;
    }
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  strided_copy(out->data, x->data, element_size(x->dtype), shape.span(), strides);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
