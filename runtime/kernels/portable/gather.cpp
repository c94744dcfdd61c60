// tern::gather(x, dim, index, out): out[i][j][k] = x[index[i][j][k]][j][k] (for dim 0), etc.
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error gather(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::gather";
  IndexArgs a;
  TERN_RETURN_IF_ERROR(index_args(op, args, &a));
  const TensorView* x = a.x;
  const TensorView* index = a.index;
  TensorView* out = a.out;
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", a.dim, x->rank));
  // ATen treats a rank-0 tensor as [1] here; index must have x's rank (both 0 is fine).
  TERN_CHECK_OR_RETURN_ERROR(index->rank == x->rank, InvalidArgument,
                             "%s: index: expected rank %u (x's), found %u", op, x->rank,
                             index->rank);
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, index->shape()));
  const uint64_t n = index->numel();
  if (n == 0) return Error::Ok;
  char xs[160];
  char is[160];
  for (uint32_t d = 0; d < x->rank; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(d == dim || index->sizes[d] <= x->sizes[d], InvalidArgument,
                               "%s: index %s: size %" PRId64 " of dim %u exceeds x %s", op,
                               format_shape(index->shape(), is, sizeof(is)), index->sizes[d], d,
                               format_shape(x->shape(), xs, sizeof(xs)));
  }
  const int64_t size = x->rank == 0 ? 1 : x->sizes[dim];
  int64_t x_strides[kMaxRank];
  contiguous_strides(x->shape(), x_strides);
  const int64_t dim_stride = x->rank == 0 ? 0 : x_strides[dim];
  const size_t es = element_size(x->dtype);
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  int64_t coord[kMaxRank] = {};
  int64_t base = 0;  // x offset of coord with dim's coordinate left out
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = index_at(*index, i);
    TERN_CHECK_OR_RETURN_ERROR(v >= 0 && v < size, InvalidArgument,
                               "%s: index element %" PRIu64 " = %" PRId64 " out of range for dim "
                               "%u of size %" PRId64 " (expected in [0, %" PRId64 "))",
                               op, i, v, dim, size, size);
    std::memcpy(dst + i * es, src + static_cast<size_t>(base + v * dim_stride) * es, es);
    for (int32_t d = static_cast<int32_t>(index->rank) - 1; d >= 0; --d) {
      const uint32_t u = static_cast<uint32_t>(d);
      ++coord[u];
      if (u != dim) base += x_strides[u];
      if (coord[u] < index->sizes[u]) break;
      if (u != dim) base -= x_strides[u] * coord[u];
      coord[u] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
