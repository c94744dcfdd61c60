// tern::softmax, tern::log_softmax(x, dim, out), f32: the row maximum is subtracted before
// exp, the sum of exps accumulates in double. Rows along an inner dim are processed a chunk
// of adjacent columns at a time so the input streams.
#include <cmath>
#include <cstdint>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {
namespace {

constexpr int64_t kChunk = 128;

template <bool kLog>
void softmax_contiguous(const float* x, float* out, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - m);
    if (!kLog) out[i] = e;
    sum += e;
  }
  if (kLog) {
    const float log_sum = static_cast<float>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - m) - log_sum;
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) out[i] *= inv;
  }
}

// Columns [0, n) of a [size, stride] block, n <= kChunk.
template <bool kLog>
void softmax_strided(const float* x, float* out, int64_t size, int64_t stride, int64_t n) {
  float m[kChunk];
  double sum[kChunk];
  for (int64_t i = 0; i < n; ++i) {
    m[i] = -INFINITY;
    sum[i] = 0.0;
  }
  for (int64_t k = 0; k < size; ++k) {
    const float* row = x + k * stride;
    for (int64_t i = 0; i < n; ++i) m[i] = row[i] > m[i] ? row[i] : m[i];
  }
  for (int64_t k = 0; k < size; ++k) {
    const float* row = x + k * stride;
    float* out_row = out + k * stride;
    for (int64_t i = 0; i < n; ++i) {
      const float e = std::exp(row[i] - m[i]);
      if (!kLog) out_row[i] = e;
      sum[i] += e;
    }
  }
  float factor[kChunk];
  for (int64_t i = 0; i < n; ++i) {
    factor[i] = kLog ? static_cast<float>(std::log(sum[i])) : static_cast<float>(1.0 / sum[i]);
  }
  for (int64_t k = 0; k < size; ++k) {
    const float* row = x + k * stride;
    float* out_row = out + k * stride;
    for (int64_t i = 0; i < n; ++i) {
      out_row[i] = kLog ? (row[i] - m[i]) - factor[i] : out_row[i] * factor[i];
    }
  }
}

template <bool kLog>
Error softmax_impl(const char* op, Span<EValue*> args) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 2, "out"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, reduction::int_arg(op, args, 1, "dim"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  uint32_t dim = 0;
  TERN_RETURN_IF_ERROR(reduction::normalize_dim(op, "dim", raw_dim, x->rank, &dim));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  if (x->numel() == 0) return Error::Ok;
  const reduction::DimSplit s = reduction::split_at_dim(x->shape(), dim);
  const float* in = x->data_as<const float>();
  float* dst = out->data_as<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    const int64_t base = o * s.size * s.inner;
    if (s.inner == 1) {
      softmax_contiguous<kLog>(in + base, dst + base, s.size);
      continue;
    }
    for (int64_t c0 = 0; c0 < s.inner; c0 += kChunk) {
      const int64_t n = s.inner - c0 < kChunk ? s.inner - c0 : kChunk;
      softmax_strided<kLog>(in + base + c0, dst + base + c0, s.size, s.inner, n);
    }
  }
  return Error::Ok;
}

}  // namespace

Error softmax(KernelContext& /*context*/, Span<EValue*> args) {
  return softmax_impl<false>("tern::softmax", args);
}

Error log_softmax(KernelContext& /*context*/, Span<EValue*> args) {
  return softmax_impl<true>("tern::log_softmax", args);
}

}  // namespace portable
}  // namespace tern
