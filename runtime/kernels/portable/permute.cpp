// tern::permute(x, dims, out) and tern::transpose(x, dim0, dim1, out): copies in a new dim
// order through the strided copy (contiguous inner runs, tiled transposes).
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

// out = x with out dim i taken from x dim order[i].
Error permute_copy(const char* op, const TensorView& x, const TensorView& out,
                   const uint32_t* order) {
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", out, x.dtype));
  FixedShape shape;
  shape.rank = x.rank;
  int64_t x_strides[kMaxRank];
  int64_t strides[kMaxRank];
  contiguous_strides(x.shape(), x_strides);
  for (uint32_t i = 0; i < x.rank; ++i) {
    shape.sizes[i] = x.sizes[order[i]];
    strides[i] = x_strides[order[i]];
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", out, shape.span()));
  TERN_CHECK_OR_RETURN_ERROR(out.data != x.data || x.numel() <= 1, InvalidArgument,
                             "%s: out shares x's memory; a permuted copy needs its own", op);
  strided_copy(out.data, x.data, element_size(x.dtype), shape.span(), strides);
  return Error::Ok;
}

}  // namespace

Error permute(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::permute";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> dims,
                        int_list_arg(op, args, 1, "dims", kMaxRank));
  TERN_CHECK_OR_RETURN_ERROR(dims.size() == x->rank, InvalidArgument,
                             "%s: dims: expected %u entries (x's rank), found %zu", op, x->rank,
                             dims.size());
  uint32_t order[kMaxRank] = {};
  bool seen[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    TERN_ASSIGN_OR_RETURN(const uint32_t d, wrap_dim(op, "dims", dims[i], x->rank));
    TERN_CHECK_OR_RETURN_ERROR(!seen[d], InvalidArgument,
                               "%s: dims: dim %u appears more than once", op, d);
    seen[d] = true;
    order[i] = d;
  }
  return permute_copy(op, *x, *out, order);
}

Error transpose(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::transpose";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw0, int_arg(op, args, 1, "dim0"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw1, int_arg(op, args, 2, "dim1"));
  TERN_ASSIGN_OR_RETURN(const uint32_t d0, wrap_dim(op, "dim0", raw0, x->rank));
  TERN_ASSIGN_OR_RETURN(const uint32_t d1, wrap_dim(op, "dim1", raw1, x->rank));
  uint32_t order[kMaxRank];
  for (uint32_t i = 0; i < kMaxRank; ++i) order[i] = i;
  if (x->rank > 0) {
    order[d0] = d1;
    order[d1] = d0;
  }
  return permute_copy(op, *x, *out, order);
}

}  // namespace portable
}  // namespace tern
