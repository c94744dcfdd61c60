// Broadcasting comparisons tern::eq, ne, lt, le, gt, ge → bool (docs/ops.md). Operands
// promote as torch.result_type says; integers compare exactly as i64, f16/bf16 as f32.
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <Cmp kCmp, typename T>
inline bool compare(T a, T b) {
  switch (kCmp) {
    case Cmp::Eq:
      return a == b;
    case Cmp::Ne:
      return a != b;
    case Cmp::Lt:
      return a < b;
    case Cmp::Le:
      return a <= b;
    case Cmp::Gt:
      return a > b;
    case Cmp::Ge:
      return a >= b;
  }
  return false;
}

template <Cmp kCmp, typename T>
Error run_compare(const char* op, BinaryArgs& p) {
  T scalars[2] = {};
  TERN_RETURN_IF_ERROR(bind_scalars(op, &p, scalars));
  binary_loop<T, bool>(p.a, p.b, p.out->data_as<bool>(), p.shape.span(),
                       [](T x, T y) { return compare<kCmp>(x, y); });
  return Error::Ok;
}

template <Cmp kCmp>
Error comparison(const char* op, Span<EValue*> args) {
  BinaryArgs p;
  TERN_RETURN_IF_ERROR(binary_args(op, args, kPredicateSpec, &p));
  if (p.compute == DType::Bool) return run_compare<kCmp, bool>(op, p);
  if (is_float_dtype(p.compute)) return run_compare<kCmp, float>(op, p);
  if (p.compute == DType::I32) return run_compare<kCmp, int32_t>(op, p);
  return run_compare<kCmp, int64_t>(op, p);  // every integer dtype compares exactly as i64
}

}  // namespace

Error eq(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Eq>("tern::eq", args); }
Error ne(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Ne>("tern::ne", args); }
Error lt(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Lt>("tern::lt", args); }
Error le(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Le>("tern::le", args); }
Error gt(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Gt>("tern::gt", args); }
Error ge(KernelContext&, Span<EValue*> args) { return comparison<Cmp::Ge>("tern::ge", args); }

}  // namespace portable
}  // namespace tern
