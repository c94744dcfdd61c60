#include "runtime/kernels/portable/index_walk.h"

#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern::portable::dm {

Error check_index_within(const char* op, const TensorView& x, const TensorView& index,
                         uint32_t dim) {
  TERN_CHECK_OR_RETURN_ERROR(index.rank == x.rank, InvalidArgument,
                             "%s: index: expected rank %u (x's), found %u", op, x.rank,
                             index.rank);
  char xs[160];
  char is[160];
  for (uint32_t d = 0; d < x.rank; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(d == dim || index.sizes[d] <= x.sizes[d], InvalidArgument,
                               "%s: index %s: size %" PRId64 " of dim %u exceeds x %s", op,
                               format_shape(index.shape(), is, sizeof(is)), index.sizes[d], d,
                               format_shape(x.shape(), xs, sizeof(xs)));
  }
  return Error::Ok;
}

Error check_index_values(const char* op, const TensorView& index, uint32_t dim, int64_t size) {
  const uint64_t n = index.numel();
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = index_at(index, i);
    TERN_CHECK_OR_RETURN_ERROR(v >= 0 && v < size, InvalidArgument,
                               "%s: index element %" PRIu64 " = %" PRId64 " out of range for dim "
                               "%u of size %" PRId64 " (expected in [0, %" PRId64 "))",
                               op, i, v, dim, size, size);
  }
  return Error::Ok;
}

IndexWalk::IndexWalk(const TensorView& x, const TensorView& index, uint32_t dim)
    : index_(index), dim_(dim) {
  contiguous_strides(x.shape(), strides_);
  dim_stride_ = x.rank == 0 ? 0 : strides_[dim];
}

void IndexWalk::next() {
  for (int32_t d = static_cast<int32_t>(index_.rank) - 1; d >= 0; --d) {
    const uint32_t u = static_cast<uint32_t>(d);
    ++coord_[u];
    if (u != dim_) base_ += strides_[u];
    if (coord_[u] < index_.sizes[u]) return;
    if (u != dim_) base_ -= strides_[u] * coord_[u];
    coord_[u] = 0;
  }
}

}  // namespace tern::portable::dm
