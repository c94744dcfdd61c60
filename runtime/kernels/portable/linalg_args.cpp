#include "runtime/kernels/portable/linalg_args.h"

#include <cinttypes>

#include "runtime/kernels/portable/kernel_args.h"

namespace tern::portable {
Result<double> number_arg(const char* op, Span<EValue*> args, size_t index, const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  if (v->is_int()) return static_cast<double>(v->to_int());
  TERN_CHECK_OR_RETURN_ERROR(v->is_double(), InvalidArgument,
                             "%s: argument %zu (%s): expected a double or int, found %s", op,
                             index, name, to_string(v->tag));
  return v->to_double();
}

Error spatial_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                  size_t dims, int64_t min_value, const int64_t* empty_default, int64_t* out) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  if (v->is_int()) {
    for (size_t d = 0; d < dims; ++d) out[d] = v->to_int();
  } else {
    TERN_CHECK_OR_RETURN_ERROR(v->is_int_list(), InvalidArgument,
                               "%s: argument %zu (%s): expected an int list, found %s", op,
                               index, name, to_string(v->tag));
    const Span<const int64_t> list = v->to_int_list();
    if (list.size() == 0 && empty_default != nullptr) {
      for (size_t d = 0; d < dims; ++d) out[d] = empty_default[d];
    } else {
      TERN_CHECK_OR_RETURN_ERROR(list.size() == dims || list.size() == 1, InvalidArgument,
                                 "%s: %s: expected %zu values (or 1), found %zu", op, name, dims,
                                 list.size());
      TERN_CHECK_OR_RETURN_ERROR(list.data() != nullptr, InvalidArgument,
                                 "%s: %s: null list data", op, name);
      for (size_t d = 0; d < dims; ++d) out[d] = list[list.size() == 1 ? 0 : d];
    }
  }
  for (size_t d = 0; d < dims; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(out[d] >= min_value, InvalidArgument,
                               "%s: %s: expected values >= %" PRId64 ", found %" PRId64, op, name,
                               min_value, out[d]);
  }
  return Error::Ok;
}

bool f32_overlap(const TensorView& a, const TensorView& b) {
  const uint64_t na = a.numel() * sizeof(float);
  const uint64_t nb = b.numel() * sizeof(float);
  if (na == 0 || nb == 0) return false;
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a.data);
  const uintptr_t pb = reinterpret_cast<uintptr_t>(b.data);
  return pa < pb ? pb - pa < na : pa - pb < nb;
}

Error check_no_overlap(const char* op, const TensorView& out, const TensorView& in,
                       const char* name) {
  TERN_CHECK_OR_RETURN_ERROR(!f32_overlap(out, in), InvalidArgument,
                             "%s: out must not share memory with %s", op, name);
  return Error::Ok;
}

Error check_f32_rank(const char* op, const char* name, const TensorView& t, uint32_t min_rank,
                     uint32_t max_rank) {
  TERN_RETURN_IF_ERROR(check_dtype(op, name, t, DType::F32));
  if (min_rank == max_rank) {
    TERN_CHECK_OR_RETURN_ERROR(t.rank == min_rank, InvalidArgument,
                               "%s: %s: expected rank %u, found rank %u", op, name, min_rank,
                               t.rank);
  }
  TERN_CHECK_OR_RETURN_ERROR(t.rank >= min_rank && t.rank <= max_rank, InvalidArgument,
                             "%s: %s: expected rank %u to %u, found rank %u", op, name, min_rank,
                             max_rank, t.rank);
  return Error::Ok;
}

}  // namespace tern::portable
