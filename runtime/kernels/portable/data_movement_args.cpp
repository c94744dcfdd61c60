#include "runtime/kernels/portable/data_movement_args.h"

#include <cinttypes>
#include <cstring>

namespace tern::portable::dm {
Error optional_int_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                       bool* present, int64_t* value) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  *present = v->is_int();
  if (v->is_int()) *value = v->to_int();
  TERN_CHECK_OR_RETURN_ERROR(v->is_int() || v->is_none(), InvalidArgument,
                             "%s: argument %zu (%s): expected an int or none, found %s", op, index,
                             name, to_string(v->tag));
  return Error::Ok;
}

Error optional_double_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                          bool* present, double* value) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  *present = v->is_double() || v->is_int();
  if (v->is_double()) *value = v->to_double();
  if (v->is_int()) *value = static_cast<double>(v->to_int());
  TERN_CHECK_OR_RETURN_ERROR(*present || v->is_none(), InvalidArgument,
                             "%s: argument %zu (%s): expected a double, an int or none, found %s",
                             op, index, name, to_string(v->tag));
  return Error::Ok;
}

Result<Span<const int64_t>> int_list_arg(const char* op, Span<EValue*> args, size_t index,
                                         const char* name, size_t max_size) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  TERN_CHECK_OR_RETURN_ERROR(v->is_int_list(), InvalidArgument,
                             "%s: argument %zu (%s): expected an int list, found %s", op, index,
                             name, to_string(v->tag));
  const Span<const int64_t> list = v->to_int_list();
  TERN_CHECK_OR_RETURN_ERROR(list.size() == 0 || list.data() != nullptr, InvalidArgument,
                             "%s: %s: null list data", op, name);
  TERN_CHECK_OR_RETURN_ERROR(list.size() <= max_size, InvalidArgument,
                             "%s: %s: expected at most %zu entries, found %zu", op, name,
                             max_size, list.size());
  return list;
}

bool string_equals(const EValue& value, const char* expected) {
  if (!value.is_string()) return false;
  const size_t n = std::strlen(expected);
  return value.payload.string.size == n &&
         (n == 0 || (value.payload.string.data != nullptr &&
                     std::memcmp(value.payload.string.data, expected, n) == 0));
}

Result<uint32_t> wrap_dim(const char* op, const char* name, int64_t dim, uint32_t rank) {
  const int64_t r = rank == 0 ? 1 : static_cast<int64_t>(rank);
  TERN_CHECK_OR_RETURN_ERROR(dim >= -r && dim < r, InvalidArgument,
                             "%s: %s: dim %" PRId64 " out of range for a rank-%u tensor "
                             "(expected in [%" PRId64 ", %" PRId64 "])",
                             op, name, dim, rank, -r, r - 1);
  return static_cast<uint32_t>(dim < 0 ? dim + r : dim);
}

Error check_byte_dtype(const char* op, const char* name, const TensorView& t) {
  TERN_CHECK_OR_RETURN_ERROR(bits_per_element(t.dtype) % 8 == 0, InvalidArgument,
                             "%s: %s: expected a dtype of whole bytes per element, found %s", op,
                             name, to_string(t.dtype));
  return Error::Ok;
}

Error check_index_dtype(const char* op, const char* name, const TensorView& t) {
  TERN_CHECK_OR_RETURN_ERROR(t.dtype == DType::I64 || t.dtype == DType::I32, InvalidArgument,
                             "%s: %s: expected dtype one of {i64, i32}, found %s", op, name,
                             to_string(t.dtype));
  return Error::Ok;
}

}  // namespace tern::portable::dm
