#include "runtime/kernels/portable/kernel_args.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace tern {
namespace portable {

Error check_num_args(const char* op, Span<EValue*> args, size_t min_args, size_t max_args) {
  if (min_args == max_args) {
    TERN_CHECK_OR_RETURN_ERROR(args.size() == min_args, InvalidArgument,
                               "%s: expected %zu arguments, found %zu", op, min_args,
                               args.size());
  }
  TERN_CHECK_OR_RETURN_ERROR(args.size() >= min_args && args.size() <= max_args,
                             InvalidArgument, "%s: expected %zu to %zu arguments, found %zu", op,
                             min_args, max_args, args.size());
  return Error::Ok;
}

Result<TensorView*> tensor_arg(const char* op, Span<EValue*> args, size_t index,
                               const char* name) {
  TERN_CHECK_OR_RETURN_ERROR(index < args.size(), InvalidArgument,
                             "%s: argument %zu (%s) missing: only %zu arguments", op, index, name,
                             args.size());
  const EValue* value = args[index];
  TERN_CHECK_OR_RETURN_ERROR(value != nullptr, InvalidArgument,
                             "%s: argument %zu (%s) is a null EValue", op, index, name);
  TERN_CHECK_OR_RETURN_ERROR(value->is_tensor(), InvalidArgument,
                             "%s: argument %zu (%s): expected a tensor, found %s", op, index,
                             name, to_string(value->tag));
  TensorView* t = value->payload.tensor;
  TERN_CHECK_OR_RETURN_ERROR(t != nullptr, InvalidArgument,
                             "%s: argument %zu (%s): null tensor", op, index, name);
  TERN_CHECK_OR_RETURN_ERROR(t->rank <= kMaxRank, InvalidArgument,
                             "%s: %s: rank %u exceeds the maximum %zu", op, name, t->rank,
                             kMaxRank);
  TERN_CHECK_OR_RETURN_ERROR(t->rank == 0 || t->sizes != nullptr, InvalidArgument,
                             "%s: %s: rank %u but no sizes", op, name, t->rank);
  TERN_CHECK_OR_RETURN_ERROR(is_valid_dtype(static_cast<uint8_t>(t->dtype)), InvalidArgument,
                             "%s: %s: invalid dtype %u", op, name,
                             static_cast<unsigned>(t->dtype));
  TERN_CHECK_OR_RETURN_ERROR(t->is_contiguous(), InvalidArgument,
                             "%s: %s: expected a contiguous tensor (default dim order), found a "
                             "permuted dim order",
                             op, name);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < t->rank; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(t->sizes[d] >= 0, InvalidArgument,
                               "%s: %s: size %" PRId64 " of dim %u is negative", op, name,
                               t->sizes[d], d);
    TERN_CHECK_OR_RETURN_ERROR(checked_mul(numel, static_cast<uint64_t>(t->sizes[d]), &numel),
                               InvalidArgument, "%s: %s: element count overflows", op, name);
  }
  uint64_t needed = 0;
  TERN_CHECK_OR_RETURN_ERROR(dtype_nbytes(t->dtype, numel, &needed), InvalidArgument,
                             "%s: %s: byte size overflows", op, name);
  TERN_CHECK_OR_RETURN_ERROR(t->nbytes >= needed, InvalidArgument,
                             "%s: %s: expected at least %" PRIu64 " bytes for %" PRIu64
                             " %s elements, found %" PRIu64,
                             op, name, needed, numel, to_string(t->dtype), t->nbytes);
  TERN_CHECK_OR_RETURN_ERROR(needed == 0 || t->data != nullptr, InvalidArgument,
                             "%s: %s: null data for %" PRIu64 " elements", op, name, numel);
  return t;
}

Error check_dtype(const char* op, const char* name, const TensorView& t, DType expected) {
  TERN_CHECK_OR_RETURN_ERROR(t.dtype == expected, InvalidArgument,
                             "%s: %s: expected dtype %s, found %s", op, name, to_string(expected),
                             to_string(t.dtype));
  return Error::Ok;
}

Error check_dtype_in(const char* op, const char* name, const TensorView& t,
                     Span<const DType> allowed) {
  for (DType d : allowed) {
    if (t.dtype == d) return Error::Ok;
  }
  char list[128];
  size_t pos = 0;
  list[0] = '\0';
  for (size_t i = 0; i < allowed.size(); ++i) {
    int n = snprintf(list + pos, sizeof(list) - pos, i ? ", %s" : "%s", to_string(allowed[i]));
    if (n < 0 || static_cast<size_t>(n) >= sizeof(list) - pos) break;
    pos += static_cast<size_t>(n);
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: %s: expected dtype one of {%s}, found %s", op, name,
                    list, to_string(t.dtype));
}

Error check_shape(const char* op, const char* name, const TensorView& t,
                  Span<const int64_t> expected) {
  bool equal = t.rank == expected.size();
  for (uint32_t d = 0; equal && d < t.rank; ++d) equal = t.sizes[d] == expected[d];
  if (equal) return Error::Ok;
  char want[160];
  char found[160];
  format_shape(expected, want, sizeof(want));
  format_shape(t.shape(), found, sizeof(found));
  TERN_RETURN_ERROR(InvalidArgument, "%s: %s: expected shape %s, found %s", op, name, want,
                    found);
}

Result<const EValue*> value_arg(const char* op, Span<EValue*> args, size_t index,
                                const char* name) {
  TERN_CHECK_OR_RETURN_ERROR(index < args.size(), InvalidArgument,
                             "%s: argument %zu (%s) missing: only %zu arguments", op, index, name,
                             args.size());
  TERN_CHECK_OR_RETURN_ERROR(args[index] != nullptr, InvalidArgument,
                             "%s: argument %zu (%s) is a null EValue", op, index, name);
  return static_cast<const EValue*>(args[index]);
}

Result<int64_t> int_arg(const char* op, Span<EValue*> args, size_t index, const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  TERN_CHECK_OR_RETURN_ERROR(v->is_int(), InvalidArgument,
                             "%s: argument %zu (%s): expected an int, found %s", op, index, name,
                             to_string(v->tag));
  return v->to_int();
}

Result<bool> bool_arg(const char* op, Span<EValue*> args, size_t index, const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  TERN_CHECK_OR_RETURN_ERROR(v->is_bool(), InvalidArgument,
                             "%s: argument %zu (%s): expected a bool, found %s", op, index, name,
                             to_string(v->tag));
  return v->to_bool();
}

Result<TensorView*> optional_tensor_arg(const char* op, Span<EValue*> args, size_t index,
                                        const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  if (v->is_none()) return static_cast<TensorView*>(nullptr);
  TERN_CHECK_OR_RETURN_ERROR(v->is_tensor(), InvalidArgument,
                             "%s: argument %zu (%s): expected a tensor or none, found %s", op,
                             index, name, to_string(v->tag));
  return tensor_arg(op, args, index, name);
}

bool string_equals(const EValue& value, const char* expected) {
  if (!value.is_string()) return false;
  const size_t n = std::strlen(expected);
  return value.payload.string.size == n &&
         (n == 0 || (value.payload.string.data != nullptr &&
                     std::memcmp(value.payload.string.data, expected, n) == 0));
}

}  // namespace portable
}  // namespace tern
