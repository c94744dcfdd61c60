// The cuda backend's dispatch table: every blob op and the kernels or cuBLASLt products it
// runs. The one file to read to see what the backend executes.
#include <cstdio>
#include <cstring>

#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/runtime/cuda_delegate.h"

namespace tern::cuda {
namespace {

/// A value's device address; null for an absent (kNoValue) input.
const void* fptr(const CudaDelegate& d, uint32_t v) {
  return v == kNoValue ? nullptr : value_ptr(d, v);
}
void* out_ptr(const CudaDelegate& d, const BlobNode& n) { return value_ptr(d, n.output); }
const BlobValue& val(const CudaDelegate& d, uint32_t v) { return d.plan.values[v]; }
/// The storage type of the blob's float values.
FloatType float_type(const CudaDelegate& d) {
  return static_cast<FloatType>(compute_storage(d.plan.header.compute_dtype));
}
int elem_size(const BlobValue& v) { return static_cast<int>(value_dtype_bytes(v.dtype)); }

/// Element strides of `v` over the output's dims `o` (right-aligned; 0 where a dim broadcasts).
void broadcast_strides(const BlobValue& v, const BlobValue& o, int64_t* strides) {
  int64_t stride = 1;
  for (int dd = static_cast<int>(o.rank) - 1; dd >= 0; --dd) {
    const int vd = dd - static_cast<int>(o.rank - v.rank);
    const int64_t size = vd >= 0 ? static_cast<int64_t>(v.dims[vd]) : 1;
    strides[dd] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

/// The broadcast of up to three operands (kNoValue: a scalar, strides 0) to node n's output.
Broadcast3 broadcast3(const CudaDelegate& d, const BlobNode& n, uint32_t count) {
  const BlobValue& o = val(d, n.output);
  Broadcast3 s;
  s.rank = static_cast<int>(o.rank);
  for (uint32_t dd = 0; dd < o.rank; ++dd) s.dims[dd] = static_cast<int64_t>(o.dims[dd]);
  for (uint32_t k = 0; k < count; ++k) {
    if (n.inputs[k] != kNoValue) broadcast_strides(val(d, n.inputs[k]), o, s.strides[k]);
  }
  return s;
}

/// GEMM shapes of node `n` (a Gemm, a Conv2d's per-image product, Attention's two).
bool gemm_shapes(const CudaDelegate& d, const BlobNode& n, GemmShape* first, GemmShape* second) {
  switch (static_cast<NodeOp>(n.op)) {
    case NodeOp::Gemm: {
      const int64_t m = n.params[0], nn = n.params[1], k = n.params[2];
      const bool wt = n.params[4] != 0;
      GemmShape& g = *first;
      g.m = nn;
      g.n = m;
      g.k = k;
      g.transpose_a = wt;
      g.lda = wt ? k : nn;
      g.ldb = k;
      g.ldd = nn;
      g.batch = n.params[3];
      g.stride_a = n.params[6];
      g.stride_b = n.params[5];
      g.stride_d = m * nn;
      g.bias = n.inputs[2] != kNoValue;
      g.activation = static_cast<int>(n.params[7]);
      return true;
    }
    case NodeOp::Conv2d: {
      const BlobValue &x = val(d, n.inputs[0]), &w = val(d, n.inputs[1]), &o = val(d, n.output);
      const int64_t groups = n.params[6];
      if (static_cast<int64_t>(x.dims[1]) == groups) return false;  // depthwise: direct kernel
      // Output pixels per image and taps per output channel (rank 3: a 1-D convolution).
      const int64_t p = static_cast<int64_t>(value_numel(o) / (o.dims[0] * o.dims[1]));
      const int64_t og = static_cast<int64_t>(w.dims[0]) / groups;
      const int64_t kc = static_cast<int64_t>(value_numel(w) / w.dims[0]);
      GemmShape& g = *first;
      g.m = p;
      g.n = og;
      g.k = kc;
      g.lda = p;
      g.ldb = kc;
      g.ldd = p;
      g.batch = groups;
      g.stride_a = kc * p;
      g.stride_b = og * kc;
      g.stride_d = og * p;
      return true;
    }
    case NodeOp::Attention: {
      const int64_t b = n.params[0], l = n.params[1], s = n.params[2], e = n.params[3],
                    ev = n.params[4];
      GemmShape& g = *first;  // scores [b, l, s] = q k^T
      g.m = s;
      g.n = l;
      g.k = e;
      g.transpose_a = true;
      g.lda = e;
      g.ldb = e;
      g.ldd = s;
      g.batch = b;
      g.stride_a = s * e;
      g.stride_b = l * e;
      g.stride_d = l * s;
      GemmShape& h = *second;  // out [b, l, ev] = p v
      h.m = ev;
      h.n = l;
      h.k = s;
      h.lda = ev;
      h.ldb = s;
      h.ldd = ev;
      h.batch = b;
      h.stride_a = s * ev;
      h.stride_b = l * s;
      h.stride_d = l * ev;
      return true;
    }
    default:
      return false;
  }
}

Error launch_failed(uint32_t index, const BlobNode& n, const char* what, const char* why) {
  return set_error_message(Error::DelegateExecutionFailed,
                           "cuda backend: node %u (%s): %s failed: %s", index,
                           node_op_name(n.op), what, why);
}

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    const cudaError_t tern_e__ = (call);                                       \
    if (tern_e__ != cudaSuccess) {                                             \
      return launch_failed(index, n, #call, cudaGetErrorString(tern_e__));     \
    }                                                                          \
  } while (0)
#define LT_OK(call)                                                             \
  do {                                                                          \
    const cublasStatus_t tern_s__ = (call);                                     \
    if (tern_s__ != CUBLAS_STATUS_SUCCESS) {                                    \
      return launch_failed(index, n, "cublasLtMatmul", GemmPlan::status_string(tern_s__)); \
    }                                                                           \
  } while (0)

Error run_conv(CudaDelegate& d, uint32_t index, const BlobNode& n) {
  const BlobValue &xv = val(d, n.inputs[0]), &wv = val(d, n.inputs[1]), &ov = val(d, n.output);
  // A rank-3 (1-D) convolution is one of height 1.
  auto dims4 = [](const BlobValue& v, int64_t out[4]) {
    const bool one_d = v.rank == 3;
    out[0] = static_cast<int64_t>(v.dims[0]);
    out[1] = static_cast<int64_t>(v.dims[1]);
    out[2] = one_d ? 1 : static_cast<int64_t>(v.dims[2]);
    out[3] = static_cast<int64_t>(one_d ? v.dims[2] : v.dims[3]);
  };
  int64_t x[4], w[4], o[4];
  dims4(xv, x);
  dims4(wv, w);
  dims4(ov, o);
  ConvShape s{};
  s.c = x[1];
  s.h = x[2];
  s.w = x[3];
  s.o = o[1];
  s.oh = o[2];
  s.ow = o[3];
  s.kh = static_cast<int>(w[2]);
  s.kw = static_cast<int>(w[3]);
  s.sh = static_cast<int>(n.params[0]);
  s.sw = static_cast<int>(n.params[1]);
  s.ph = static_cast<int>(n.params[2]);
  s.pw = static_cast<int>(n.params[3]);
  s.dh = static_cast<int>(n.params[4]);
  s.dw = static_cast<int>(n.params[5]);
  s.groups = static_cast<int>(n.params[6]);
  const int activation = static_cast<int>(n.params[7]);
  const FloatType ft = float_type(d);
  const size_t es = value_dtype_bytes(xv.dtype);
  const uint8_t* xp = static_cast<const uint8_t*>(fptr(d, n.inputs[0]));
  const void* wp = fptr(d, n.inputs[1]);
  const void* bias = fptr(d, n.inputs[2]);
  uint8_t* out = static_cast<uint8_t*>(out_ptr(d, n));
  const int64_t batch = x[0];
  if (s.c == s.groups) {
    CUDA_OK(launch_depthwise_conv2d(ft, xp, wp, bias, out, batch, s, activation, d.stream));
    return Error::Ok;
  }
  const bool pointwise = s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 &&
                         s.pw == 0;
  const int64_t in_image = s.c * s.h * s.w, out_image = s.o * s.oh * s.ow;
  void* col = d.buffers.workspace;
  for (int64_t img = 0; img < batch; ++img) {
    const void* a = xp + static_cast<size_t>(img * in_image) * es;
    if (!pointwise) {
      CUDA_OK(launch_im2col(ft, a, col, s, d.stream));
      a = col;
    }
    LT_OK(d.gemms[2 * index].run(d.lt, a, wp, nullptr, out + static_cast<size_t>(img * out_image) * es,
                                 1.0f, d.buffers.lt_workspace, kLtWorkspaceBytes, d.stream));
  }
  if (bias != nullptr || activation != 0) {
    CUDA_OK(launch_bias_activation(ft, out, bias, batch, s.o, s.oh * s.ow, activation,
                                   d.stream));
  }
  return Error::Ok;
}

Error run_attention(CudaDelegate& d, uint32_t index, const BlobNode& n) {
  const int64_t b = n.params[0], l = n.params[1], s = n.params[2];
  void* scores = d.buffers.workspace;
  LT_OK(d.gemms[2 * index].run(d.lt, fptr(d, n.inputs[1]), fptr(d, n.inputs[0]), nullptr, scores,
                               1.0f, d.buffers.lt_workspace, kLtWorkspaceBytes, d.stream));
  AttentionMask mask;
  mask.kind = static_cast<int>(n.params[6]);
  mask.data = n.inputs[3] == kNoValue ? nullptr : value_ptr(d, n.inputs[3]);
  mask.inner = n.params[7];
  for (int i = 0; i < 4; ++i) mask.strides[i] = n.params[8 + i];
  CUDA_OK(launch_attention_softmax(float_type(d), scores, b, l, s, n.fparams[0], n.params[5] != 0, mask,
                                   d.stream));
  LT_OK(d.gemms[2 * index + 1].run(d.lt, fptr(d, n.inputs[2]), scores, nullptr, out_ptr(d, n),
                                   1.0f, d.buffers.lt_workspace, kLtWorkspaceBytes, d.stream));
  return Error::Ok;
}

Error run_binary(CudaDelegate& d, uint32_t index, const BlobNode& n) {
  const BlobValue& o = val(d, n.output);
  const BlobValue& a = val(d, n.inputs[0]);
  const bool has_b = n.inputs[1] != kNoValue;
  BroadcastShape shape;
  shape.rank = static_cast<int>(o.rank);
  for (uint32_t dd = 0; dd < o.rank; ++dd) shape.dims[dd] = static_cast<int64_t>(o.dims[dd]);
  auto same_dims = [&](const BlobValue& v) {
    return v.rank == o.rank && std::memcmp(v.dims, o.dims, sizeof(o.dims)) == 0;
  };
  bool same = same_dims(a);
  broadcast_strides(a, o, shape.a_strides);
  if (has_b) {
    const BlobValue& b = val(d, n.inputs[1]);
    same = same && same_dims(b);
    broadcast_strides(b, o, shape.b_strides);
  }
  CUDA_OK(launch_binary(float_type(d), static_cast<int>(n.params[0]), fptr(d, n.inputs[0]),
                        fptr(d, n.inputs[1]), n.fparams[1], n.fparams[0], out_ptr(d, n),
                        static_cast<int64_t>(value_numel(o)), shape, same, d.stream));
  return Error::Ok;
}

Error run_conv_transpose(CudaDelegate& d, uint32_t index, const BlobNode& n) {
  const BlobValue &x = val(d, n.inputs[0]), &w = val(d, n.inputs[1]), &o = val(d, n.output);
  ConvShape s{};
  s.c = static_cast<int64_t>(x.dims[1]);
  s.h = static_cast<int64_t>(x.dims[2]);
  s.w = static_cast<int64_t>(x.dims[3]);
  s.o = static_cast<int64_t>(o.dims[1]);
  s.oh = static_cast<int64_t>(o.dims[2]);
  s.ow = static_cast<int64_t>(o.dims[3]);
  s.kh = static_cast<int>(w.dims[2]);
  s.kw = static_cast<int>(w.dims[3]);
  s.sh = static_cast<int>(n.params[0]);
  s.sw = static_cast<int>(n.params[1]);
  s.ph = static_cast<int>(n.params[2]);
  s.pw = static_cast<int>(n.params[3]);
  s.oph = static_cast<int>(n.params[4]);
  s.opw = static_cast<int>(n.params[5]);
  s.dh = static_cast<int>(n.params[6]);
  s.dw = static_cast<int>(n.params[7]);
  s.groups = static_cast<int>(n.params[8]);
  CUDA_OK(launch_conv_transpose2d(float_type(d), fptr(d, n.inputs[0]), fptr(d, n.inputs[1]),
                                  fptr(d, n.inputs[2]), out_ptr(d, n),
                                  static_cast<int64_t>(x.dims[0]), s, d.stream));
  return Error::Ok;
}

Error run_node(CudaDelegate& d, uint32_t index) {
  const BlobNode& n = d.plan.nodes[index];
  const BlobValue& o = val(d, n.output);
  const int64_t count = static_cast<int64_t>(value_numel(o));
  const FloatType ft = float_type(d);
  switch (static_cast<NodeOp>(n.op)) {
    case NodeOp::Gemm:
      LT_OK(d.gemms[2 * index].run(d.lt, fptr(d, n.inputs[1]), fptr(d, n.inputs[0]),
                                   fptr(d, n.inputs[2]), out_ptr(d, n), n.fparams[0],
                                   d.buffers.lt_workspace, kLtWorkspaceBytes, d.stream));
      return Error::Ok;
    case NodeOp::Conv2d:
      return run_conv(d, index, n);
    case NodeOp::Binary:
      return run_binary(d, index, n);
    case NodeOp::Unary:
      CUDA_OK(launch_unary(ft, static_cast<int>(n.params[0]), fptr(d, n.inputs[0]), out_ptr(d, n),
                           count, n.fparams[0], n.fparams[1], d.stream));
      return Error::Ok;
    case NodeOp::Softmax: {
      const int64_t cols = static_cast<int64_t>(o.dims[o.rank - 1]);
      CUDA_OK(launch_softmax(ft, fptr(d, n.inputs[0]), out_ptr(d, n), count / cols, cols,
                             n.params[0] != 0, d.stream));
      return Error::Ok;
    }
    case NodeOp::LayerNorm:
      CUDA_OK(launch_layer_norm(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]), fptr(d, n.inputs[2]),
                                out_ptr(d, n), count / n.params[0], n.params[0], n.fparams[0],
                                d.stream));
      return Error::Ok;
    case NodeOp::BatchNorm: {
      const int64_t c = static_cast<int64_t>(o.dims[1]);
      const int64_t batch = static_cast<int64_t>(o.dims[0]);
      CUDA_OK(launch_batch_norm(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]), fptr(d, n.inputs[2]),
                                fptr(d, n.inputs[3]), fptr(d, n.inputs[4]), out_ptr(d, n), batch,
                                c, count / (batch * c), n.fparams[0], d.stream));
      return Error::Ok;
    }
    case NodeOp::MaxPool2d:
    case NodeOp::AvgPool2d:
    case NodeOp::AdaptiveAvgPool2d: {
      const BlobValue& x = val(d, n.inputs[0]);
      PoolShape s{};
      s.planes = static_cast<int64_t>(x.dims[0] * x.dims[1]);
      s.h = static_cast<int64_t>(x.dims[2]);
      s.w = static_cast<int64_t>(x.dims[3]);
      s.oh = static_cast<int64_t>(o.dims[2]);
      s.ow = static_cast<int64_t>(o.dims[3]);
      s.kh = static_cast<int>(n.params[0]);
      s.kw = static_cast<int>(n.params[1]);
      s.sh = static_cast<int>(n.params[2]);
      s.sw = static_cast<int>(n.params[3]);
      s.ph = static_cast<int>(n.params[4]);
      s.pw = static_cast<int>(n.params[5]);
      s.dh = static_cast<int>(n.params[6]);
      s.dw = static_cast<int>(n.params[7]);
      s.count_include_pad = static_cast<int>(n.params[8]);
      s.divisor = static_cast<int>(n.params[9]);
      const void* xp = fptr(d, n.inputs[0]);
      if (n.op == static_cast<uint32_t>(NodeOp::MaxPool2d)) {
        CUDA_OK(launch_max_pool2d(ft, xp, out_ptr(d, n), s, d.stream));
      } else if (n.op == static_cast<uint32_t>(NodeOp::AvgPool2d)) {
        CUDA_OK(launch_avg_pool2d(ft, xp, out_ptr(d, n), s, d.stream));
      } else {
        CUDA_OK(launch_adaptive_avg_pool2d(ft, xp, out_ptr(d, n), s, d.stream));
      }
      return Error::Ok;
    }
    case NodeOp::Reduce:
      CUDA_OK(launch_reduce(ft, fptr(d, n.inputs[0]), out_ptr(d, n), n.params[0], n.params[1],
                            n.params[2], n.params[3] != 0, d.stream));
      return Error::Ok;
    case NodeOp::StridedCopy: {
      int64_t dims[kKernelMaxDims] = {};
      for (uint32_t dd = 0; dd < o.rank; ++dd) dims[dd] = static_cast<int64_t>(o.dims[dd]);
      CUDA_OK(launch_strided_copy(elem_size(o), fptr(d, n.inputs[0]), out_ptr(d, n), static_cast<int>(o.rank),
                                  dims, n.params + 1, n.params[0], count, d.stream));
      return Error::Ok;
    }
    case NodeOp::Concat: {
      const uint32_t dim = static_cast<uint32_t>(n.params[0]);
      int64_t outer = 1, inner = 1;
      for (uint32_t dd = 0; dd < dim; ++dd) outer *= static_cast<int64_t>(o.dims[dd]);
      for (uint32_t dd = dim + 1; dd < o.rank; ++dd) inner *= static_cast<int64_t>(o.dims[dd]);
      int64_t at = 0;
      for (uint32_t i = 0; i < n.num_inputs; ++i) {
        const int64_t mid = static_cast<int64_t>(val(d, n.inputs[i]).dims[dim]);
        CUDA_OK(launch_concat_part(elem_size(o), fptr(d, n.inputs[i]), out_ptr(d, n), outer, mid,
                                   static_cast<int64_t>(o.dims[dim]), at, inner, d.stream));
        at += mid;
      }
      return Error::Ok;
    }
    case NodeOp::Embedding: {
      const BlobValue &w = val(d, n.inputs[0]), &idx = val(d, n.inputs[1]);
      CUDA_OK(launch_embedding(ft, fptr(d, n.inputs[0]), value_ptr(d, n.inputs[1]),
                               idx.dtype == static_cast<uint32_t>(ValueDType::I64), out_ptr(d, n),
                               static_cast<int64_t>(value_numel(idx)),
                               static_cast<int64_t>(w.dims[0]), static_cast<int64_t>(w.dims[1]),
                               d.buffers.error_flag, d.stream));
      return Error::Ok;
    }
    case NodeOp::Attention:
      return run_attention(d, index, n);
    case NodeOp::GroupNorm: {
      const int64_t batch = static_cast<int64_t>(o.dims[0]), c = static_cast<int64_t>(o.dims[1]);
      CUDA_OK(launch_group_norm(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]),
                                fptr(d, n.inputs[2]), out_ptr(d, n), batch, c,
                                count / (batch * c), n.params[0], n.fparams[0], d.stream));
      return Error::Ok;
    }
    case NodeOp::RmsNorm:
      CUDA_OK(launch_rms_norm(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]), out_ptr(d, n),
                              count / n.params[0], n.params[0], n.fparams[0], d.stream));
      return Error::Ok;
    case NodeOp::Upsample2d: {
      const BlobValue& x = val(d, n.inputs[0]);
      CUDA_OK(launch_upsample2d(ft, fptr(d, n.inputs[0]), out_ptr(d, n),
                                static_cast<int64_t>(x.dims[0] * x.dims[1]),
                                static_cast<int64_t>(x.dims[2]), static_cast<int64_t>(x.dims[3]),
                                static_cast<int64_t>(o.dims[2]), static_cast<int64_t>(o.dims[3]),
                                n.params[0] == 1, n.params[1] == 1, n.fparams[0], n.fparams[1],
                                d.stream));
      return Error::Ok;
    }
    case NodeOp::Pad: {
      const BlobValue& x = val(d, n.inputs[0]);
      int64_t in_dims[kKernelMaxDims] = {}, out_dims[kKernelMaxDims] = {};
      for (uint32_t dd = 0; dd < o.rank; ++dd) {
        in_dims[dd] = static_cast<int64_t>(x.dims[dd]);
        out_dims[dd] = static_cast<int64_t>(o.dims[dd]);
      }
      CUDA_OK(launch_pad(ft, fptr(d, n.inputs[0]), out_ptr(d, n), static_cast<int>(o.rank),
                         in_dims, out_dims, n.params + 1, n.params[0] == 1, n.fparams[0], count,
                         d.stream));
      return Error::Ok;
    }
    case NodeOp::ConvTranspose2d:
      return run_conv_transpose(d, index, n);
    case NodeOp::Where:
      CUDA_OK(launch_where(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]), fptr(d, n.inputs[2]),
                           n.fparams[0], n.fparams[1], out_ptr(d, n), count, broadcast3(d, n, 3),
                           d.stream));
      return Error::Ok;
    case NodeOp::Compare:
      CUDA_OK(launch_compare(static_cast<int>(n.params[0]),
                             static_cast<int>(val(d, n.inputs[0]).dtype), fptr(d, n.inputs[0]),
                             fptr(d, n.inputs[1]), n.fparams[0],
                             static_cast<bool*>(out_ptr(d, n)), count, broadcast3(d, n, 2),
                             d.stream));
      return Error::Ok;
    case NodeOp::Cast:
      CUDA_OK(launch_cast(static_cast<int>(val(d, n.inputs[0]).dtype), static_cast<int>(o.dtype),
                          fptr(d, n.inputs[0]), out_ptr(d, n), count, d.stream));
      return Error::Ok;
    case NodeOp::IndexSelect: {
      const BlobValue& idx = val(d, n.inputs[1]);
      CUDA_OK(launch_index_select(elem_size(o), fptr(d, n.inputs[0]), fptr(d, n.inputs[1]),
                                  idx.dtype == static_cast<uint32_t>(ValueDType::I64),
                                  out_ptr(d, n), n.params[0], n.params[1], n.params[2],
                                  static_cast<int64_t>(idx.dims[0]), d.buffers.error_flag,
                                  d.stream));
      return Error::Ok;
    }
    case NodeOp::GroupedMatmul: {
      const BlobValue &x = val(d, n.inputs[0]), &w = val(d, n.inputs[1]),
                      &ends = val(d, n.inputs[2]);
      CUDA_OK(launch_grouped_matmul(ft, fptr(d, n.inputs[0]), fptr(d, n.inputs[1]),
                                    value_ptr(d, n.inputs[2]),
                                    ends.dtype == static_cast<uint32_t>(ValueDType::I64),
                                    out_ptr(d, n), static_cast<int64_t>(x.dims[0]),
                                    static_cast<int64_t>(x.dims[1]),
                                    static_cast<int64_t>(w.dims[2]),
                                    static_cast<int64_t>(w.dims[0]), d.buffers.error_flag,
                                    d.stream));
      return Error::Ok;
    }
    case NodeOp::QuantGroupedLinear: {
      const BlobValue &w = val(d, n.inputs[1]), &ends = val(d, n.inputs[2]);
      QuantDecode q;
      if (!make_quant_decode(n.params, w.dims[0], w.dims[1], n.fparams[0], &q, nullptr)) {
        return launch_failed(index, n, "quantized weight", "scheme refused");  // reader checked
      }
      CUDA_OK(launch_quant_grouped_linear(
          static_cast<const float*>(fptr(d, n.inputs[0])),
          static_cast<const uint8_t*>(value_ptr(d, n.inputs[1])), value_ptr(d, n.inputs[2]),
          ends.dtype == static_cast<uint32_t>(ValueDType::I64), static_cast<float*>(out_ptr(d, n)),
          n.params[0], n.params[1], n.params[2], static_cast<int64_t>(ends.dims[0]), q,
          d.buffers.error_flag, d.stream));
      return Error::Ok;
    }
    case NodeOp::QuantLinear:
    case NodeOp::QuantEmbedding: {
      const bool linear = n.op == static_cast<uint32_t>(NodeOp::QuantLinear);
      const uint32_t w_slot = linear ? 1 : 0;
      const BlobValue& w = val(d, n.inputs[w_slot]);
      QuantDecode q;
      if (!make_quant_decode(n.params, w.dims[0], w.dims[1], n.fparams[0], &q, nullptr)) {
        return launch_failed(index, n, "quantized weight", "scheme refused");  // reader checked
      }
      const uint8_t* wp = static_cast<const uint8_t*>(value_ptr(d, n.inputs[w_slot]));
      if (linear) {
        CUDA_OK(launch_quant_linear(static_cast<const float*>(fptr(d, n.inputs[0])), wp,
                                    static_cast<const float*>(fptr(d, n.inputs[2])),
                                    static_cast<float*>(out_ptr(d, n)), n.params[0], n.params[1],
                                    n.params[2], q, d.stream));
      } else {
        const BlobValue& idx = val(d, n.inputs[1]);
        CUDA_OK(launch_quant_embedding(wp, value_ptr(d, n.inputs[1]),
                                       idx.dtype == static_cast<uint32_t>(ValueDType::I64),
                                       static_cast<float*>(out_ptr(d, n)), n.params[2],
                                       n.params[0], n.params[1], q, d.buffers.error_flag,
                                       d.stream));
      }
      return Error::Ok;
    }
  }
  return launch_failed(index, n, "dispatch", "unknown op");
}

}  // namespace

