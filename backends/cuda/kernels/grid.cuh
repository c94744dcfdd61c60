// Launch geometry shared by the kernels (internal to backends/cuda/kernels).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n elements (at least 1, at most 65535 * 16).
inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535 * 16) blocks = 65535 * 16;
  return static_cast<unsigned>(blocks);
}

/// Float storage types: every kernel computes in f32 and loads/stores T (float, __half or
/// __nv_bfloat16) through these.
__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__half v) { return __half2float(v); }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ inline T from_f(float v);
template <>
__device__ inline float from_f<float>(float v) { return v; }
template <>
__device__ inline __half from_f<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// Runs the statement with `T` the storage type of FloatType `ft`.
#define TERN_FLOAT_DISPATCH(ft, ...)                 \
  switch (ft) {                                      \
    case FloatType::F16: {                           \
      using T = __half;                              \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    case FloatType::BF16: {                          \
      using T = __nv_bfloat16;                       \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
    default: {                                       \
      using T = float;                               \
      __VA_ARGS__;                                   \
      break;                                         \
    }                                                \
  }

/// Grid-stride loop index helpers.
#define TERN_CUDA_LOOP(i, n)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

/// Block-wide reductions over blockDim.x (a multiple of 32, at most 1024) threads; every
/// thread gets the result. `scratch` holds 32 floats of shared memory.
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}
__device__ inline float block_max(float v, float* scratch) {
  v = warp_max(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace tern::cuda
