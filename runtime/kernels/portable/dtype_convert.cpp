#include "runtime/kernels/portable/dtype_convert.h"

namespace tern {
namespace portable {
namespace {

template <typename D, typename S>
void convert_loop(const void* src, int64_t offset, int64_t stride, int64_t n, D* dst) {
  const S* s = static_cast<const S*>(src) + offset;
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(s[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(s[i * stride]);
  }
}

// Bool storage: any nonzero byte is true (a file may hold bytes other than 0 and 1).
template <typename D>
void convert_bool_loop(const void* src, int64_t offset, int64_t stride, int64_t n, D* dst) {
  const uint8_t* s = static_cast<const uint8_t*>(src) + offset;
  for (int64_t i = 0; i < n; ++i) dst[i] = from_int<D>(s[i * stride] != 0 ? 1 : 0);
}

}  // namespace

template <typename D>
bool convert_run(const void* src, DType src_dtype, int64_t offset, int64_t stride, int64_t n,
                 D* dst) {
  switch (src_dtype) {
    case DType::F32:
      convert_loop<D, float>(src, offset, stride, n, dst);
      return true;
    case DType::F16:
      convert_loop<D, Half>(src, offset, stride, n, dst);
      return true;
    case DType::BF16:
      convert_loop<D, BFloat16>(src, offset, stride, n, dst);
      return true;
    case DType::I64:
      convert_loop<D, int64_t>(src, offset, stride, n, dst);
      return true;
    case DType::I32:
      convert_loop<D, int32_t>(src, offset, stride, n, dst);
      return true;
    case DType::I16:
      convert_loop<D, int16_t>(src, offset, stride, n, dst);
      return true;
    case DType::I8:
      convert_loop<D, int8_t>(src, offset, stride, n, dst);
      return true;
    case DType::U8:
      convert_loop<D, uint8_t>(src, offset, stride, n, dst);
      return true;
    case DType::Bool:
      convert_bool_loop<D>(src, offset, stride, n, dst);
      return true;
    default:
      return false;
  }
}

template bool convert_run<float>(const void*, DType, int64_t, int64_t, int64_t, float*);
template bool convert_run<Half>(const void*, DType, int64_t, int64_t, int64_t, Half*);
template bool convert_run<BFloat16>(const void*, DType, int64_t, int64_t, int64_t, BFloat16*);
template bool convert_run<int64_t>(const void*, DType, int64_t, int64_t, int64_t, int64_t*);
template bool convert_run<int32_t>(const void*, DType, int64_t, int64_t, int64_t, int32_t*);
template bool convert_run<int16_t>(const void*, DType, int64_t, int64_t, int64_t, int16_t*);
template bool convert_run<int8_t>(const void*, DType, int64_t, int64_t, int64_t, int8_t*);
template bool convert_run<uint8_t>(const void*, DType, int64_t, int64_t, int64_t, uint8_t*);
template bool convert_run<bool>(const void*, DType, int64_t, int64_t, int64_t, bool*);

}  // namespace portable
}  // namespace tern
