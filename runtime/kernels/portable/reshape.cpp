// tern::reshape(x, shape, out): same elements, new shape; a view when the planner aliases.
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

Error reshape(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::reshape";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_CHECK_OR_RETURN_ERROR(args[1] != nullptr && args[1]->is_int_list(), InvalidArgument,
                             "%s: argument 1 (shape): expected an int list, found %s", op,
                             args[1] ? to_string(args[1]->tag) : "null");
  const Span<const int64_t> shape = args[1]->to_int_list();
  TERN_CHECK_OR_RETURN_ERROR(shape.size() <= kMaxRank, InvalidArgument,
                             "%s: shape: rank %zu exceeds the maximum %zu", op, shape.size(),
                             kMaxRank);
  TERN_CHECK_OR_RETURN_ERROR(shape.size() == 0 || shape.data() != nullptr, InvalidArgument,
                             "%s: shape: null list data", op);
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));

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
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, resolved.span()));
  uint64_t nbytes = 0;
  TERN_CHECK_OR_RETURN_ERROR(dtype_nbytes(x->dtype, numel, &nbytes), InvalidArgument,
                             "%s: x: byte size overflows", op);
  if (out->data != x->data && nbytes > 0) {
    std::memmove(out->data, x->data, static_cast<size_t>(nbytes));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
