// 2-D pooling over NCHW planes: max (dilated), average (ATen's divisor rules), adaptive average.
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

template <typename T>
__global__ void max_pool(const T* x, T* out, PoolShape s) {
  const int64_t total = s.planes * s.oh * s.ow;
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, p = i / (s.ow * s.oh);
    const T* plane = x + p * s.h * s.w;
    float m = -INFINITY;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int64_t y = oy * s.sh - s.ph + static_cast<int64_t>(ky) * s.dh;
      if (y < 0 || y >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int64_t xx = ox * s.sw - s.pw + static_cast<int64_t>(kx) * s.dw;
        if (xx < 0 || xx >= s.w) continue;
        const float v = to_f(plane[y * s.w + xx]);
        if (v > m || v != v) m = v;
        if (m != m) break;
      }
    }
    out[i] = from_f<T>(m);
  }
}

template <typename T>
__global__ void avg_pool(const T* x, T* out, PoolShape s) {
  const int64_t total = s.planes * s.oh * s.ow;
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, p = i / (s.ow * s.oh);
    int64_t y0 = oy * s.sh - s.ph, x0 = ox * s.sw - s.pw;
    int64_t y1 = y0 + s.kh < s.h + s.ph ? y0 + s.kh : s.h + s.ph;
    int64_t x1 = x0 + s.kw < s.w + s.pw ? x0 + s.kw : s.w + s.pw;
    const int64_t padded = (y1 - y0) * (x1 - x0);
    y0 = y0 < 0 ? 0 : y0;
    x0 = x0 < 0 ? 0 : x0;
    y1 = y1 > s.h ? s.h : y1;
    x1 = x1 > s.w ? s.w : x1;
    const T* plane = x + p * s.h * s.w;
    float sum = 0.0f;
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t xx = x0; xx < x1; ++xx) sum += to_f(plane[y * s.w + xx]);
    }
    const int64_t divisor = s.divisor > 0 ? s.divisor
                            : s.count_include_pad ? padded
                                                  : (y1 - y0) * (x1 - x0);
    out[i] = from_f<T>(divisor > 0 ? sum / static_cast<float>(divisor) : 0.0f);
  }
}

template <typename T>
__global__ void adaptive_avg_pool(const T* x, T* out, PoolShape s) {
  const int64_t total = s.planes * s.oh * s.ow;
  TERN_CUDA_LOOP(i, total) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, p = i / (s.ow * s.oh);
    const int64_t y0 = oy * s.h / s.oh, y1 = ((oy + 1) * s.h + s.oh - 1) / s.oh;
    const int64_t x0 = ox * s.w / s.ow, x1 = ((ox + 1) * s.w + s.ow - 1) / s.ow;
    const T* plane = x + p * s.h * s.w;
    float sum = 0.0f;
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t xx = x0; xx < x1; ++xx) sum += to_f(plane[y * s.w + xx]);
    }
    out[i] = from_f<T>(sum / static_cast<float>((y1 - y0) * (x1 - x0)));
  }
}

}  // namespace

cudaError_t launch_max_pool2d(FloatType ft, const void* x, void* out, const PoolShape& s,
                              cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, max_pool<T><<<grid_for(s.planes * s.oh * s.ow), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(out), s));
  return cudaGetLastError();
}

cudaError_t launch_avg_pool2d(FloatType ft, const void* x, void* out, const PoolShape& s,
                              cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, avg_pool<T><<<grid_for(s.planes * s.oh * s.ow), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(out), s));
  return cudaGetLastError();
}

cudaError_t launch_adaptive_avg_pool2d(FloatType ft, const void* x, void* out,
                                       const PoolShape& s, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, adaptive_avg_pool<T><<<grid_for(s.planes * s.oh * s.ow), kThreads, 0,
                                                 stream>>>(static_cast<const T*>(x),
                                                           static_cast<T*>(out), s));
  return cudaGetLastError();
}

}  // namespace tern::cuda
