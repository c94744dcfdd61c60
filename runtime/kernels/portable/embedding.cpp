// tern::embedding(weight [V, D], indices, out [..., D]): rows of weight picked by indices. A
// quantized (nf4 / fp8) weight stays packed: each picked row is dequantized straight into out
// (f32), so no scratch is needed.
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/quant_weight.h"
#include "runtime/kernels/util/quant_formats.h"

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers

Error embedding(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::embedding";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* weight, tensor_arg(op, args, 0, "weight"));
  TERN_ASSIGN_OR_RETURN(TensorView* indices, tensor_arg(op, args, 1, "indices"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  const bool quantized = quant::is_quantized(weight->dtype);
  if (quantized) {
    TERN_RETURN_IF_ERROR(check_quantized_weight(op, "weight", *weight));
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  } else {
    TERN_RETURN_IF_ERROR(check_byte_dtype(op, "weight", *weight));
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, weight->dtype));
  }
  TERN_RETURN_IF_ERROR(check_index_dtype(op, "indices", *indices));
  TERN_CHECK_OR_RETURN_ERROR(weight->rank == 2, InvalidArgument,
                             "%s: weight: expected rank 2 [V, D], found rank %u", op,
                             weight->rank);
  TERN_CHECK_OR_RETURN_ERROR(indices->rank < kMaxRank, InvalidArgument,
                             "%s: indices: rank %u leaves no room for the embedding dim", op,
                             indices->rank);
  FixedShape shape;
  shape.rank = indices->rank + 1;
  for (uint32_t d = 0; d < indices->rank; ++d) shape.sizes[d] = indices->sizes[d];
  shape.sizes[indices->rank] = weight->sizes[1];
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, shape.span()));
  const int64_t rows = weight->sizes[0];
  const uint64_t dim = static_cast<uint64_t>(weight->sizes[1]);
  const size_t row = static_cast<size_t>(dim) * (quantized ? sizeof(float) : element_size(weight->dtype));
  const uint64_t n = indices->numel();
  const uint8_t* src = static_cast<const uint8_t*>(weight->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = index_at(*indices, i);
    TERN_CHECK_OR_RETURN_ERROR(v >= 0 && v < rows, InvalidArgument,
                               "%s: indices element %" PRIu64 " = %" PRId64 " out of range for "
                               "%" PRId64 " embeddings (expected in [0, %" PRId64 "))",
                               op, i, v, rows, rows);
    if (row == 0) continue;
    if (quantized) {
      quant::dequantize(*weight, static_cast<uint64_t>(v) * dim, dim,
                        reinterpret_cast<float*>(dst + i * row));
    } else {
      std::memcpy(dst + i * row, src + static_cast<size_t>(v) * row, row);
    }
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
