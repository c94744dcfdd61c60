// tern::scatter(x, dim, index, src, reduce, out): out = x, then for every element of index,
// at position p: out[p with dim's coordinate replaced by index[p]] = src[p] (reduce "none")
// or += src[p] (reduce "add"). ATen's scatter (src or value), scatter_ and scatter_add. src has
// index's shape, or one element (the value overload) written wherever index points.
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/index_walk.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

namespace {

enum class ScatterReduce { None, Add };

Result<ScatterReduce> reduce_arg(const char* op, Span<EValue*> args, size_t index) {
  TERN_ASSIGN_OR_RETURN(const EValue* v, value_arg(op, args, index, "reduce"));
  if (string_equals(*v, "none")) return ScatterReduce::None;
  if (string_equals(*v, "add")) return ScatterReduce::Add;
  if (v->is_string()) {
    const size_t n = v->payload.string.size > 32 ? 32 : v->payload.string.size;
    TERN_RETURN_ERROR(InvalidArgument, "%s: reduce: expected \"none\" or \"add\", found \"%.*s\"",
                      op, static_cast<int>(n), v->payload.string.data);
  }
  TERN_RETURN_ERROR(InvalidArgument, "%s: reduce: expected a string, found %s", op,
                    to_string(v->tag));
}

template <typename T>
void add_element(uint8_t* dst, const uint8_t* src) {
  T a;
  T b;
  std::memcpy(&a, dst, sizeof(T));
  std::memcpy(&b, src, sizeof(T));
  a = static_cast<T>(a + b);
  std::memcpy(dst, &a, sizeof(T));
}

// The element update of one reduce mode and dtype; null for an unsupported pair.
using UpdateFn = void (*)(uint8_t* dst, const uint8_t* src);

template <size_t N>
void copy_element(uint8_t* dst, const uint8_t* src) {
  std::memcpy(dst, src, N);
}

UpdateFn update_for(ScatterReduce reduce, DType dtype) {
  if (reduce == ScatterReduce::Add) {
    switch (dtype) {
      case DType::F32: return add_element<float>;
      case DType::I64: return add_element<int64_t>;
      case DType::I32: return add_element<int32_t>;
      default: return nullptr;
    }
  }
  switch (element_size(dtype)) {
    case 1: return copy_element<1>;
    case 2: return copy_element<2>;
    case 4: return copy_element<4>;
    case 8: return copy_element<8>;
    default: return nullptr;
  }
}

}  // namespace

Error scatter(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::scatter";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 6, 6));
  TERN_ASSIGN_OR_RETURN(const TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(const TensorView* index, tensor_arg(op, args, 2, "index"));
  TERN_ASSIGN_OR_RETURN(const TensorView* src, tensor_arg(op, args, 3, "src"));
  TERN_ASSIGN_OR_RETURN(const ScatterReduce reduce, reduce_arg(op, args, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 5, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "src", *src, x->dtype));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_RETURN_IF_ERROR(check_index_dtype(op, "index", *index));
  const UpdateFn update = update_for(reduce, x->dtype);
  TERN_CHECK_OR_RETURN_ERROR(update != nullptr, InvalidArgument,
                             "%s: reduce \"add\": expected x of dtype f32, i64 or i32, found %s",
                             op, to_string(x->dtype));
  TERN_ASSIGN_OR_RETURN(const uint32_t dim, wrap_dim(op, "dim", raw_dim, x->rank));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(x->sizes, x->rank)));
  TERN_RETURN_IF_ERROR(check_index_within(op, *x, *index, dim));
  const uint64_t n = index->numel();
  const bool one_value = src->numel() == 1;
  if (!one_value) {
    TERN_RETURN_IF_ERROR(check_shape(op, "src", *src, index->shape()));
  }
  // Every index is checked before anything is written: a bad index leaves out untouched.
  TERN_RETURN_IF_ERROR(check_index_values(op, *index, dim, x->rank == 0 ? 1 : x->sizes[dim]));
  if (out->data != x->data && out->nbytes > 0) std::memcpy(out->data, x->data, out->nbytes);
  const size_t es = element_size(x->dtype);
  const uint8_t* values = static_cast<const uint8_t*>(src->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  IndexWalk walk(*x, *index, dim);
  for (uint64_t i = 0; i < n; ++i, walk.next()) {
    // A repeated index keeps the last element written (replace), as ATen does on CPU.
    const int64_t v = index_at(*index, i);
    update(dst + static_cast<size_t>(walk.offset(v)) * es, values + (one_value ? 0 : i * es));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
