// Convolution pieces around the cuBLASLt GEMM: im2col columns, the bias + activation pass,
// and the direct depthwise convolution.
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

template <typename T>
__global__ void im2col_kernel(const T* x, T* col, ConvShape s, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t p = i % (s.oh * s.ow), row = i / (s.oh * s.ow);
    const int64_t kx = row % s.kw, ky = (row / s.kw) % s.kh, c = row / (s.kw * s.kh);
    const int64_t oy = p / s.ow, ox = p % s.ow;
    const int64_t y = oy * s.sh - s.ph + ky * s.dh, xx = ox * s.sw - s.pw + kx * s.dw;
    col[i] = (y >= 0 && y < s.h && xx >= 0 && xx < s.w) ? x[(c * s.h + y) * s.w + xx] : from_f<T>(0.0f);
  }
}

template <typename T>
__global__ void depthwise_kernel(const T* x, const T* w, const T* bias, T* out,
                                 ConvShape s, int64_t total, int activation) {
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, o = (i / (s.ow * s.oh)) % s.o;
    const int64_t n = i / (s.ow * s.oh * s.o);
    const int64_t c = o / (s.o / s.c);
    const T* plane = x + (n * s.c + c) * s.h * s.w;
    const T* taps = w + o * s.kh * s.kw;
    float acc = bias != nullptr ? to_f(bias[o]) : 0.0f;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int64_t y = oy * s.sh - s.ph + static_cast<int64_t>(ky) * s.dh;
      if (y < 0 || y >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int64_t xx = ox * s.sw - s.pw + static_cast<int64_t>(kx) * s.dw;
        if (xx < 0 || xx >= s.w) continue;
        acc += to_f(plane[y * s.w + xx]) * to_f(taps[ky * s.kw + kx]);
      }
    }
    out[i] = from_f<T>(activation == 1 ? fmaxf(acc, 0.0f) : acc);
  }
}

template <typename T>
__global__ void bias_activation_kernel(T* out, const T* bias, int64_t c, int64_t inner,
                                       int64_t total, int activation) {
  TERN_CUDA_LOOP(i, total) {
    float v = to_f(out[i]);
    if (bias != nullptr) v += to_f(bias[(i / inner) % c]);
    out[i] = from_f<T>(activation == 1 ? (v != v ? v : fmaxf(v, 0.0f)) : v);
  }
}

/// One output element per thread: the taps (ky, kx) and input channels of its group whose
/// input pixel lands on it (y = iy·stride − pad + ky·dil).
template <typename T>
__global__ void conv_transpose_kernel(const T* x, const T* w, const T* bias, T* out, ConvShape s,
                                      int64_t total) {
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, o = (i / (s.ow * s.oh)) % s.o;
    const int64_t n = i / (s.ow * s.oh * s.o);
    const int64_t og = s.o / s.groups, cg = s.c / s.groups;
    const int64_t g = o / og, oc = o % og;
    float acc = bias != nullptr ? to_f(bias[o]) : 0.0f;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int64_t ty = oy + s.ph - static_cast<int64_t>(ky) * s.dh;
      if (ty < 0 || ty % s.sh != 0 || ty / s.sh >= s.h) continue;
      const int64_t iy = ty / s.sh;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int64_t tx = ox + s.pw - static_cast<int64_t>(kx) * s.dw;
        if (tx < 0 || tx % s.sw != 0 || tx / s.sw >= s.w) continue;
        const int64_t ix = tx / s.sw;
        for (int64_t cc = 0; cc < cg; ++cc) {
          const int64_t c = g * cg + cc;
          acc += to_f(x[((n * s.c + c) * s.h + iy) * s.w + ix]) *
                 to_f(w[((c * og + oc) * s.kh + ky) * s.kw + kx]);
        }
      }
    }
    out[i] = from_f<T>(acc);
  }
}

}  // namespace

cudaError_t launch_im2col(FloatType ft, const void* x, void* col, const ConvShape& s,
                          cudaStream_t stream) {
  const int64_t n = s.c * s.kh * s.kw * s.oh * s.ow;
  TERN_FLOAT_DISPATCH(ft, im2col_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(col), s, n));
  return cudaGetLastError();
}

cudaError_t launch_depthwise_conv2d(FloatType ft, const void* x, const void* w, const void* bias,
                                    void* out, int64_t n, const ConvShape& s, int activation,
                                    cudaStream_t stream) {
  const int64_t total = n * s.o * s.oh * s.ow;
  TERN_FLOAT_DISPATCH(ft, depthwise_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(w),
                              static_cast<const T*>(bias), static_cast<T*>(out), s, total,
                              activation));
  return cudaGetLastError();
}

cudaError_t launch_bias_activation(FloatType ft, void* out, const void* bias, int64_t n,
                                   int64_t c, int64_t inner, int activation,
                                   cudaStream_t stream) {
  const int64_t total = n * c * inner;
  TERN_FLOAT_DISPATCH(ft, bias_activation_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
                              static_cast<T*>(out), static_cast<const T*>(bias), c, inner, total,
                              activation));
  return cudaGetLastError();
}

cudaError_t launch_conv_transpose2d(FloatType ft, const void* x, const void* w, const void* bias,
                                    void* out, int64_t n, const ConvShape& s,
                                    cudaStream_t stream) {
  const int64_t total = n * s.o * s.oh * s.ow;
  TERN_FLOAT_DISPATCH(ft, conv_transpose_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(w),
                              static_cast<const T*>(bias), static_cast<T*>(out), s, total));
  return cudaGetLastError();
}

}  // namespace tern::cuda
