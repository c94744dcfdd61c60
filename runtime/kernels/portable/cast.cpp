// tern::cast(x, out): x converted to out's dtype (any plain dtype to any): float -> int
// truncates toward zero, -> bool is `!= 0`, f16/bf16 round to nearest even.
#include <cstring>

#include "runtime/kernels/portable/elementwise_unary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

Error cast(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::cast";
  Operand x;
  TensorView* out = nullptr;
  TERN_RETURN_IF_ERROR(unary_args(op, args, 2, 2, &x, &out));
  TERN_CHECK_OR_RETURN_ERROR(is_plain_dtype(out->dtype), InvalidArgument,
                             "%s: out: dtype %s is not a cast target (nf4/fp8 come only from "
                             "the quantizer)",
                             op, to_string(out->dtype));
  const int64_t n = static_cast<int64_t>(out->numel());
  if (out->dtype == x.dtype && out->dtype != DType::Bool) {
    uint64_t bytes = 0;
    (void)dtype_nbytes(x.dtype, static_cast<uint64_t>(n), &bytes);  // checked by tensor_arg
    if (bytes != 0 && out->data != x.data) memmove(out->data, x.data, bytes);
    return Error::Ok;
  }
  void* dst = out->data;
  bool ok = false;
  switch (out->dtype) {
    case DType::F32:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<float*>(dst));
      break;
    case DType::F16:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<Half*>(dst));
      break;
    case DType::BF16:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<BFloat16*>(dst));
      break;
    case DType::I64:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<int64_t*>(dst));
      break;
    case DType::I32:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<int32_t*>(dst));
      break;
    case DType::I16:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<int16_t*>(dst));
      break;
    case DType::I8:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<int8_t*>(dst));
      break;
    case DType::U8:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<uint8_t*>(dst));
      break;
    case DType::Bool:
      ok = convert_run(x.data, x.dtype, 0, 1, n, static_cast<bool*>(dst));
      break;
    default:
      break;
  }
  TERN_CHECK_OR_RETURN_ERROR(ok, Internal, "%s: unhandled cast %s -> %s", op, to_string(x.dtype),
                             to_string(out->dtype));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
