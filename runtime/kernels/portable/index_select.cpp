// tern::index_select(x, dim, index, out): rows of x along dim picked by a 1-D int index.
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error index_select(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::index_select";
  IndexArgs a;
  TERN_RETURN_IF_ERROR(index_args(op, args, &a));
  const TensorView* x = a.x;
  const TensorView* index = a.index;
  TensorView* out = a.out;
  TERN_CHECK_OR_RETURN_ERROR(index->rank <= 1, InvalidArgument,
                             "%s: index: expected a 0-D or 1-D tensor, found rank %u", op,
                             index->rank);
  TERN_CHECK_OR_RETURN_ERROR(x->rank > 0, InvalidArgument,
                             "%s: x: expected rank >= 1, found a rank-0 tensor", op);
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", a.dim, x->rank));
  const uint64_t n = index->numel();
  TERN_RETURN_IF_ERROR(check_index_range(op, *index, dim, x->sizes[dim]));
  FixedShape shape;
  shape.rank = x->rank;
  for (uint32_t d = 0; d < x->rank; ++d) {
    shape.sizes[d] = d == dim ? static_cast<int64_t>(n) : x->sizes[d];
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  const DimRows rows = dim_rows(*x, dim);
  const size_t row = rows.row_bytes;
  const uint64_t outer = rows.outer;
  const int64_t size = rows.size;
  if (row == 0) return Error::Ok;
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (uint64_t o = 0; o < outer; ++o) {
    const uint8_t* base = src + o * static_cast<uint64_t>(size) * row;
    for (uint64_t i = 0; i < n; ++i) {
      std::memcpy(dst, base + static_cast<uint64_t>(index_at(*index, i)) * row, row);
      dst += row;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
