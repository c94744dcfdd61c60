#include "runtime/kernels/portable/type_promotion.h"

#include "runtime/kernels/portable/dtype_convert.h"

namespace tern {
namespace portable {
namespace {

int int_rank(DType d) {
  switch (d) {
    case DType::U8:
      return 0;  // handled specially against i8
    case DType::I8:
      return 1;
    case DType::I16:
      return 2;
    case DType::I32:
      return 3;
    case DType::I64:
      return 4;
    default:
      return -1;
  }
}

// ATen's combine_categories: the higher-priority dtype wins unless it is bool, or the lower
// one is a float while the higher one is not.
void combine(bool has_higher, DType higher, bool has_lower, DType lower, bool* has_out,
             DType* out) {
  if (!has_higher) {
    *has_out = has_lower;
    *out = lower;
    return;
  }
  *has_out = true;
  if (!has_lower || is_float_dtype(higher)) {
    *out = higher;
  } else if (higher == DType::Bool || is_float_dtype(lower)) {
    *out = promote_types(higher, lower);
  } else {
    *out = higher;
  }
}

void accumulate(bool* has, DType* acc, DType d) {
  *acc = *has ? promote_types(*acc, d) : d;
  *has = true;
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_float_dtype(a);
  const bool fb = is_float_dtype(b);
  if (fa && fb) return DType::F32;  // f16 + bf16, or either with f32
  if (fa) return a;
  if (fb) return b;
  if (a == DType::U8 || b == DType::U8) {
    const DType other = a == DType::U8 ? b : a;
    return other == DType::I8 ? DType::I16 : other;
  }
  return int_rank(a) > int_rank(b) ? a : b;
}

void ResultType::add_tensor(const TensorView& t) {
  if (t.rank > 0) {
    accumulate(&has_dim_, &dim_, t.dtype);
  } else {
    accumulate(&has_zero_, &zero_, t.dtype);
  }
}

void ResultType::add_scalar(const EValue& v) {
  if (v.is_int()) accumulate(&has_scalar_, &scalar_, DType::I64);
  if (v.is_double()) accumulate(&has_scalar_, &scalar_, DType::F32);
  if (v.is_bool()) accumulate(&has_scalar_, &scalar_, DType::Bool);
}

DType ResultType::result() const {
  bool has_low = false;
  DType low = DType::F32;
  combine(has_zero_, zero_, has_scalar_, scalar_, &has_low, &low);
  bool has = false;
  DType out = DType::F32;
  combine(has_dim_, dim_, has_low, low, &has, &out);
  return has ? out : DType::F32;
}

}  // namespace portable
}  // namespace tern
