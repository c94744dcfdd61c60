// tern::gather(x, dim, index, out): out[i][j][k] = x[index[i][j][k]][j][k] (for dim 0), etc.
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/index_walk.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

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
  TERN_RETURN_IF_ERROR(check_index_within(op, *x, *index, dim));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, index->shape()));
  const uint64_t n = index->numel();
  if (n == 0) return Error::Ok;
  TERN_RETURN_IF_ERROR(check_index_values(op, *index, dim, x->rank == 0 ? 1 : x->sizes[dim]));
  const size_t es = element_size(x->dtype);
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  IndexWalk walk(*x, *index, dim);
  for (uint64_t i = 0; i < n; ++i, walk.next()) {
    const int64_t v = index_at(*index, i);
    std::memcpy(dst + i * es, src + static_cast<size_t>(walk.offset(v)) * es, es);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
