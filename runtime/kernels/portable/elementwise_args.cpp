#include <cstdio>

#include "runtime/kernels/portable/elementwise_binary.h"

namespace tern {
namespace portable {

Error double_attr(const char* op, Span<EValue*> args, size_t index, size_t out_index,
                  const char* name, double fallback, double* out) {
  *out = fallback;
  if (index >= out_index) return Error::Ok;
  const EValue* v = args[index];
  TERN_CHECK_OR_RETURN_ERROR(v != nullptr, InvalidArgument,
                             "%s: argument %zu (%s) is a null "
                             "EValue",
                             op, index, name);
  if (v->is_none()) return Error::Ok;
  if (v->is_double()) {
    *out = v->payload.d;
    return Error::Ok;
  }
  if (v->is_int()) {
    *out = static_cast<double>(v->payload.i);
    return Error::Ok;
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: argument %zu (%s): expected a double, found %s", op,
                    index, name, to_string(v->tag));
}

Error operand_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                  bool allow_scalar, Operand* out) {
  TERN_CHECK_OR_RETURN_ERROR(index < args.size(), InvalidArgument,
                             "%s: argument %zu (%s) missing: only %zu arguments", op, index, name,
                             args.size());
  const EValue* v = args[index];
  TERN_CHECK_OR_RETURN_ERROR(v != nullptr, InvalidArgument,
                             "%s: argument %zu (%s) is a null "
                             "EValue",
                             op, index, name);
  *out = Operand();
  out->name = name;
  if (allow_scalar && (v->is_int() || v->is_double() || v->is_bool())) {
    out->scalar = v;
    return Error::Ok;
  }
  TERN_CHECK_OR_RETURN_ERROR(v->is_tensor() || !allow_scalar, InvalidArgument,
                             "%s: argument %zu (%s): expected a tensor or a scalar, found %s", op,
                             index, name, to_string(v->tag));
  TERN_ASSIGN_OR_RETURN(TensorView * t, tensor_arg(op, args, index, name));
  TERN_CHECK_OR_RETURN_ERROR(is_plain_dtype(t->dtype), InvalidArgument,
                             "%s: %s: dtype %s is not supported by elementwise ops", op, name,
                             to_string(t->dtype));
  out->data = t->data;
  out->dtype = t->dtype;
  out->shape = t->shape();
  return Error::Ok;
}

Error check_compute_dtype(const char* op, const Operand* operands, size_t num_operands,
                          DType compute, Span<const DType> allowed) {
  for (DType d : allowed) {
    if (d == compute) return Error::Ok;
  }
  char list[128];
  size_t pos = 0;
  list[0] = '\0';
  for (size_t i = 0; i < allowed.size(); ++i) {
    const int n =
        snprintf(list + pos, sizeof(list) - pos, i ? ", %s" : "%s", to_string(allowed[i]));
    if (n < 0 || static_cast<size_t>(n) >= sizeof(list) - pos) break;
    pos += static_cast<size_t>(n);
  }
  char found[160];
  pos = 0;
  found[0] = '\0';
  for (size_t i = 0; i < num_operands; ++i) {
    const Operand& o = operands[i];
    const char* kind = o.scalar == nullptr ? to_string(o.dtype) : to_string(o.scalar->tag);
    const int n = snprintf(found + pos, sizeof(found) - pos, i ? ", %s %s" : "%s %s", o.name, kind);
    if (n < 0 || static_cast<size_t>(n) >= sizeof(found) - pos) break;
    pos += static_cast<size_t>(n);
  }
  TERN_RETURN_ERROR(InvalidArgument,
                    "%s: expected dtype one of {%s} for the operands, found %s (%s promote to "
                    "%s)",
                    op, list, to_string(compute), found, to_string(compute));
}

Error binary_args(const char* op, Span<EValue*> args, const BinaryOpSpec& spec, BinaryArgs* out) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, spec.max_args));
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 0, "a", false, &out->a));
  TERN_RETURN_IF_ERROR(operand_arg(op, args, 1, "b", true, &out->b));
  TERN_ASSIGN_OR_RETURN(out->out, tensor_arg(op, args, args.size() - 1, "out"));
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, out->a.shape, out->b.shape, &out->shape));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out->out, out->shape.span()));
  ResultType rt;
  add_operand(&rt, out->a);
  add_operand(&rt, out->b);
  DType compute = rt.result();
  if (spec.int_to_float && (is_int_dtype(compute) || compute == DType::Bool)) {
    compute = DType::F32;  // the default float dtype
  }
  out->compute = compute;
  if (spec.compute.size() != 0) {
    const Operand operands[2] = {out->a, out->b};
    TERN_RETURN_IF_ERROR(check_compute_dtype(op, operands, 2, compute, spec.compute));
  }
  return check_dtype(op, "out", *out->out, spec.bool_out ? DType::Bool : compute);
}

}  // namespace portable
}  // namespace tern
