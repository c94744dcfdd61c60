// Gather by strides: permute, transpose, slice, select, expand, split pieces, clone.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

struct Strides {
  int rank;
  int64_t dims[kKernelMaxDims];
  int64_t strides[kKernelMaxDims];
};

__global__ void strided_copy_kernel(const float* x, float* out, Strides s, int64_t offset,
                                    int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    int64_t rest = i, at = offset;
    for (int d = s.rank - 1; d >= 0; --d) {
      at += (rest % s.dims[d]) * s.strides[d];
      rest /= s.dims[d];
    }
    out[i] = x[at];
  }
}

}  // namespace

cudaError_t launch_strided_copy(const float* x, float* out, int rank, const int64_t* dims,
                                const int64_t* strides, int64_t offset, int64_t n,
                                cudaStream_t stream) {
  Strides s{};
  s.rank = rank;
  for (int d = 0; d < rank && d < kKernelMaxDims; ++d) {
    s.dims[d] = dims[d];
    s.strides[d] = strides[d];
  }
  strided_copy_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, out, s, offset, n);
  return cudaGetLastError();
}

}  // namespace tern::cuda
