// Sum and mean over the middle of [outer, reduce, inner], accumulated in double.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

/// One warp per output element: lanes stride over the reduced dim.
__global__ void reduce_middle(const float* x, float* out, int64_t outer, int64_t reduce,
                              int64_t inner, bool mean) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       o < outer * inner; o += warps) {
    const int64_t a = o / inner, b = o % inner;
    const float* base = x + a * reduce * inner + b;
    double sum = 0.0;
    for (int64_t r = lane; r < reduce; r += 32) sum += static_cast<double>(base[r * inner]);
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) out[o] = static_cast<float>(mean ? sum / static_cast<double>(reduce) : sum);
  }
}

}  // namespace

cudaError_t launch_reduce(const float* x, float* out, int64_t outer, int64_t reduce,
                          int64_t inner, bool mean, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  const int64_t per_block = kThreads / 32;
  int64_t blocks = (outputs + per_block - 1) / per_block;
  if (blocks > 65535 * 16) blocks = 65535 * 16;
  reduce_middle<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, out, outer, reduce,
                                                                         inner, mean);
  return cudaGetLastError();
}

}  // namespace tern::cuda
