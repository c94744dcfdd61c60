// Host entry points of tern's cuda kernels (backends/cuda/kernels/*.cu). Each enqueues its
// work on `stream` and returns cudaGetLastError() (a launch error; execution errors surface at
// the next synchronisation). None allocates or synchronises, so all may be captured into a
// CUDA graph. Pointers are device pointers the caller keeps alive until the work has run;
// shapes were checked by the blob reader, so the kernels do not re-check them.
//
// Float tensors are stored as `FloatType` (f32, or f16/bf16 in a 16-bit blob: every float
// operand of one call has that type) and computed in f32. Data movement (strided copy, concat,
// index_select) goes by element size, so it moves every dtype.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/quant_decode.h"

namespace tern::cuda {

/// Most dims of a broadcast or strided index.
constexpr int kKernelMaxDims = 6;

/// Storage of float tensors: the ValueDType codes 0 (f32), 1 (f16), 2 (bf16).
enum class FloatType : int { F32 = 0, F16 = 1, BF16 = 2 };

/// out = a (op) b with b broadcast: the output dims and each operand's element strides per
/// output dim (0 where it broadcasts). b == nullptr: b is `scalar`.
struct BroadcastShape {
  int rank = 0;
  int64_t dims[kKernelMaxDims] = {};
  int64_t a_strides[kKernelMaxDims] = {};
  int64_t b_strides[kKernelMaxDims] = {};
};

/// Up to three operands broadcast to an output (where, compare): strides[k] of operand k.
struct Broadcast3 {
  int rank = 0;
  int64_t dims[kKernelMaxDims] = {};
  int64_t strides[3][kKernelMaxDims] = {};
};

/// BinaryOp of cuda_blob_format.h. add/sub: a ± alpha·b.
cudaError_t launch_binary(FloatType ft, int op, const void* a, const void* b, float scalar,
                          float alpha, void* out, int64_t n, const BroadcastShape& shape,
                          bool same_shape, cudaStream_t stream);

/// UnaryOp of cuda_blob_format.h; p0, p1: clamp bounds or the pow exponent.
cudaError_t launch_unary(FloatType ft, int op, const void* x, void* out, int64_t n, float p0,
                         float p1, cudaStream_t stream);

/// Softmax (or log-softmax) of each of `rows` rows of `cols` floats.
cudaError_t launch_softmax(FloatType ft, const void* x, void* out, int64_t rows, int64_t cols,
                           bool log, cudaStream_t stream);

/// Layer norm of each row of `cols`; weight/bias of `cols` floats or null.
cudaError_t launch_layer_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              void* out, int64_t rows, int64_t cols, float eps,
                              cudaStream_t stream);

/// RMS norm of each row of `cols`: x / sqrt(mean(x²) + eps) · weight (weight may be null).
cudaError_t launch_rms_norm(FloatType ft, const void* x, const void* weight, void* out,
                            int64_t rows, int64_t cols, float eps, cudaStream_t stream);

/// Group norm of x [n, c, inner] in `groups` groups of c/groups channels; weight/bias [c] or
/// null.
cudaError_t launch_group_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              void* out, int64_t n, int64_t c, int64_t inner, int64_t groups,
                              float eps, cudaStream_t stream);

/// Inference batch norm of x [n, c, inner]; weight/bias may be null.
cudaError_t launch_batch_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              const void* mean, const void* var, void* out, int64_t n, int64_t c,
                              int64_t inner, float eps, cudaStream_t stream);

/// 2-D pooling of x [planes, h, w] (planes = N·C) into out [planes, oh, ow].
struct PoolShape {
  int64_t planes, h, w, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int count_include_pad;  ///< average pooling
  int divisor;            ///< average pooling: 0, or the divisor override
};
cudaError_t launch_max_pool2d(FloatType ft, const void* x, void* out, const PoolShape& s,
                              cudaStream_t stream);
cudaError_t launch_avg_pool2d(FloatType ft, const void* x, void* out, const PoolShape& s,
                              cudaStream_t stream);
cudaError_t launch_adaptive_avg_pool2d(FloatType ft, const void* x, void* out,
                                       const PoolShape& s, cudaStream_t stream);

