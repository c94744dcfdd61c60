// tern::clone(x, out): a copy of x.
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error clone(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::clone";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 2, 2));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 1, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  const size_t nbytes = static_cast<size_t>(x->numel()) * element_size(x->dtype);
  if (nbytes > 0 && out->data != x->data) std::memmove(out->data, x->data, nbytes);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
