// Concatenation, one part at a time into its slice of the output.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

__global__ void concat_part(const float* part, float* out, int64_t part_mid, int64_t out_mid,
                            int64_t at, int64_t inner, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t k = i % inner, j = (i / inner) % part_mid, o = i / (inner * part_mid);
    out[(o * out_mid + at + j) * inner + k] = part[i];
  }
}

}  // namespace

cudaError_t launch_concat_part(const float* part, float* out, int64_t outer, int64_t part_mid,
                               int64_t out_mid, int64_t at, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * part_mid * inner;
  concat_part<<<grid_for(n), kThreads, 0, stream>>>(part, out, part_mid, out_mid, at, inner, n);
  return cudaGetLastError();
}

}  // namespace tern::cuda
