// tern::grouped_linear(x [S, K] f32, w [E * N, K], ends [E] (i32 or i64), out [S, N]): grouped_mm
// with each expert's matrix transposed, as tern::linear holds a weight — the form `tern compile
// --quantize` gives a grouped_mm whose experts it quantizes (w then nf4 / fp8 [E * N, K], rows
// = out features, blocks along K). Group e (rows [ends[e - 1], ends[e]), group 0 from row 0) is
// multiplied by rows [e * N, (e + 1) * N) of w, transposed; rows after the last end are zeros.
// A quantized w stays packed: panels of its rows are dequantized into scratch, as tern::linear
// does. Ends that go backwards or past S fail the call, naming them.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/group_ends.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/quant_weight.h"
#include "runtime/kernels/util/quant_formats.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {

Error grouped_linear(KernelContext& context, Span<EValue*> args) {
  const char* op = "tern::grouped_linear";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * w, tensor_arg(op, args, 1, "w"));
  TERN_ASSIGN_OR_RETURN(TensorView * ends, tensor_arg(op, args, 2, "ends"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "x", *x, 2, 2));
  const bool quantized = quant::is_quantized(w->dtype);
  if (quantized) {
    TERN_RETURN_IF_ERROR(check_quantized_weight(op, "w", *w));
  } else {
    TERN_RETURN_IF_ERROR(check_f32_rank(op, "w", *w, 2, 2));
  }
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  TERN_RETURN_IF_ERROR(dm::check_index_dtype(op, "ends", *ends));
  const int64_t s = x->sizes[0], k = x->sizes[1];
  const int64_t e = ends->rank == 1 ? ends->sizes[0] : -1;
  TERN_CHECK_OR_RETURN_ERROR(e >= 1 && w->sizes[0] % e == 0 && w->sizes[1] == k, InvalidArgument,
                             "%s: expected ends [E] (E >= 1) and w [E * N, %" PRId64
                             "], found ends of rank %u (%" PRId64 " groups) and w [%" PRId64
                             ", %" PRId64 "]",
                             op, k, ends->rank, e, w->sizes[0], w->sizes[1]);
  const int64_t n = w->sizes[0] / e;
  const int64_t shape[] = {s, n};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(shape, 2)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *x, "x"));
  TERN_RETURN_IF_ERROR(quantized ? check_no_overlap_quantized(op, *out, *w, "w")
                                  : check_no_overlap(op, *out, *w, "w"));
  TERN_RETURN_IF_ERROR(check_group_ends(op, "ends", *ends, s));
  const float* xs = x->data_as<const float>();
  float* ys = out->data_as<float>();
  float* panel = nullptr;
  uint64_t panel_rows = 0;
  if (quantized && k > 0 && n > 0) {
    const uint64_t kk = static_cast<uint64_t>(k);
    panel = take_quant_panel(context.temp_allocator,
                             quant_panel_rows(static_cast<uint64_t>(n), kk), kk, &panel_rows);
    if (panel == nullptr) return quant_panel_error(op, context.temp_allocator, kk);
  }
  int64_t start = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t end = dm::index_at(*ends, static_cast<uint64_t>(g));
    const int64_t m = end - start;
    if (m > 0 && n > 0) {
      float* y = ys + start * n;
      if (!quantized || k == 0) {  // (k = 0 reads no weight: zeros)
        gemm_f32(false, true, m, n, k, 1.0f, xs + start * k, k,
                 w->data_as<const float>() + g * n * k, k, 0.0f, y, n);
      } else {
        for (int64_t r0 = 0; r0 < n; r0 += static_cast<int64_t>(panel_rows)) {
          const int64_t rows = std::min<int64_t>(static_cast<int64_t>(panel_rows), n - r0);
          quant::dequantize(*w, static_cast<uint64_t>(g * n + r0) * static_cast<uint64_t>(k),
                            static_cast<uint64_t>(rows * k), panel);
          gemm_f32(false, true, m, rows, k, 1.0f, xs + start * k, k, panel, k, 0.0f, y + r0, n);
        }
      }
    }
    start = end;
  }
  if (start < s) {
    std::memset(ys + start * n, 0, sizeof(float) * static_cast<size_t>((s - start) * n));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
