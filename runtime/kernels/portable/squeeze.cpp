// tern::squeeze(x, dims, out) and tern::unsqueeze(x, dim, out): views that drop or add
// size-1 dims.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/view_kernel.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error squeeze(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::squeeze";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> dims,
                        int_list_arg(op, args, 1, "dims", kMaxRank));
  bool drop[kMaxRank] = {};
  bool seen[kMaxRank] = {};
  if (dims.size() == 0) {
    for (uint32_t d = 0; d < x->rank; ++d) drop[d] = x->sizes[d] == 1;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    TERN_ASSIGN_OR_RETURN(const uint32_t d, wrap_dim(op, "dims", dims[i], x->rank));
    if (x->rank == 0) continue;  // a scalar stays a scalar
    TERN_CHECK_OR_RETURN_ERROR(!seen[d], InvalidArgument,
                               "%s: dims: dim %u appears more than once", op, d);
    seen[d] = true;
    // ATen: a listed dim whose size is not 1 stays.
    drop[d] = x->sizes[d] == 1;
  }
  FixedShape shape;
  for (uint32_t d = 0; d < x->rank; ++d) {
    if (!drop[d]) shape.sizes[shape.rank++] = x->sizes[d];
  }
  return finish_view(op, *x, *out, shape.span());
}

Error unsqueeze(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::unsqueeze";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t dim, int_arg(op, args, 1, "dim"));
  TERN_CHECK_OR_RETURN_ERROR(x->rank < kMaxRank, InvalidArgument,
                             "%s: x: rank %u is already the maximum %zu", op, x->rank, kMaxRank);
  const int64_t new_rank = static_cast<int64_t>(x->rank) + 1;
  TERN_CHECK_OR_RETURN_ERROR(dim >= -new_rank && dim < new_rank, InvalidArgument,
                             "%s: dim: %" PRId64 " out of range for a rank-%u input (expected in "
                             "[%" PRId64 ", %" PRId64 "])",
                             op, dim, x->rank, -new_rank, new_rank - 1);
  const uint32_t at = static_cast<uint32_t>(dim < 0 ? dim + new_rank : dim);
  FixedShape shape;
  shape.rank = static_cast<uint32_t>(new_rank);
  for (uint32_t d = 0, s = 0; d < shape.rank; ++d) {
    shape.sizes[d] = d == at ? 1 : x->sizes[s++];
  }
  return finish_view(op, *x, *out, shape.span());
}

}  // namespace portable
}  // namespace tern
