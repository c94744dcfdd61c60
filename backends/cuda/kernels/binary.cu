// Elementwise binary ops with NumPy broadcasting (BinaryOp of cuda_blob_format.h).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

__device__ inline float apply(int op, float a, float b, float alpha) {
  switch (op) {
    case 0: return a + alpha * b;
    case 1: return a - alpha * b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return powf(a, b);
    case 5: return (a != a || b != b) ? a + b : fmaxf(a, b);
    case 6: return (a != a || b != b) ? a + b : fminf(a, b);
  }
  return 0.0f;
}

template <typename T>
__global__ void binary_same_shape(int op, const T* a, const T* b, float scalar, float alpha,
                                  T* out, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    out[i] = from_f<T>(apply(op, to_f(a[i]), b != nullptr ? to_f(b[i]) : scalar, alpha));
  }
}

template <typename T>
__global__ void binary_broadcast(int op, const T* a, const T* b, float scalar, float alpha,
                                 T* out, int64_t n, BroadcastShape s) {
  TERN_CUDA_LOOP(i, n) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t at = rest % s.dims[d];
      rest /= s.dims[d];
      ia += at * s.a_strides[d];
      ib += at * s.b_strides[d];
    }
    out[i] = from_f<T>(apply(op, to_f(a[ia]), b != nullptr ? to_f(b[ib]) : scalar, alpha));
  }
}

}  // namespace

cudaError_t launch_binary(FloatType ft, int op, const void* a, const void* b, float scalar,
                          float alpha, void* out, int64_t n, const BroadcastShape& shape,
                          bool same_shape, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, {
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    T* po = static_cast<T*>(out);
    if (same_shape) {
      binary_same_shape<T><<<grid_for(n), kThreads, 0, stream>>>(op, pa, pb, scalar, alpha, po, n);
    } else {
      binary_broadcast<T><<<grid_for(n), kThreads, 0, stream>>>(op, pa, pb, scalar, alpha, po, n,
                                                               shape);
    }
  });
  return cudaGetLastError();
}

}  // namespace tern::cuda
