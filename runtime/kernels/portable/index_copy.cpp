// tern::index_copy(x, dim, index, source, out): out = x with the slices index[i] of dim
// replaced by the slices i of source (ATen's index_copy). With out the same tensor as x (a
// state tensor updated in place, such as a KV cache written at the current positions) only the
// indexed slices are written.
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error index_copy(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::index_copy";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(const TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(const TensorView* index, tensor_arg(op, args, 2, "index"));
  TERN_ASSIGN_OR_RETURN(const TensorView* source, tensor_arg(op, args, 3, "source"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 4, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "source", *source, x->dtype));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_RETURN_IF_ERROR(check_index_dtype(op, "index", *index));
  TERN_CHECK_OR_RETURN_ERROR(index->rank <= 1, InvalidArgument,
                             "%s: index: expected a 0-D or 1-D tensor, found rank %u", op,
                             index->rank);
  TERN_CHECK_OR_RETURN_ERROR(x->rank > 0, InvalidArgument,
                             "%s: x: expected rank >= 1, found a rank-0 tensor", op);
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", raw_dim, x->rank));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(x->sizes, x->rank)));
  const uint64_t n = index->numel();
  // source has x's shape with dim's size the number of indices.
  FixedShape expected;
  expected.rank = x->rank;
  for (uint32_t d = 0; d < x->rank; ++d) {
    expected.sizes[d] = d == dim ? static_cast<int64_t>(n) : x->sizes[d];
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "source", *source, expected.span()));
  TERN_RETURN_IF_ERROR(check_index_range(op, *index, dim, x->sizes[dim]));
  if (out->data != x->data && out->nbytes > 0) std::memcpy(out->data, x->data, out->nbytes);
  const DimRows rows = dim_rows(*x, dim);
  const size_t row = rows.row_bytes;
  const uint64_t outer = rows.outer;
  const int64_t size = rows.size;
  if (row == 0) return Error::Ok;
  const uint8_t* src = static_cast<const uint8_t*>(source->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (uint64_t o = 0; o < outer; ++o) {
    uint8_t* base = dst + o * static_cast<uint64_t>(size) * row;
    for (uint64_t i = 0; i < n; ++i) {
      // A repeated index keeps the last source slice, as ATen does on CPU.
      std::memcpy(base + static_cast<uint64_t>(index_at(*index, i)) * row, src, row);
      src += row;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
