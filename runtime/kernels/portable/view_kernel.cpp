#include "runtime/kernels/portable/view_kernel.h"

#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern::portable::dm {

Error finish_view(const char* op, const TensorView& x, const TensorView& out,
                  Span<const int64_t> shape) {
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", out, x.dtype));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", out, shape));
  const size_t nbytes = static_cast<size_t>(x.numel()) * element_size(x.dtype);
  if (out.data != x.data && nbytes > 0) std::memmove(out.data, x.data, nbytes);
  return Error::Ok;
}

}  // namespace tern::portable::dm