/// Nearest (bilinear false) or bilinear upsampling of x [planes, h, w] into out [planes, oh,
/// ow] with the source steps step_h, step_w (the portable kernels' index rules).
cudaError_t launch_upsample2d(FloatType ft, const void* x, void* out, int64_t planes, int64_t h,
                              int64_t w, int64_t oh, int64_t ow, bool bilinear,
                              bool align_corners, float step_h, float step_w,
                              cudaStream_t stream);

/// Sum (or mean) over the middle of x [outer, reduce, inner] into out [outer, inner]
/// (double accumulation, as the portable kernel).
cudaError_t launch_reduce(FloatType ft, const void* x, void* out, int64_t outer, int64_t reduce,
                          int64_t inner, bool mean, cudaStream_t stream);

/// out[i] = x[offset + sum_d i_d * strides[d]] over out's `rank` dims (rank 0: one element),
/// elements of `elem_size` bytes (1, 2, 4 or 8).
cudaError_t launch_strided_copy(int elem_size, const void* x, void* out, int rank,
                                const int64_t* dims, const int64_t* strides, int64_t offset,
                                int64_t n, cudaStream_t stream);

/// One part of a concatenation: out[o, at + j, i] = part[o, j, i] for o < outer, j < part_mid,
/// i < inner, where the output's middle dim is out_mid; elements of `elem_size` bytes.
cudaError_t launch_concat_part(int elem_size, const void* part, void* out, int64_t outer,
                               int64_t part_mid, int64_t out_mid, int64_t at, int64_t inner,
                               cudaStream_t stream);

/// out[o, j, i] = x[o, index[j], i] (x [outer, dim, inner], `count` indices); an index outside
/// [0, dim) writes zeros and sets kErrorIndex in *error_flag. Elements of `elem_size` bytes.
cudaError_t launch_index_select(int elem_size, const void* x, const void* index, bool index_i64,
                                void* out, int64_t outer, int64_t dim, int64_t inner,
                                int64_t count, int* error_flag, cudaStream_t stream);

/// Constant (value) or reflect padding of x into out, both of `rank` dims; before[d] is the
/// padding before dim d (negative: cropped).
cudaError_t launch_pad(FloatType ft, const void* x, void* out, int rank, const int64_t* in_dims,
                       const int64_t* out_dims, const int64_t* before, bool reflect, float value,
                       int64_t n, cudaStream_t stream);

/// out[r, :] = weight[indices[r], :] for r < rows (D floats each); an index outside [0, v)
/// writes zeros and sets kErrorIndex in *error_flag.
cudaError_t launch_embedding(FloatType ft, const void* weight, const void* indices,
                             bool indices_i64, void* out, int64_t rows, int64_t v, int64_t d,
                             int* error_flag, cudaStream_t stream);

/// A mixture of experts' products: out[r, :] = x[r, :] · w[e] (x [s, k], w [groups, k, n],
/// out [s, n]) for the group e whose rows [ends[e - 1], ends[e]) hold r; rows at or after the
/// last end are zeros. `ends` (i64 or i32, [groups]) is read on the device; ends that go
/// backwards or past s set kErrorGroupEnds in *error_flag.
cudaError_t launch_grouped_matmul(FloatType ft, const void* x, const void* w, const void* ends,
                                  bool ends_i64, void* out, int64_t s, int64_t k, int64_t n,
                                  int64_t groups, int* error_flag, cudaStream_t stream);

/// The same with nf4 / fp8 experts: out[r, c] = x[r, :] · dequant(w)[e n + c, :], w the
/// quantized [groups · n, k] in its packed buffer; f32.
cudaError_t launch_quant_grouped_linear(const float* x, const uint8_t* w, const void* ends,
                                        bool ends_i64, float* out, int64_t s, int64_t n,
                                        int64_t k, int64_t groups, const QuantDecode& q,
                                        int* error_flag, cudaStream_t stream);

/// Rows of x up to which a quantized linear runs as a GEMV (one pass over the weight).
constexpr int64_t kQuantGemvMaxRows = 4;

