// tern::repeat(x, repeats, out): x tiled repeats[d] times along each dim (x's shape is
// right-aligned against repeats, as torch.Tensor.repeat).
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error repeat(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::repeat";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const Span<const int64_t> repeats,
                        int_list_arg(op, args, 1, "repeats", kMaxRank));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(repeats.size() >= x->rank, InvalidArgument,
                             "%s: repeats: expected at least %u entries (x's rank), found %zu", op,
                             x->rank, repeats.size());
  const uint32_t rank = static_cast<uint32_t>(repeats.size());
  const uint32_t lead = rank - x->rank;
  FixedShape in;  // x's shape padded with leading 1s
  FixedShape shape;
  in.rank = shape.rank = rank;
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    in.sizes[d] = d < lead ? 1 : x->sizes[d - lead];
    TERN_CHECK_OR_RETURN_ERROR(repeats[d] >= 0, InvalidArgument,
                               "%s: repeats: %" PRId64 " at dim %u; expected >= 0", op,
                               repeats[d], d);
    uint64_t s = 0;
    TERN_CHECK_OR_RETURN_ERROR(
        checked_mul(static_cast<uint64_t>(in.sizes[d]), static_cast<uint64_t>(repeats[d]), &s) &&
            s <= static_cast<uint64_t>(INT64_MAX) && checked_mul(numel, s, &numel),
        InvalidArgument, "%s: repeated size of dim %u overflows", op, d);
    shape.sizes[d] = static_cast<int64_t>(s);
  }
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  if (numel == 0) return Error::Ok;
  const size_t es = element_size(x->dtype);
  if (rank == 0) {
    std::memcpy(out->data, x->data, es);
    return Error::Ok;
  }
  // Row by row over the output (all dims but the last): the source row is the output row's
  // coordinates modulo x's sizes; the row itself is x's row repeated.
  int64_t strides[kMaxRank];
  contiguous_strides(in.span(), strides);
  const uint32_t last = rank - 1;
  const size_t in_row = static_cast<size_t>(in.sizes[last]) * es;
  const uint64_t rows = numel / static_cast<uint64_t>(shape.sizes[last]);
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  int64_t coord[kMaxRank] = {};
  for (uint64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (uint32_t d = 0; d < last; ++d) offset += (coord[d] % in.sizes[d]) * strides[d];
    const uint8_t* srow = src + static_cast<size_t>(offset) * es;
    for (int64_t k = 0; k < repeats[last]; ++k, dst += in_row) std::memcpy(dst, srow, in_row);
    for (int32_t d = static_cast<int32_t>(last) - 1; d >= 0; --d) {
      if (++coord[d] < shape.sizes[d]) break;
      coord[d] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
