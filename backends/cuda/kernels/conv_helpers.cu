// Convolution pieces around the cuBLASLt GEMM: im2col columns, the bias + activation pass,
// and the direct depthwise convolution.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

__global__ void im2col_kernel(const float* x, float* col, ConvShape s, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t p = i % (s.oh * s.ow), row = i / (s.oh * s.ow);
    const int64_t kx = row % s.kw, ky = (row / s.kw) % s.kh, c = row / (s.kw * s.kh);
    const int64_t oy = p / s.ow, ox = p % s.ow;
    const int64_t y = oy * s.sh - s.ph + ky * s.dh, xx = ox * s.sw - s.pw + kx * s.dw;
    col[i] = (y >= 0 && y < s.h && xx >= 0 && xx < s.w) ? x[(c * s.h + y) * s.w + xx] : 0.0f;
  }
}

__global__ void depthwise_kernel(const float* x, const float* w, const float* bias, float* out,
                                 ConvShape s, int64_t total, int activation) {
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, o = (i / (s.ow * s.oh)) % s.o;
    const int64_t n = i / (s.ow * s.oh * s.o);
    const int64_t c = o / (s.o / s.c);
    const float* plane = x + (n * s.c + c) * s.h * s.w;
    const float* taps = w + o * s.kh * s.kw;
    float acc = bias != nullptr ? bias[o] : 0.0f;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int64_t y = oy * s.sh - s.ph + static_cast<int64_t>(ky) * s.dh;
      if (y < 0 || y >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int64_t xx = ox * s.sw - s.pw + static_cast<int64_t>(kx) * s.dw;
        if (xx < 0 || xx >= s.w) continue;
        acc += plane[y * s.w + xx] * taps[ky * s.kw + kx];
      }
    }
    out[i] = activation == 1 ? fmaxf(acc, 0.0f) : acc;
  }
}

__global__ void bias_activation_kernel(float* out, const float* bias, int64_t c, int64_t inner,
                                       int64_t total, int activation) {
  TERN_CUDA_LOOP(i, total) {
    float v = out[i];
    if (bias != nullptr) v += bias[(i / inner) % c];
    out[i] = activation == 1 ? (v != v ? v : fmaxf(v, 0.0f)) : v;
  }
}

}  // namespace

cudaError_t launch_im2col(const float* x, float* col, const ConvShape& s, cudaStream_t stream) {
  const int64_t n = s.c * s.kh * s.kw * s.oh * s.ow;
  im2col_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, col, s, n);
  return cudaGetLastError();
}

cudaError_t launch_depthwise_conv2d(const float* x, const float* w, const float* bias, float* out,
                                    int64_t n, const ConvShape& s, int activation,
                                    cudaStream_t stream) {
  const int64_t total = n * s.o * s.oh * s.ow;
  depthwise_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, w, bias, out, s, total,
                                                             activation);
  return cudaGetLastError();
}

cudaError_t launch_bias_activation(float* out, const float* bias, int64_t n, int64_t c,
                                   int64_t inner, int activation, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  bias_activation_kernel<<<grid_for(total), kThreads, 0, stream>>>(out, bias, c, inner, total,
                                                                   activation);
  return cudaGetLastError();
}

}  // namespace tern::cuda
