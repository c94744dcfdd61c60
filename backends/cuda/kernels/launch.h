// Host entry points of tern's cuda kernels (backends/cuda/kernels/*.cu). Each enqueues its
// work on `stream` and returns cudaGetLastError() (a launch error; execution errors surface at
// the next synchronisation). None allocates or synchronises, so all may be captured into a
// CUDA graph. Pointers are device pointers the caller keeps alive until the work has run;
// shapes were checked by the blob reader, so the kernels do not re-check them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tern::cuda {

/// Most dims of a broadcast or strided index.
constexpr int kKernelMaxDims = 6;

/// out = a (op) b with b broadcast: the output dims and each operand's element strides per
/// output dim (0 where it broadcasts). b == nullptr: b is `scalar`.
struct BroadcastShape {
  int rank = 0;
  int64_t dims[kKernelMaxDims] = {};
  int64_t a_strides[kKernelMaxDims] = {};
  int64_t b_strides[kKernelMaxDims] = {};
};

/// BinaryOp of cuda_blob_format.h. add/sub: a ± alpha·b.
cudaError_t launch_binary(int op, const float* a, const float* b, float scalar, float alpha,
                          float* out, int64_t n, const BroadcastShape& shape, bool same_shape,
                          cudaStream_t stream);

/// UnaryOp of cuda_blob_format.h; p0, p1: clamp bounds or the pow exponent.
cudaError_t launch_unary(int op, const float* x, float* out, int64_t n, float p0, float p1,
                         cudaStream_t stream);

/// Softmax (or log-softmax) of each of `rows` rows of `cols` floats.
cudaError_t launch_softmax(const float* x, float* out, int64_t rows, int64_t cols, bool log,
                           cudaStream_t stream);

/// Layer norm of each row of `cols`; weight/bias of `cols` floats or null.
cudaError_t launch_layer_norm(const float* x, const float* weight, const float* bias, float* out,
                              int64_t rows, int64_t cols, float eps, cudaStream_t stream);

/// Inference batch norm of x [n, c, inner]; weight/bias may be null.
cudaError_t launch_batch_norm(const float* x, const float* weight, const float* bias,
                              const float* mean, const float* var, float* out, int64_t n,
                              int64_t c, int64_t inner, float eps, cudaStream_t stream);

/// 2-D pooling of x [planes, h, w] (planes = N·C) into out [planes, oh, ow].
struct PoolShape {
  int64_t planes, h, w, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int count_include_pad;  ///< average pooling
  int divisor;            ///< average pooling: 0, or the divisor override
};
cudaError_t launch_max_pool2d(const float* x, float* out, const PoolShape& s, cudaStream_t stream);
cudaError_t launch_avg_pool2d(const float* x, float* out, const PoolShape& s, cudaStream_t stream);
cudaError_t launch_adaptive_avg_pool2d(const float* x, float* out, const PoolShape& s,
                                       cudaStream_t stream);

/// Sum (or mean) over the middle of x [outer, reduce, inner] into out [outer, inner]
/// (double accumulation, as the portable kernel).
cudaError_t launch_reduce(const float* x, float* out, int64_t outer, int64_t reduce,
                          int64_t inner, bool mean, cudaStream_t stream);

/// out[i] = x[offset + sum_d i_d * strides[d]] over out's `rank` dims (rank 0: one element).
cudaError_t launch_strided_copy(const float* x, float* out, int rank, const int64_t* dims,
                                const int64_t* strides, int64_t offset, int64_t n,
                                cudaStream_t stream);

/// One part of a concatenation: out[o, at + j, i] = part[o, j, i] for o < outer, j < part_mid,
/// i < inner, where the output's middle dim is out_mid.
cudaError_t launch_concat_part(const float* part, float* out, int64_t outer, int64_t part_mid,
                               int64_t out_mid, int64_t at, int64_t inner, cudaStream_t stream);

/// out[r, :] = weight[indices[r], :] for r < rows (D floats each); an index outside [0, v)
/// writes zeros and sets *error_flag to 1.
cudaError_t launch_embedding(const float* weight, const void* indices, bool indices_i64,
                             float* out, int64_t rows, int64_t v, int64_t d, int* error_flag,
                             cudaStream_t stream);

/// im2col of one image x [c, h, w] into col [c·kh·kw, oh·ow] (zeros where the window is in the
/// padding).
struct ConvShape {
  int64_t c, h, w, o, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw, groups;
};
cudaError_t launch_im2col(const float* x, float* col, const ConvShape& s, cudaStream_t stream);
/// Depthwise convolution (C/g = 1, O = C·M) of x [n, c, h, w], bias [o] or null, then the
/// activation (Activation of cuda_blob_format.h: 0 none, 1 relu).
cudaError_t launch_depthwise_conv2d(const float* x, const float* w, const float* bias, float* out,
                                    int64_t n, const ConvShape& s, int activation,
                                    cudaStream_t stream);
/// out [n, c, inner] += bias[c] (bias may be null), then the activation (0 none, 1 relu).
cudaError_t launch_bias_activation(float* out, const float* bias, int64_t n, int64_t c,
                                   int64_t inner, int activation, cudaStream_t stream);

/// Attention weights in place: each row (b, i) of scores [batch, l, s] scaled, masked (the
/// mask read at b_outer·st[0] + b_inner·st[1] + i·st[2] + j·st[3], batch = outer·inner;
/// mask_kind 1 bool (false: -inf), 2 additive), causal (j > i: -inf), then softmax; a row with
/// nothing attended becomes zeros.
struct AttentionMask {
  int kind = 0;
  const void* data = nullptr;
  int64_t inner = 1;
  int64_t strides[4] = {};
};
cudaError_t launch_attention_softmax(float* scores, int64_t batch, int64_t l, int64_t s,
                                     float scale, bool causal, const AttentionMask& mask,
                                     cudaStream_t stream);

/// Whether this build has kernels the current device can run (cudaFuncGetAttributes of one
/// kernel): cudaSuccess, or the error (e.g. cudaErrorNoKernelImageForDevice).
cudaError_t probe_kernel_image();

}  // namespace tern::cuda
