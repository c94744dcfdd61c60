#include "runtime/kernels/portable/reduction_util.h"

#include <cinttypes>

#include "runtime/kernels/portable/kernel_args.h"

namespace tern {
namespace portable {
namespace reduction {

Result<double> double_arg(const char* op, Span<EValue*> args, size_t index, const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  if (v->is_int()) return static_cast<double>(v->to_int());
  TERN_CHECK_OR_RETURN_ERROR(v->is_double(), InvalidArgument,
                             "%s: argument %zu (%s): expected a double, found %s", op, index, name,
                             to_string(v->tag));
  return v->to_double();
}

bool is_none_arg(Span<EValue*> args, size_t index) {
  return index < args.size() && args[index] != nullptr && args[index]->is_none();
}

Result<Span<const int64_t>> int_list_arg(const char* op, Span<EValue*> args, size_t index,
                                         const char* name) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, name));
  TERN_CHECK_OR_RETURN_ERROR(v->is_int_list(), InvalidArgument,
                             "%s: argument %zu (%s): expected an int list, found %s", op, index,
                             name, to_string(v->tag));
  const Span<const int64_t> list = v->to_int_list();
  TERN_CHECK_OR_RETURN_ERROR(list.size() == 0 || list.data() != nullptr, InvalidArgument,
                             "%s: argument %zu (%s): int list of %zu entries without data", op,
                             index, name, list.size());
  return list;
}

Error normalize_dim(const char* op, const char* name, int64_t dim, uint32_t rank, uint32_t* out) {
  const int64_t r = rank == 0 ? 1 : static_cast<int64_t>(rank);
  TERN_CHECK_OR_RETURN_ERROR(dim >= -r && dim < r, InvalidArgument,
                             "%s: %s: expected a dim in [%" PRId64 ", %" PRId64
                             "] for a rank-%u tensor, found %" PRId64,
                             op, name, -r, r - 1, rank, dim);
  *out = static_cast<uint32_t>(dim < 0 ? dim + r : dim);
  return Error::Ok;
}

Error normalized_rows(const char* op, const TensorView& x, Span<const int64_t> normalized_shape,
                      int64_t* rows, int64_t* cols) {
  const size_t n = normalized_shape.size();
  TERN_CHECK_OR_RETURN_ERROR(n >= 1 && n <= x.rank, InvalidArgument,
                             "%s: normalized_shape: expected 1 to %u dims (the rank of x), found "
                             "%zu",
                             op, x.rank, n);
  const uint32_t lead = x.rank - static_cast<uint32_t>(n);
  int64_t r = 1;
  int64_t c = 1;
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (d < lead) {
      r *= x.sizes[d];
      continue;
    }
    if (x.sizes[d] != normalized_shape[d - lead]) {
      char want[160];
      char found[160];
      format_shape(normalized_shape, want, sizeof(want));
      format_shape(x.shape(), found, sizeof(found));
      TERN_RETURN_ERROR(InvalidArgument,
                        "%s: x: expected trailing dims %s (normalized_shape), found shape %s", op,
                        want, found);
    }
    c *= x.sizes[d];
  }
  *rows = r;
  *cols = c;
  return Error::Ok;
}

Error check_optional_param(const char* op, const char* name, const TensorView* t,
                           Span<const int64_t> shape) {
  if (t == nullptr) return Error::Ok;
  TERN_RETURN_IF_ERROR(check_dtype(op, name, *t, DType::F32));
  return check_shape(op, name, *t, shape);
}

