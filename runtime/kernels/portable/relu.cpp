// tern::relu(x, out): out = max(x, 0).
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
void relu_loop(const T* x, T* out, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    // NaN stays NaN, as in ATen (clamp_min propagates NaN).
    out[i] = x[i] < T(0) ? T(0) : x[i];
  }
}

}  // namespace

Error relu(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::relu";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 2, 2));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 1, "out"));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *x, Span<const DType>(kAllowed)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  const uint64_t n = x->numel();
  switch (x->dtype) {
    case DType::F32: relu_loop(x->data_as<const float>(), out->data_as<float>(), n); break;
    case DType::I32: relu_loop(x->data_as<const int32_t>(), out->data_as<int32_t>(), n); break;
    case DType::I64: relu_loop(x->data_as<const int64_t>(), out->data_as<int64_t>(), n); break;
    default: TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(x->dtype));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
