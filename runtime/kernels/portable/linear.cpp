// tern::linear(x, weight, bias, out): out = x @ weight^T + bias, f32, through the shared GEMM
// (weight read transposed in place; every leading dim of x folds into the GEMM's M). A
// quantized weight (nf4 / fp8) stays packed: panels of its rows are dequantized into scratch
// (runtime/kernels/util/quant_formats.h) and each panel runs the same f32 GEMM.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/quant_weight.h"
#include "runtime/kernels/util/quant_formats.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {

Error linear(KernelContext& context, Span<EValue*> args) {
  const char* op = "tern::linear";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView* weight, tensor_arg(op, args, 1, "weight"));
  TERN_ASSIGN_OR_RETURN(TensorView* bias, optional_tensor_arg(op, args, 2, "bias"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "x", *x, 1, kMaxRank));
  const bool quantized = quant::is_quantized(weight->dtype);
  if (quantized) {
    TERN_RETURN_IF_ERROR(check_quantized_weight(op, "weight", *weight));
  } else {
    TERN_RETURN_IF_ERROR(check_f32_rank(op, "weight", *weight, 2, 2));
  }
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  const int64_t in_features = x->sizes[x->rank - 1];
  const int64_t out_features = weight->sizes[0];
  TERN_CHECK_OR_RETURN_ERROR(weight->sizes[1] == in_features, InvalidArgument,
                             "%s: weight: expected in_features %" PRId64
                             " (last dim of x), found %" PRId64,
                             op, in_features, weight->sizes[1]);
  if (bias != nullptr) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "bias", *bias, DType::F32));
    const int64_t want[1] = {out_features};
    TERN_RETURN_IF_ERROR(check_shape(op, "bias", *bias, Span<const int64_t>(want)));
  }
  int64_t want_out[kMaxRank];
  for (uint32_t d = 0; d + 1 < x->rank; ++d) want_out[d] = x->sizes[d];
  want_out[x->rank - 1] = out_features;
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(want_out, x->rank)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *x, "x"));
  TERN_RETURN_IF_ERROR(quantized ? check_no_overlap_quantized(op, *out, *weight, "weight")
                                  : check_no_overlap(op, *out, *weight, "weight"));
  if (bias != nullptr) TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *bias, "bias"));

  int64_t m = 1;
  for (uint32_t d = 0; d + 1 < x->rank; ++d) m *= x->sizes[d];  // <= numel(x) or a 0 in it
  if (m == 0 || out_features == 0) return Error::Ok;
  float* o = out->data_as<float>();
  float beta = 0.0f;
  if (bias != nullptr) {
    const float* b = bias->data_as<const float>();
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(o + i * out_features, b, static_cast<size_t>(out_features) * sizeof(float));
    }
    beta = 1.0f;
  }
  if (!quantized || in_features == 0) {
    // (k = 0 reads no weight: out = bias or zeros.)
    gemm_f32(false, true, m, out_features, in_features, 1.0f, x->data_as<const float>(),
             in_features, weight->data_as<const float>(), in_features, beta, o, out_features);
    return Error::Ok;
  }
  const uint64_t in = static_cast<uint64_t>(in_features);
  uint64_t panel_rows = 0;
  float* panel = take_quant_panel(context.temp_allocator,
                                  quant_panel_rows(static_cast<uint64_t>(out_features), in), in,
                                  &panel_rows);
  if (panel == nullptr) return quant_panel_error(op, context.temp_allocator, in);
  for (int64_t r0 = 0; r0 < out_features; r0 += static_cast<int64_t>(panel_rows)) {
    const int64_t rows = std::min<int64_t>(static_cast<int64_t>(panel_rows), out_features - r0);
    quant::dequantize(*weight, static_cast<uint64_t>(r0) * in, static_cast<uint64_t>(rows) * in,
                      panel);
    gemm_f32(false, true, m, rows, in_features, 1.0f, x->data_as<const float>(), in_features,
             panel, in_features, beta, o + r0, out_features);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
