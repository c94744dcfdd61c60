// Upsampling (nearest, bilinear) and padding (constant, reflect), with the portable kernels'
// index rules (runtime/kernels/portable/upsample_*.cpp, pad.cpp).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

__device__ inline int64_t nearest_index(int64_t o, int64_t in, int64_t out, float step) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const int64_t s = static_cast<int64_t>(floorf(static_cast<float>(o) * step));
  return s < in - 1 ? s : in - 1;
}

struct Taps {
  int64_t i0, i1;
  float w0, w1;
};

__device__ inline Taps taps(int64_t o, int64_t in, int64_t out, float step, bool align) {
  if (in == out) return {o, o, 1.0f, 0.0f};
  float real = align ? step * static_cast<float>(o) : step * (static_cast<float>(o) + 0.5f) - 0.5f;
  if (real < 0.0f) real = 0.0f;
  const int64_t f = static_cast<int64_t>(floorf(real));
  const int64_t i0 = f < in - 1 ? f : in - 1;
  float lambda = real - static_cast<float>(i0);
  lambda = lambda < 0.0f ? 0.0f : lambda > 1.0f ? 1.0f : lambda;
  return {i0, i0 < in - 1 ? i0 + 1 : i0, 1.0f - lambda, lambda};
}

template <typename T>
__global__ void upsample_kernel(const T* x, T* out, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                bool bilinear, bool align, float sh, float sw, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t j = i % ow, r = (i / ow) % oh, p = i / (ow * oh);
    const T* plane = x + p * h * w;
    if (!bilinear) {
      out[i] = plane[nearest_index(r, h, oh, sh) * w + nearest_index(j, w, ow, sw)];
      continue;
    }
    const Taps th = taps(r, h, oh, sh, align), tw = taps(j, w, ow, sw, align);
    const T* r0 = plane + th.i0 * w;
    const T* r1 = plane + th.i1 * w;
    out[i] = from_f<T>(th.w0 * (tw.w0 * to_f(r0[tw.i0]) + tw.w1 * to_f(r0[tw.i1])) +
                       th.w1 * (tw.w0 * to_f(r1[tw.i0]) + tw.w1 * to_f(r1[tw.i1])));
  }
}

struct PadShape {
  int rank;
  int64_t in[kKernelMaxDims], out[kKernelMaxDims], before[kKernelMaxDims];
};

template <typename T>
__global__ void pad_kernel(const T* x, T* out, PadShape s, bool reflect, float value, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    int64_t rest = i, at = 0, stride = 1;
    bool inside = true;
    for (int d = s.rank - 1; d >= 0; --d) {
      int64_t src = rest % s.out[d] - s.before[d];
      rest /= s.out[d];
      if (reflect) {
        if (src < 0) src = -src;
        if (src >= s.in[d]) src = 2 * (s.in[d] - 1) - src;
      } else if (src < 0 || src >= s.in[d]) {
        inside = false;
      }
      at += src * stride;
      stride *= s.in[d];
    }
    out[i] = inside ? x[at] : from_f<T>(value);
  }
}

}  // namespace

cudaError_t launch_upsample2d(FloatType ft, const void* x, void* out, int64_t planes, int64_t h,
                              int64_t w, int64_t oh, int64_t ow, bool bilinear,
                              bool align_corners, float step_h, float step_w,
                              cudaStream_t stream) {
  const int64_t n = planes * oh * ow;
  TERN_FLOAT_DISPATCH(ft, upsample_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(out), h, w, oh, ow,
                              bilinear, align_corners, step_h, step_w, n));
  return cudaGetLastError();
}

cudaError_t launch_pad(FloatType ft, const void* x, void* out, int rank, const int64_t* in_dims,
                       const int64_t* out_dims, const int64_t* before, bool reflect, float value,
                       int64_t n, cudaStream_t stream) {
  PadShape s{};
  s.rank = rank;
  for (int d = 0; d < rank && d < kKernelMaxDims; ++d) {
    s.in[d] = in_dims[d];
    s.out[d] = out_dims[d];
    s.before[d] = before[d];
  }
  TERN_FLOAT_DISPATCH(ft, pad_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(out), s, reflect, value,
                              n));
  return cudaGetLastError();
}

}  // namespace tern::cuda
