// tern::where(cond, a, b, out): out = cond ? a : b with three-way broadcasting. cond is bool
// (any nonzero byte true); a and b are tensors or scalars promoting as torch.result_type says
// to out's dtype (any plain dtype).
#include "runtime/kernels/portable/elementwise_binary.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {
namespace {

struct WhereArgs {
  Operand cond, a, b;
  TensorView* out = nullptr;
  FixedShape shape;
};

template <typename T>
Error run_where(const char* op, WhereArgs& w) {
  T a_scalar{}, b_scalar{};
  TERN_RETURN_IF_ERROR(bind_scalar<T>(op, &w.a, &a_scalar));
  TERN_RETURN_IF_ERROR(bind_scalar<T>(op, &w.b, &b_scalar));
  const Span<const int64_t> shapes[3] = {w.cond.shape, w.a.shape, w.b.shape};
  BroadcastPlan plan;
  make_broadcast_plan(w.shape.span(), shapes, 3, &plan);
  T* out = w.out->data_as<T>();
  for_each_run(plan, [&](const int64_t* off, int64_t out_off, int64_t n, const int64_t* st) {
    bool buf_c[kConvertBlock];
    T buf_a[kConvertBlock];
    T buf_b[kConvertBlock];
    for (int64_t start = 0; start < n; start += kConvertBlock) {
      const int64_t m = n - start < kConvertBlock ? n - start : kConvertBlock;
      int64_t sc = 0, sa = 0, sb = 0;
      const bool* pc = read_run<bool>(w.cond, off[0] + start * st[0], st[0], m, buf_c, &sc);
      const T* pa = read_run<T>(w.a, off[1] + start * st[1], st[1], m, buf_a, &sa);
      const T* pb = read_run<T>(w.b, off[2] + start * st[2], st[2], m, buf_b, &sb);
      T* dst = out + out_off + start;
      for (int64_t i = 0; i < m; ++i) dst[i] = pc[i * sc] ? pa[i * sa] : pb[i * sb];
    }
  });
  return Error::Ok;
}

}  // namespace

Error where(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::where";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  WhereArgs w;
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 0, "cond", false, &w.cond));
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 1, "a", true, &w.a));
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 2, "b", true, &w.b));
  TERN_ASSIGN_OR_RETURN(w.out, tensor_arg(op, args, 3, "out"));
  TERN_CHECK_OR_RETURN_ERROR(w.cond.dtype == DType::Bool, InvalidArgument,
                             "%s: cond: expected dtype bool, found %s", op,
                             to_string(w.cond.dtype));
  FixedShape ab;
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, w.a.shape, w.b.shape, &ab));
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, w.cond.shape, ab.span(), &w.shape));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *w.out, w.shape.span()));
  ResultType rt;
  add_operand(&rt, w.a);
  add_operand(&rt, w.b);
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *w.out, rt.result()));
  switch (w.out->dtype) {
    case DType::F32:
      return run_where<float>(op, w);
    case DType::F16:
      return run_where<Half>(op, w);
    case DType::BF16:
      return run_where<BFloat16>(op, w);
    case DType::I64:
      return run_where<int64_t>(op, w);
    case DType::I32:
      return run_where<int32_t>(op, w);
    case DType::I16:
      return run_where<int16_t>(op, w);
    case DType::I8:
      return run_where<int8_t>(op, w);
    case DType::U8:
      return run_where<uint8_t>(op, w);
    case DType::Bool:
      return run_where<bool>(op, w);
    default:
      break;
  }
  TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(w.out->dtype));
}

}  // namespace portable
}  // namespace tern