Error plan_gemms(CudaDelegate& d) {
  for (uint32_t i = 0; i < d.plan.header.num_nodes; ++i) {
    const BlobNode& n = d.plan.nodes[i];
    GemmShape first, second;
    if (!gemm_shapes(d, n, &first, &second)) continue;
    first.dtype = second.dtype = static_cast<int>(compute_storage(d.plan.header.compute_dtype));
    char what[64];
    std::snprintf(what, sizeof(what), "node %u (%s)", i, node_op_name(n.op));
    TERN_RETURN_IF_ERROR(d.gemms[2 * i].setup(d.lt, first, kLtWorkspaceBytes, what));
    if (second.m > 0) {
      TERN_RETURN_IF_ERROR(d.gemms[2 * i + 1].setup(d.lt, second, kLtWorkspaceBytes, what));
    }
  }
  return Error::Ok;
}

Error enqueue_nodes(CudaDelegate& d) {
  if (d.uses_error_flag) {
    const cudaError_t e = cudaMemsetAsync(d.buffers.error_flag, 0, sizeof(int), d.stream);
    if (e != cudaSuccess) {
      return set_error_message(Error::DelegateExecutionFailed,
                               "cuda backend: resetting the error flag failed: %s",
                               cudaGetErrorString(e));
    }
  }
  for (uint32_t i = 0; i < d.plan.header.num_nodes; ++i) TERN_RETURN_IF_ERROR(run_node(d, i));
  return Error::Ok;
}

}  // namespace tern::cuda
