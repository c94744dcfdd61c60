// Sum and mean over the middle of [outer, reduce, inner], accumulated in double.
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

/// One warp per output element: lanes stride over the reduced dim.
template <typename T>
__global__ void reduce_middle(const T* x, T* out, int64_t outer, int64_t reduce,
                              int64_t inner, bool mean) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       o < outer * inner; o += warps) {
    const int64_t a = o / inner, b = o % inner;
    const T* base = x + a * reduce * inner + b;
    double sum = 0.0;
    for (int64_t r = lane; r < reduce; r += 32) sum += static_cast<double>(to_f(base[r * inner]));
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) out[o] = from_f<T>(static_cast<float>(mean ? sum / static_cast<double>(reduce) : sum));
  }
}

}  // namespace

cudaError_t launch_reduce(FloatType ft, const void* x, void* out, int64_t outer, int64_t reduce,
                          int64_t inner, bool mean, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  const int64_t per_block = kThreads / 32;
  int64_t blocks = (outputs + per_block - 1) / per_block;
  if (blocks > 65535 * 16) blocks = 65535 * 16;
  TERN_FLOAT_DISPATCH(ft, reduce_middle<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<T*>(out), outer, reduce,
                              inner, mean));
  return cudaGetLastError();
}

}  // namespace tern::cuda
