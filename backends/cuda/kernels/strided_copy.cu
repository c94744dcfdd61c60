// Gather by strides: permute, transpose, slice, select, expand, split pieces. Any dtype (the
// element moved as an unsigned integer of its size).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

struct Strides {
  int rank;
  int64_t dims[kKernelMaxDims];
  int64_t strides[kKernelMaxDims];
};

template <typename E>
__global__ void strided_copy_kernel(const E* x, E* out, Strides s, int64_t offset, int64_t n) {
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

cudaError_t launch_strided_copy(int elem_size, const void* x, void* out, int rank,
                                const int64_t* dims, const int64_t* strides, int64_t offset,
                                int64_t n, cudaStream_t stream) {
  Strides s{};
  s.rank = rank;
  for (int d = 0; d < rank && d < kKernelMaxDims; ++d) {
    s.dims[d] = dims[d];
    s.strides[d] = strides[d];
  }
  switch (elem_size) {
    case 1:
      strided_copy_kernel<uint8_t><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const uint8_t*>(x), static_cast<uint8_t*>(out), s, offset, n);
      break;
    case 2:
      strided_copy_kernel<uint16_t><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(x), static_cast<uint16_t*>(out), s, offset, n);
      break;
    case 8:
      strided_copy_kernel<uint64_t><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const uint64_t*>(x), static_cast<uint64_t*>(out), s, offset, n);
      break;
    default:
      strided_copy_kernel<uint32_t><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const uint32_t*>(x), static_cast<uint32_t*>(out), s, offset, n);
      break;
  }
  return cudaGetLastError();
}

}  // namespace tern::cuda
