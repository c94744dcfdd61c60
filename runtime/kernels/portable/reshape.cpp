// tern::reshape / tern::view (x, shape, out): same elements, new shape; a view when the
// planner aliases.
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/view_kernel.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

Error reshape_impl(const char* op, Span<EValue*> args) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> shape,
                        int_list_arg(op, args, 1, "shape", kMaxRank));
  const uint64_t numel = x->numel();
  FixedShape resolved;
  resolved.rank = static_cast<uint32_t>(shape.size());
  int64_t infer_dim = -1;
  uint64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[i];
    if (s == -1) {
      TERN_CHECK_OR_RETURN_ERROR(infer_dim < 0, InvalidArgument,
                                 "%s: shape: only one -1 allowed, found at dims %lld and %zu", op,
                                 static_cast<long long>(infer_dim), i);
      infer_dim = static_cast<int64_t>(i);
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(s >= 0, InvalidArgument,
                               "%s: shape: size %" PRId64 " at dim %zu is invalid", op, s, i);
    TERN_CHECK_OR_RETURN_ERROR(checked_mul(known, static_cast<uint64_t>(s), &known),
                               InvalidArgument, "%s: shape: element count overflows", op);
    resolved.sizes[i] = s;
  }
  char xs[160];
  char ss[160];
  if (infer_dim >= 0) {
    TERN_CHECK_OR_RETURN_ERROR(known != 0 && numel % known == 0, InvalidArgument,
                               "%s: shape %s is invalid for input %s of %" PRIu64 " elements", op,
                               format_shape(shape, ss, sizeof(ss)),
                               format_shape(x->shape(), xs, sizeof(xs)), numel);
    resolved.sizes[infer_dim] = static_cast<int64_t>(numel / known);
  } else {
    TERN_CHECK_OR_RETURN_ERROR(known == numel, InvalidArgument,
                               "%s: shape %s (%" PRIu64 " elements) is invalid for input %s of "
                               "%" PRIu64 " elements",
                               op, format_shape(shape, ss, sizeof(ss)), known,
                               format_shape(x->shape(), xs, sizeof(xs)), numel);
  }
  return finish_view(op, *x, *out, resolved.span());
}

}  // namespace

Error reshape(KernelContext& /*context*/, Span<EValue*> args) {
  return reshape_impl("tern::reshape", args);
}

Error view(KernelContext& /*context*/, Span<EValue*> args) {
  return reshape_impl("tern::view", args);
}

}  // namespace portable
}  // namespace tern
