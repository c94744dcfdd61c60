// Embedding lookup; out-of-range indices write zeros and raise a device flag.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

__global__ void embedding_kernel(const float* weight, const void* indices, bool i64, float* out,
                                 int64_t rows, int64_t v, int64_t d, int* error_flag) {
  TERN_CUDA_LOOP(i, rows * d) {
    const int64_t r = i / d, col = i % d;
    const int64_t index = i64 ? static_cast<const int64_t*>(indices)[r]
                              : static_cast<int64_t>(static_cast<const int32_t*>(indices)[r]);
    if (index < 0 || index >= v) {
      out[i] = 0.0f;
      *error_flag = 1;
    } else {
      out[i] = weight[index * d + col];
    }
  }
}

}  // namespace

cudaError_t launch_embedding(const float* weight, const void* indices, bool indices_i64,
                             float* out, int64_t rows, int64_t v, int64_t d, int* error_flag,
                             cudaStream_t stream) {
  embedding_kernel<<<grid_for(rows * d), kThreads, 0, stream>>>(weight, indices, indices_i64, out,
                                                               rows, v, d, error_flag);
  return cudaGetLastError();
}

}  // namespace tern::cuda
