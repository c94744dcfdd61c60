// tern::matmul (ATen rules: 1-D operands, batch broadcasting) and tern::bmm, f32, through the
// shared GEMM. A batch whose right operand is shared folds into one GEMM of B*n rows. A
// quantized (nf4 / fp8) 2-D b stays packed: panels of its rows are dequantized into scratch
// and accumulated (out += a[:, rows] @ panel).
#include <algorithm>
#include <cinttypes>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/linalg_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/quant_weight.h"
#include "runtime/kernels/util/quant_formats.h"
#include "runtime/kernels/util/scratch_sizes.h"

namespace tern {
namespace portable {
namespace {

uint64_t product(Span<const int64_t> sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) n *= static_cast<uint64_t>(s);
  return n;
}

}  // namespace

Error matmul(KernelContext& context, Span<EValue*> args) {
  const char* op = "tern::matmul";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* a, tensor_arg(op, args, 0, "a"));
  TERN_ASSIGN_OR_RETURN(TensorView* b, tensor_arg(op, args, 1, "b"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "a", *a, 1, kMaxRank));
  const bool quantized = quant::is_quantized(b->dtype);
  if (quantized) {
    TERN_RETURN_IF_ERROR(check_quantized_weight(op, "b", *b));
  } else {
    TERN_RETURN_IF_ERROR(check_f32_rank(op, "b", *b, 1, kMaxRank));
  }
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  const uint32_t ra = a->rank;
  const uint32_t rb = b->rank;
  // a is [batch_a..., n, k] (1-D: [k], n = 1); b is [batch_b..., k, m] (1-D: [k], m = 1).
  const int64_t n = ra >= 2 ? a->sizes[ra - 2] : 1;
  const int64_t k = a->sizes[ra - 1];
  const int64_t kb = rb >= 2 ? b->sizes[rb - 2] : b->sizes[0];
  const int64_t m = rb >= 2 ? b->sizes[rb - 1] : 1;
  TERN_CHECK_OR_RETURN_ERROR(k == kb, InvalidArgument,
                             "%s: b: expected %" PRId64 " rows (the last dim of a), found %" PRId64,
                             op, k, kb);
  const Span<const int64_t> batch_a(a->sizes, ra > 2 ? ra - 2 : 0);
  const Span<const int64_t> batch_b(b->sizes, rb > 2 ? rb - 2 : 0);
  FixedShape batch;
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, batch_a, batch_b, &batch));
  int64_t want[kMaxRank + 2];
  uint32_t rank = 0;
  for (uint32_t d = 0; d < batch.rank; ++d) want[rank++] = batch.sizes[d];
  if (ra >= 2) want[rank++] = n;
  if (rb >= 2) want[rank++] = m;
  TERN_CHECK_OR_RETURN_ERROR(rank <= kMaxRank, InvalidArgument,
                             "%s: output rank %u exceeds the maximum %zu", op, rank, kMaxRank);
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(want, rank)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *a, "a"));
  TERN_RETURN_IF_ERROR(quantized ? check_no_overlap_quantized(op, *out, *b, "b")
                                  : check_no_overlap(op, *out, *b, "b"));
  if (out->numel() == 0) return Error::Ok;

  const float* pa = a->data_as<const float>();
  const float* pb = b->data_as<const float>();
  float* pc = out->data_as<float>();
  const uint64_t batches = product(batch.span());
  const uint64_t batches_a = product(batch_a);
  const uint64_t batches_b = product(batch_b);
  if (quantized && k > 0) {
    // b is [k, m] (rank 2, so shared by every batch of a): accumulate over panels of its rows.
    const uint64_t cols = static_cast<uint64_t>(m);
    uint64_t panel_rows = 0;
    float* panel = take_quant_panel(context.temp_allocator,
                                    quant_panel_rows(static_cast<uint64_t>(k), cols), cols,
                                    &panel_rows);
    if (panel == nullptr) return quant_panel_error(op, context.temp_allocator, cols);
    const int64_t rows_a = static_cast<int64_t>(batches) * n;
    for (int64_t k0 = 0; k0 < k; k0 += static_cast<int64_t>(panel_rows)) {
      const int64_t kr = std::min<int64_t>(static_cast<int64_t>(panel_rows), k - k0);
      quant::dequantize(*b, static_cast<uint64_t>(k0) * cols, static_cast<uint64_t>(kr) * cols,
                        panel);
      gemm_f32(false, false, rows_a, m, kr, 1.0f, pa + k0, k, panel, m, k0 == 0 ? 0.0f : 1.0f,
               pc, m);
    }
    return Error::Ok;
  }
  if (batches_b == 1 && batches_a == batches) {
    // b is shared by every batch of a: one GEMM over all of a's rows.
    gemm_f32(false, false, static_cast<int64_t>(batches) * n, m, k, 1.0f, pa, k, pb, m, 0.0f,
             pc, m);
    return Error::Ok;
  }
  int64_t stride_a[kMaxRank];
  int64_t stride_b[kMaxRank];
  broadcast_strides(batch_a, batch.span(), stride_a);
  broadcast_strides(batch_b, batch.span(), stride_b);
  int64_t index[kMaxRank] = {};
  int64_t off_a = 0;  // in matrices
  int64_t off_b = 0;
  for (uint64_t t = 0; t < batches; ++t) {
    gemm_f32(false, false, n, m, k, 1.0f, pa + off_a * n * k, k, pb + off_b * k * m, m, 0.0f,
             pc + static_cast<int64_t>(t) * n * m, m);
    for (int64_t d = static_cast<int64_t>(batch.rank) - 1; d >= 0; --d) {
      ++index[d];
      off_a += stride_a[d];
      off_b += stride_b[d];
      if (index[d] < batch.sizes[d]) break;
      off_a -= stride_a[d] * index[d];
      off_b -= stride_b[d] * index[d];
      index[d] = 0;
    }
  }
  return Error::Ok;
}