/// out [m, n] = x [m, k] · dequant(w)^T + bias (bias [n] or null), w the quantized weight
/// [n, k] in its packed buffer (quant_decode.h); f32.
cudaError_t launch_quant_linear(const float* x, const uint8_t* w, const float* bias, float* out,
                                int64_t m, int64_t n, int64_t k, const QuantDecode& q,
                                cudaStream_t stream);

/// out[t, :] = dequant(w)[indices[t], :] for t < count (D floats each), w [v, d] quantized; an
/// index outside [0, v) writes zeros and sets kErrorIndex in *error_flag.
cudaError_t launch_quant_embedding(const uint8_t* w, const void* indices, bool indices_i64,
                                   float* out, int64_t count, int64_t v, int64_t d,
                                   const QuantDecode& q, int* error_flag, cudaStream_t stream);

/// out = cond ? a : b over the broadcast shape `s` (operands cond, a, b); a/b null: the
/// scalars.
cudaError_t launch_where(FloatType ft, const void* cond, const void* a, const void* b,
                         float scalar_a, float scalar_b, void* out, int64_t n,
                         const Broadcast3& s, cudaStream_t stream);

/// out (bool) = a (CompareOp op) b over the broadcast shape `s` (operands a, b); a and b of
/// ValueDType `dtype` (b null: the scalar).
cudaError_t launch_compare(int op, int dtype, const void* a, const void* b, float scalar,
                           bool* out, int64_t n, const Broadcast3& s, cudaStream_t stream);

/// out[i] = x[i] converted from ValueDType `from` to `to` (float -> int truncates, -> bool is
/// != 0).
cudaError_t launch_cast(int from, int to, const void* x, void* out, int64_t n,
                        cudaStream_t stream);

/// im2col of one image x [c, h, w] into col [c·kh·kw, oh·ow] (zeros where the window is in the
/// padding).
struct ConvShape {
  int64_t c, h, w, o, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int oph = 0, opw = 0;  ///< transposed convolution: output padding (unused by the kernels)
};
cudaError_t launch_im2col(FloatType ft, const void* x, void* col, const ConvShape& s,
                          cudaStream_t stream);
/// Depthwise convolution (C/g = 1, O = C·M) of x [n, c, h, w], bias [o] or null, then the
/// activation (Activation of cuda_blob_format.h: 0 none, 1 relu).
cudaError_t launch_depthwise_conv2d(FloatType ft, const void* x, const void* w, const void* bias,
                                    void* out, int64_t n, const ConvShape& s, int activation,
                                    cudaStream_t stream);
/// out [n, c, inner] += bias[c] (bias may be null), then the activation (0 none, 1 relu).
cudaError_t launch_bias_activation(FloatType ft, void* out, const void* bias, int64_t n,
                                   int64_t c, int64_t inner, int activation,
                                   cudaStream_t stream);
/// Transposed convolution of x [n, c, h, w] with w [c, o/g, kh, kw] (+ bias [o] or null) into
/// out [n, o, oh, ow], one output element per thread (a gather over the taps that reach it).
cudaError_t launch_conv_transpose2d(FloatType ft, const void* x, const void* w, const void* bias,
                                    void* out, int64_t n, const ConvShape& s,
                                    cudaStream_t stream);

/// Attention weights in place: each row (b, i) of scores [batch, l, s] scaled, masked (the
/// mask read at b_outer·st[0] + b_inner·st[1] + i·st[2] + j·st[3], batch = outer·inner;
/// mask_kind 1 bool (false: -inf), 2 additive, of the scores' float type), causal (j > i:
/// -inf), then softmax; a row with nothing attended becomes zeros.
struct AttentionMask {
  int kind = 0;
  const void* data = nullptr;
  int64_t inner = 1;
  int64_t strides[4] = {};
};
cudaError_t launch_attention_softmax(FloatType ft, void* scores, int64_t batch, int64_t l,
                                     int64_t s, float scale, bool causal,
                                     const AttentionMask& mask, cudaStream_t stream);

/// Whether this build has kernels the current device can run (cudaFuncGetAttributes of one
/// kernel): cudaSuccess, or the error (e.g. cudaErrorNoKernelImageForDevice).
cudaError_t probe_kernel_image();

}  // namespace tern::cuda
