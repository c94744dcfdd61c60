#include "runtime/kernels/portable/data_movement_args.h"

#include <cinttypes>

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

DimRows dim_rows(const TensorView& x, uint32_t dim) {
  DimRows r;
  for (uint32_t d = 0; d < dim; ++d) r.outer *= static_cast<uint64_t>(x.sizes[d]);
  uint64_t inner = 1;
  for (uint32_t d = dim + 1; d < x.rank; ++d) inner *= static_cast<uint64_t>(x.sizes[d]);
  r.size = x.sizes[dim];
  r.row_bytes = static_cast<size_t>(inner) * element_size(x.dtype);
  return r;
}

Error check_index_range(const char* op, const TensorView& index, uint32_t dim, int64_t size) {
  const uint64_t n = index.numel();
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = index_at(index, i);
    TERN_CHECK_OR_RETURN_ERROR(v >= 0 && v < size, InvalidArgument,
                               "%s: index[%" PRIu64 "] = %" PRId64 " out of range for dim %u of "
                               "size %" PRId64 " (expected in [0, %" PRId64 "))",
                               op, i, v, dim, size, size);
  }
  return Error::Ok;
}

Error index_args(const char* op, Span<EValue*> args, IndexArgs* out) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(out->x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(out->dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(out->index, tensor_arg(op, args, 2, "index"));
  TERN_ASSIGN_OR_RETURN(out->out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *out->x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out->out, out->x->dtype));
  return check_index_dtype(op, "index", *out->index);
}

Error check_upsample2d(const char* op, const TensorView& x, const TensorView& out,
                       Upsample2dSizes* sizes) {
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 4, InvalidArgument,
                             "%s: x: expected rank 4 [N, C, H, W], found rank %u", op, x.rank);
  TERN_CHECK_OR_RETURN_ERROR(out.rank == 4, InvalidArgument,
                             "%s: out: expected rank 4 [N, C, OH, OW], found rank %u", op,
                             out.rank);
  const int64_t h = x.sizes[2], w = x.sizes[3];
  const int64_t oh = out.sizes[2], ow = out.sizes[3];
  TERN_CHECK_OR_RETURN_ERROR(h > 0 && w > 0 && oh > 0 && ow > 0, InvalidArgument,
                             "%s: input (%" PRId64 ", %" PRId64 ") and output (%" PRId64
                             ", %" PRId64 ") sizes must be greater than 0",
                             op, h, w, oh, ow);
  const int64_t expected[4] = {x.sizes[0], x.sizes[1], oh, ow};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", out, Span<const int64_t>(expected, 4)));
  sizes->h = h;
  sizes->w = w;
  sizes->oh = oh;
  sizes->ow = ow;
  return Error::Ok;
}

}  // namespace tern::portable::dm