Error bmm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::bmm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* a, tensor_arg(op, args, 0, "a"));
  TERN_ASSIGN_OR_RETURN(TensorView* b, tensor_arg(op, args, 1, "b"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "a", *a, 3, 3));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "b", *b, 3, 3));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  const int64_t batches = a->sizes[0];
  const int64_t n = a->sizes[1];
  const int64_t k = a->sizes[2];
  const int64_t m = b->sizes[2];
  const int64_t want_b[3] = {batches, k, m};
  TERN_RETURN_IF_ERROR(check_shape(op, "b", *b, Span<const int64_t>(want_b)));
  const int64_t want[3] = {batches, n, m};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(want)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *a, "a"));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *b, "b"));
  if (out->numel() == 0) return Error::Ok;
  for (int64_t t = 0; t < batches; ++t) {
    gemm_f32(false, false, n, m, k, 1.0f, a->data_as<const float>() + t * n * k, k,
             b->data_as<const float>() + t * k * m, m, 0.0f, out->data_as<float>() + t * n * m,
             m);
  }
  return Error::Ok;
}

Error addmm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::addmm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 6));
  const size_t out_index = args.size() - 1;
  TERN_ASSIGN_OR_RETURN(TensorView* bias, tensor_arg(op, args, 0, "bias"));
  TERN_ASSIGN_OR_RETURN(TensorView* a, tensor_arg(op, args, 1, "a"));
  TERN_ASSIGN_OR_RETURN(TensorView* b, tensor_arg(op, args, 2, "b"));
  double beta = 1.0;
  double alpha = 1.0;
  if (args.size() >= 5) {
    TERN_ASSIGN_OR_RETURN(beta, number_arg(op, args, 3, "beta"));
  }
  if (args.size() >= 6) {
    TERN_ASSIGN_OR_RETURN(alpha, number_arg(op, args, 4, "alpha"));
  }
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, out_index, "out"));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "bias", *bias, 0, 2));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "a", *a, 2, 2));
  TERN_RETURN_IF_ERROR(check_f32_rank(op, "b", *b, 2, 2));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  const int64_t n = a->sizes[0];
  const int64_t k = a->sizes[1];
  const int64_t m = b->sizes[1];
  TERN_CHECK_OR_RETURN_ERROR(b->sizes[0] == k, InvalidArgument,
                             "%s: b: expected %" PRId64 " rows (the last dim of a), found %" PRId64,
                             op, k, b->sizes[0]);
  const int64_t want[2] = {n, m};
  FixedShape bias_shape;
  TERN_RETURN_IF_ERROR(broadcast_shapes(op, bias->shape(), Span<const int64_t>(want), &bias_shape));
  TERN_CHECK_OR_RETURN_ERROR(bias_shape.sizes[0] == n && bias_shape.sizes[1] == m,
                             InvalidArgument,
                             "%s: bias: expected a shape that broadcasts to [%" PRId64
                             ", %" PRId64 "]",
                             op, n, m);
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(want)));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *a, "a"));
  TERN_RETURN_IF_ERROR(check_no_overlap(op, *out, *b, "b"));
  if (out->numel() == 0) return Error::Ok;
  float* pc = out->data_as<float>();
  if (beta != 0.0) {
    // out = broadcast(bias), then the GEMM scales it by beta. Back to front, so that a bias
    // sharing out's bytes is read before it is overwritten (source index <= target index).
    int64_t strides[2];
    broadcast_strides(bias->shape(), Span<const int64_t>(want), strides);
    const float* pbias = bias->data_as<const float>();
    for (int64_t i = n; i-- > 0;) {
      for (int64_t j = m; j-- > 0;) pc[i * m + j] = pbias[i * strides[0] + j * strides[1]];
    }
  }
  gemm_f32(false, false, n, m, k, static_cast<float>(alpha), a->data_as<const float>(), k,
           b->data_as<const float>(), m, static_cast<float>(beta), pc, m);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
