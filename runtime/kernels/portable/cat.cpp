// tern::cat(tensors, dim, out): concatenation along dim, one contiguous block per tensor per
// outer index.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

// ATen (legacy): a 1-D tensor of size 0 is skipped whatever the other shapes are.
bool skipped(const TensorView& t) { return t.rank == 1 && t.sizes[0] == 0; }

}  // namespace

Error cat(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::cat";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_CHECK_OR_RETURN_ERROR(args[0] != nullptr && args[0]->is_tensor_list(), InvalidArgument,
                             "%s: argument 0 (tensors): expected a tensor list, found %s", op,
                             args[0] ? to_string(args[0]->tag) : "null");
  const Span<TensorView* const> list = args[0]->to_tensor_list();
  TERN_CHECK_OR_RETURN_ERROR(list.size() > 0 && list.data() != nullptr, InvalidArgument,
                             "%s: tensors: expected a non-empty list", op);
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));

  // Check every element like a tensor argument, then shapes against the first kept one.
  const TensorView* ref = nullptr;
  for (size_t i = 0; i < list.size(); ++i) {
    EValue element = EValue::from_tensor(list[i]);
    EValue* element_ptr = &element;
    char name[32];
    std::snprintf(name, sizeof(name), "tensors[%zu]", i);
    TERN_ASSIGN_OR_RETURN(TensorView* t, tensor_arg(op, Span<EValue*>(&element_ptr, 1), 0, name));
    TERN_RETURN_IF_ERROR(check_byte_dtype(op, name, *t));
    TERN_CHECK_OR_RETURN_ERROR(t->dtype == out->dtype, InvalidArgument,
                               "%s: tensors[%zu]: expected dtype %s (out's), found %s", op, i,
                               to_string(out->dtype), to_string(t->dtype));
    TERN_CHECK_OR_RETURN_ERROR(t->rank > 0, InvalidArgument,
                               "%s: tensors[%zu]: a rank-0 tensor cannot be concatenated", op, i);
    if (ref == nullptr && !skipped(*t)) ref = t;
  }
  FixedShape shape;
  uint32_t dim = 0;
  if (ref == nullptr) {  // every tensor is a skipped [0]: the result is [0]
    shape.rank = 1;
    TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
    return Error::Ok;
  }
  TERN_ASSIGN_OR_RETURN(dim, wrap_dim(op, "dim", raw_dim, ref->rank));
  shape.rank = ref->rank;
  for (uint32_t d = 0; d < ref->rank; ++d) shape.sizes[d] = d == dim ? 0 : ref->sizes[d];
  char a[160];
  char b[160];
  uint64_t total = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const TensorView& t = *list[i];
    if (skipped(t)) continue;
    bool match = t.rank == ref->rank;
    for (uint32_t d = 0; match && d < t.rank; ++d) match = d == dim || t.sizes[d] == ref->sizes[d];
    TERN_CHECK_OR_RETURN_ERROR(match, InvalidArgument,
                               "%s: tensors[%zu]: shape %s does not match %s except in dim %u", op,
                               i, format_shape(t.shape(), a, sizeof(a)),
                               format_shape(ref->shape(), b, sizeof(b)), dim);
    total += static_cast<uint64_t>(t.sizes[dim]);  // both below 2^63: no wrap
    TERN_CHECK_OR_RETURN_ERROR(total <= static_cast<uint64_t>(INT64_MAX), InvalidArgument,
                               "%s: the concatenated size overflows", op);
  }
  shape.sizes[dim] = static_cast<int64_t>(total);
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));

  const size_t es = element_size(out->dtype);
  uint64_t outer = 1;
  for (uint32_t d = 0; d < dim; ++d) outer *= static_cast<uint64_t>(shape.sizes[d]);
  uint64_t inner = 1;
  for (uint32_t d = dim + 1; d < shape.rank; ++d) inner *= static_cast<uint64_t>(shape.sizes[d]);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (uint64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < list.size(); ++i) {
      const TensorView& t = *list[i];
      if (skipped(t)) continue;
      const size_t block = static_cast<size_t>(t.sizes[dim]) * static_cast<size_t>(inner) * es;
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const uint8_t*>(t.data) + o * block, block);
      dst += block;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