Error norm_args(const char* op, Span<EValue*> args, size_t first, bool with_bias,
                const double* eps_if_none, const TensorView& x, NormArgs* out) {
  size_t i = first;
  TERN_ASSIGN_OR_RETURN(out->weight, optional_tensor_arg(op, args, i++, "weight"));
  if (with_bias) {
    TERN_ASSIGN_OR_RETURN(out->bias, optional_tensor_arg(op, args, i++, "bias"));
  }
  if (eps_if_none != nullptr && is_none_arg(args, i)) {
    out->eps = *eps_if_none;
  } else {
    TERN_ASSIGN_OR_RETURN(out->eps, double_arg(op, args, i, "eps"));
  }
  ++i;
  TERN_ASSIGN_OR_RETURN(out->out, tensor_arg(op, args, i, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", x, DType::F32));
  return check_dtype(op, "out", *out->out, DType::F32);
}

Error check_row_norm(const char* op, const TensorView& x, Span<const int64_t> normalized_shape,
                     const NormArgs& a, int64_t* rows, int64_t* cols) {
  TERN_RETURN_IF_ERROR(normalized_rows(op, x, normalized_shape, rows, cols));
  TERN_RETURN_IF_ERROR(check_optional_param(op, "weight", a.weight, normalized_shape));
  TERN_RETURN_IF_ERROR(check_optional_param(op, "bias", a.bias, normalized_shape));
  return check_shape(op, "out", *a.out, x.shape());
}

DimSplit split_at_dim(Span<const int64_t> shape, uint32_t dim) {
  DimSplit s;
  if (shape.size() == 0) return s;
  for (uint32_t d = 0; d < dim; ++d) s.outer *= shape[d];
  s.size = shape[dim];
  for (uint32_t d = dim + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

Error make_reduce_plan(const char* op, const TensorView& x, Span<const int64_t> dims, bool keepdim,
                       ReducePlan* plan) {
  *plan = ReducePlan();
  const uint32_t rank = x.rank;
  if (dims.size() == 0) {
    for (uint32_t d = 0; d < rank; ++d) plan->reduced[d] = true;
  } else {
    TERN_CHECK_OR_RETURN_ERROR(dims.size() <= (rank == 0 ? 1u : rank), InvalidArgument,
                               "%s: dims: %zu dims for a rank-%u tensor", op, dims.size(), rank);
    bool seen_scalar_dim = false;
    for (size_t i = 0; i < dims.size(); ++i) {
      uint32_t d = 0;
      TERN_RETURN_IF_ERROR(normalize_dim(op, "dims", dims[i], rank, &d));
      if (rank == 0) {
        TERN_CHECK_OR_RETURN_ERROR(!seen_scalar_dim, InvalidArgument,
                                   "%s: dims: dim %" PRId64 " appears more than once", op, dims[i]);
        seen_scalar_dim = true;
        continue;
      }
      TERN_CHECK_OR_RETURN_ERROR(!plan->reduced[d], InvalidArgument,
                                 "%s: dims: dim %u appears more than once", op, d);
      plan->reduced[d] = true;
    }
  }
  // Output shape and element counts.
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t size = x.sizes[d];
    if (plan->reduced[d]) {
      plan->reduce_numel *= static_cast<uint64_t>(size);
      if (size == 0) plan->empty_reduced_dim = true;
      if (keepdim) plan->out_shape.sizes[plan->out_shape.rank++] = 1;
    } else {
      plan->out_numel *= static_cast<uint64_t>(size);
      plan->out_shape.sizes[plan->out_shape.rank++] = size;
    }
  }
  // Merged groups, built innermost first and reversed at the end.
  int64_t stride = 1;
  int last_kind = -1;  // 0 kept, 1 reduced
  uint32_t kept = 0;
  uint32_t red = 0;
  int64_t kept_sizes[kMaxRank];
  int64_t kept_strides[kMaxRank];
  int64_t red_sizes[kMaxRank];
  int64_t red_strides[kMaxRank];
  for (uint32_t d = rank; d-- > 0;) {
    const int64_t size = x.sizes[d];
    if (size == 1) continue;
    const int kind = plan->reduced[d] ? 1 : 0;
    if (last_kind < 0) plan->inner_kept = kind == 0;
    if (kind == last_kind) {
      if (kind == 0)
        kept_sizes[kept - 1] *= size;
      else
        red_sizes[red - 1] *= size;
    } else if (kind == 0) {
      kept_sizes[kept] = size;
      kept_strides[kept++] = stride;
    } else {
      red_sizes[red] = size;
      red_strides[red++] = stride;
    }
    last_kind = kind;
    stride *= size;
  }
  plan->kept_rank = kept;
  plan->red_rank = red;
  for (uint32_t i = 0; i < kept; ++i) {
    plan->kept_sizes[i] = kept_sizes[kept - 1 - i];
    plan->kept_strides[i] = kept_strides[kept - 1 - i];
  }
  for (uint32_t i = 0; i < red; ++i) {
    plan->red_sizes[i] = red_sizes[red - 1 - i];
    plan->red_strides[i] = red_strides[red - 1 - i];
  }
  return Error::Ok;
}

}  // namespace reduction
}  // namespace portable
}  // namespace tern
