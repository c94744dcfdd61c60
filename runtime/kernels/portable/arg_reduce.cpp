// tern::argmax, tern::argmin(x, dim: Int or None, keepdim, out i64): the first index of the
// largest (smallest) value along dim, or over the flattened tensor when dim is None. NaN counts
// as larger (smaller) than everything, as in ATen, so the first NaN wins.
#include <cinttypes>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {
namespace {

constexpr int64_t kChunk = 256;

// True when `v` replaces `best` (strictly better, or the first NaN).
template <typename T, bool kMax>
inline bool better(T v, T best) {
  if (best != best) return false;
  if (v != v) return true;
  return kMax ? v > best : v < best;
}

template <typename T, bool kMax>
void arg_loop(const T* x, int64_t* out, const reduction::DimSplit& s) {
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* base = x + o * s.size * s.inner;
    int64_t* dst = out + o * s.inner;
    if (s.inner == 1) {
      T best = base[0];
      int64_t index = 0;
      for (int64_t k = 1; k < s.size; ++k) {
        if (better<T, kMax>(base[k], best)) {
          best = base[k];
          index = k;
        }
      }
      dst[0] = index;
      continue;
    }
    for (int64_t c0 = 0; c0 < s.inner; c0 += kChunk) {
      const int64_t n = s.inner - c0 < kChunk ? s.inner - c0 : kChunk;
      T best[kChunk];
      for (int64_t i = 0; i < n; ++i) {
        best[i] = base[c0 + i];
        dst[c0 + i] = 0;
      }
      for (int64_t k = 1; k < s.size; ++k) {
        const T* row = base + k * s.inner + c0;
        for (int64_t i = 0; i < n; ++i) {
          if (better<T, kMax>(row[i], best[i])) {
            best[i] = row[i];
            dst[c0 + i] = k;
          }
        }
      }
    }
  }
}

template <bool kMax>
Error arg_reduce(const char* op, Span<EValue*> args) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 3, "out"));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *x, Span<const DType>(kAllowed)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::I64));
  TERN_ASSIGN_OR_RETURN(const bool keepdim, reduction::bool_arg(op, args, 2, "keepdim"));

  FixedShape want;
  reduction::DimSplit split;
  if (reduction::is_none_arg(args, 1)) {
    split.size = static_cast<int64_t>(x->numel());
    if (keepdim) {
      want.rank = x->rank;
      for (uint32_t d = 0; d < x->rank; ++d) want.sizes[d] = 1;
    }
  } else {
    TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, reduction::int_arg(op, args, 1, "dim"));
    uint32_t dim = 0;
    TERN_RETURN_IF_ERROR(reduction::normalize_dim(op, "dim", raw_dim, x->rank, &dim));
    split = reduction::split_at_dim(x->shape(), dim);
    for (uint32_t d = 0; d < x->rank; ++d) {
      if (d != dim) {
        want.sizes[want.rank++] = x->sizes[d];
      } else if (keepdim) {
        want.sizes[want.rank++] = 1;
      }
    }
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, want.span()));
  TERN_CHECK_OR_RETURN_ERROR(split.size > 0, InvalidArgument,
                             "%s: x: expected a non-empty reduced dim, found size 0", op);
  if (split.outer == 0 || split.inner == 0) return Error::Ok;
  switch (x->dtype) {
    case DType::F32:
      arg_loop<float, kMax>(x->data_as<const float>(), out->data_as<int64_t>(), split);
      break;
    case DType::I32:
      arg_loop<int32_t, kMax>(x->data_as<const int32_t>(), out->data_as<int64_t>(), split);
      break;
    case DType::I64:
      arg_loop<int64_t, kMax>(x->data_as<const int64_t>(), out->data_as<int64_t>(), split);
      break;
    default:
      TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(x->dtype));
  }
  return Error::Ok;
}

}  // namespace

Error argmax(KernelContext& /*context*/, Span<EValue*> args) {
  return arg_reduce<true>("tern::argmax", args);
}

Error argmin(KernelContext& /*context*/, Span<EValue*> args) {
  return arg_reduce<false>("tern::argmin", args);
}

}  // namespace portable
}  // namespace tern
