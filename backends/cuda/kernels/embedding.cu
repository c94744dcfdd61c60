// Embedding lookup; out-of-range indices write zeros and raise a device flag.
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

template <typename T>
__global__ void embedding_kernel(const T* weight, const void* indices, bool i64, T* out,
                                 int64_t rows, int64_t v, int64_t d, int* error_flag) {
  TERN_CUDA_LOOP(i, rows * d) {
    const int64_t r = i / d, col = i % d;
    const int64_t index = i64 ? static_cast<const int64_t*>(indices)[r]
                              : static_cast<int64_t>(static_cast<const int32_t*>(indices)[r]);
    if (index < 0 || index >= v) {
      out[i] = from_f<T>(0.0f);
      atomicOr(error_flag, kErrorIndex);
    } else {
      out[i] = weight[index * d + col];
    }
  }
}

}  // namespace

cudaError_t launch_embedding(FloatType ft, const void* weight, const void* indices,
                             bool indices_i64, void* out, int64_t rows, int64_t v, int64_t d,
                             int* error_flag, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, embedding_kernel<T><<<grid_for(rows * d), kThreads, 0, stream>>>(
                              static_cast<const T*>(weight), indices, indices_i64,
                              static_cast<T*>(out), rows, v, d, error_flag));
  return cudaGetLastError();
}

}  // namespace tern::cuda
