// tern::cumsum(x, dim, out): inclusive running sum along dim. f32 accumulates in double (as
// ATen's CPU kernel does; util/cumsum_array.h, shared with the cpu backend); integers accumulate in i64 with wraparound, out i64 (ATen's
// promotion) or x's dtype.
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"
#include "runtime/kernels/util/cumsum_array.h"

namespace tern {
namespace portable {
namespace {

constexpr int64_t kChunk = 256;

template <typename Out>
struct IntAcc {
  using Acc = uint64_t;
  template <typename In>
  static uint64_t add(uint64_t a, In v) {
    return a + static_cast<uint64_t>(static_cast<int64_t>(v));
  }
  static Out out(uint64_t a) { return static_cast<Out>(static_cast<int64_t>(a)); }
};

template <typename In, typename Out, typename A>
void cumsum_loop(const In* x, Out* out, const reduction::DimSplit& s) {
  using Acc = typename A::Acc;
  for (int64_t o = 0; o < s.outer; ++o) {
    const In* src = x + o * s.size * s.inner;
    Out* dst = out + o * s.size * s.inner;
    if (s.inner == 1) {
      Acc acc = 0;
      for (int64_t k = 0; k < s.size; ++k) {
        acc = A::add(acc, src[k]);
        dst[k] = A::out(acc);
      }
      continue;
    }
    for (int64_t c0 = 0; c0 < s.inner; c0 += kChunk) {
      const int64_t n = s.inner - c0 < kChunk ? s.inner - c0 : kChunk;
      Acc acc[kChunk];
      for (int64_t i = 0; i < n; ++i) acc[i] = 0;
      for (int64_t k = 0; k < s.size; ++k) {
        const In* row = src + k * s.inner + c0;
        Out* out_row = dst + k * s.inner + c0;
        for (int64_t i = 0; i < n; ++i) {
          acc[i] = A::add(acc[i], row[i]);
          out_row[i] = A::out(acc[i]);
        }
      }
    }
  }
}

}  // namespace

Error cumsum(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::cumsum";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, reduction::int_arg(op, args, 1, "dim"));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *x, Span<const DType>(kAllowed)));
  if (x->dtype == DType::F32) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  } else if (out->dtype != x->dtype) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::I64));
  }
  uint32_t dim = 0;
  TERN_RETURN_IF_ERROR(reduction::normalize_dim(op, "dim", raw_dim, x->rank, &dim));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  if (x->numel() == 0) return Error::Ok;
  const reduction::DimSplit s = reduction::split_at_dim(x->shape(), dim);
  switch (x->dtype) {
    case DType::F32:
      cumsum_f32(x->data_as<const float>(), out->data_as<float>(), s.outer, s.size, s.inner);
      break;
    case DType::I32:
      if (out->dtype == DType::I64) {
        cumsum_loop<int32_t, int64_t, IntAcc<int64_t>>(x->data_as<const int32_t>(),
                                                       out->data_as<int64_t>(), s);
      } else {
        cumsum_loop<int32_t, int32_t, IntAcc<int32_t>>(x->data_as<const int32_t>(),
                                                       out->data_as<int32_t>(), s);
      }
      break;
    case DType::I64:
      cumsum_loop<int64_t, int64_t, IntAcc<int64_t>>(x->data_as<const int64_t>(),
                                                     out->data_as<int64_t>(), s);
      break;
    default:
      TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(x->dtype));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
