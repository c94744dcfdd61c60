// Concatenation, one part at a time into its slice of the output; index_select. Any dtype (the
// element moved as an unsigned integer of its size).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

template <typename E>
__global__ void concat_part(const E* part, E* out, int64_t part_mid, int64_t out_mid, int64_t at,
                            int64_t inner, int64_t n) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t k = i % inner, j = (i / inner) % part_mid, o = i / (inner * part_mid);
    out[(o * out_mid + at + j) * inner + k] = part[i];
  }
}

template <typename E>
__global__ void index_select_kernel(const E* x, const void* index, bool i64, E* out, int64_t dim,
                                    int64_t inner, int64_t count, int64_t n, int* error_flag) {
  TERN_CUDA_LOOP(i, n) {
    const int64_t k = i % inner, j = (i / inner) % count, o = i / (inner * count);
    const int64_t at = i64 ? static_cast<const int64_t*>(index)[j]
                           : static_cast<int64_t>(static_cast<const int32_t*>(index)[j]);
    if (at < 0 || at >= dim) {
      out[i] = E(0);
      atomicOr(error_flag, kErrorIndex);
    } else {
      out[i] = x[(o * dim + at) * inner + k];
    }
  }
}

/// Runs `launch.template operator()<E>()` with E the unsigned type of `elem_size` bytes.
template <typename F>
void by_size(int elem_size, F&& launch) {
  switch (elem_size) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: launch(uint32_t{}); break;
  }
}

}  // namespace

cudaError_t launch_concat_part(int elem_size, const void* part, void* out, int64_t outer,
                               int64_t part_mid, int64_t out_mid, int64_t at, int64_t inner,
                               cudaStream_t stream) {
  const int64_t n = outer * part_mid * inner;
  by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    concat_part<E><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const E*>(part),
                                                         static_cast<E*>(out), part_mid, out_mid,
                                                         at, inner, n);
  });
  return cudaGetLastError();
}

cudaError_t launch_index_select(int elem_size, const void* x, const void* index, bool index_i64,
                                void* out, int64_t outer, int64_t dim, int64_t inner,
                                int64_t count, int* error_flag, cudaStream_t stream) {
  const int64_t n = outer * count * inner;
  by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    index_select_kernel<E><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const E*>(x), index, index_i64, static_cast<E*>(out), dim, inner, count, n,
        error_flag);
  });
  return cudaGetLastError();
}

}  // namespace tern::cuda
