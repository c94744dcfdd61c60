// Row-wise normalisations: softmax / log-softmax, layer norm, RMS norm; group norm; and
// inference batch norm. Statistics in f32 (group and RMS norm: double, as the portable kernels).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

/// One block per row.
template <typename T>
__global__ void softmax_rows(const T* x, T* out, int64_t cols, bool log) {
  __shared__ float scratch[32];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, to_f(row[j]));
  m = block_max(m, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(to_f(row[j]) - m);
  sum = block_sum(sum, scratch);
  if (log) {
    const float lse = m + logf(sum);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = from_f<T>(to_f(row[j]) - lse);
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      dst[j] = from_f<T>(expf(to_f(row[j]) - m) * inv);
    }
  }
}

/// One block per row: mean, then the biased variance around it (two passes).
template <typename T>
__global__ void layer_norm_rows(const T* x, const T* weight, const T* bias, T* out, int64_t cols,
                                float eps) {
  __shared__ float scratch[32];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += to_f(row[j]);
  const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = to_f(row[j]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, scratch) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = (to_f(row[j]) - mean) * rstd;
    if (weight != nullptr) y *= to_f(weight[j]);
    if (bias != nullptr) y += to_f(bias[j]);
    dst[j] = from_f<T>(y);
  }
}

/// Block-wide sum of doubles over blockDim.x threads (a multiple of 32); every thread gets it.
__device__ inline double block_sum_double(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? scratch[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// One block per row: x · 1/sqrt(mean(x²) + eps) (· weight), the sum of squares in double.
template <typename T>
__global__ void rms_norm_rows(const T* x, const T* weight, T* out, int64_t cols, float eps) {
  __shared__ double scratch[32];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  double sq = 0.0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const double v = to_f(row[j]);
    sq += v * v;
  }
  const double mean_sq = block_sum_double(sq, scratch) / static_cast<double>(cols);
  const float scale = static_cast<float>(1.0 / sqrt(mean_sq + static_cast<double>(eps)));
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = to_f(row[j]) * scale;
    if (weight != nullptr) y *= to_f(weight[j]);
    dst[j] = from_f<T>(y);
  }
}

/// One block per (sample, group) of `len` = channels_per_group · inner contiguous elements:
/// mean and biased variance in double (two passes), then the per-channel affine.
template <typename T>
__global__ void group_norm_groups(const T* x, const T* weight, const T* bias, T* out,
                                  int64_t groups, int64_t per_group, int64_t inner, float eps) {
  __shared__ double scratch[32];
  const int64_t len = per_group * inner;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * len;
  const int64_t g = blockIdx.x % groups;
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += to_f(x[base + j]);
  const double mean = block_sum_double(sum, scratch) / static_cast<double>(len);
  double sq = 0.0;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const double d = to_f(x[base + j]) - mean;
    sq += d * d;
  }
  const double var = block_sum_double(sq, scratch) / static_cast<double>(len);
  const double rstd = 1.0 / sqrt(var + static_cast<double>(eps));
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const int64_t channel = g * per_group + j / inner;
    const double scale = rstd * (weight != nullptr ? to_f(weight[channel]) : 1.0f);
    const float shift =
        static_cast<float>((bias != nullptr ? to_f(bias[channel]) : 0.0f) - mean * scale);
    out[base + j] = from_f<T>(to_f(x[base + j]) * static_cast<float>(scale) + shift);
  }
}

template <typename T>
__global__ void batch_norm_kernel(const T* x, const T* weight, const T* bias, const T* mean,
                                  const T* var, T* out, int64_t total, int64_t c, int64_t inner,
                                  float eps) {
  TERN_CUDA_LOOP(i, total) {
    const int64_t ch = (i / inner) % c;
    float y = (to_f(x[i]) - to_f(mean[ch])) * rsqrtf(to_f(var[ch]) + eps);
    if (weight != nullptr) y *= to_f(weight[ch]);
    if (bias != nullptr) y += to_f(bias[ch]);
    out[i] = from_f<T>(y);
  }
}

unsigned threads_for(int64_t cols) {
  return cols >= 1024 ? 1024u : cols >= 256 ? 256u : cols >= 64 ? 64u : 32u;
}

}  // namespace

cudaError_t launch_softmax(FloatType ft, const void* x, void* out, int64_t rows, int64_t cols,
                           bool log, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, softmax_rows<T><<<static_cast<unsigned>(rows), threads_for(cols), 0,
                                            stream>>>(static_cast<const T*>(x),
                                                      static_cast<T*>(out), cols, log));
  return cudaGetLastError();
}

cudaError_t launch_layer_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              void* out, int64_t rows, int64_t cols, float eps,
                              cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, layer_norm_rows<T><<<static_cast<unsigned>(rows), threads_for(cols), 0,
                                               stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(weight),
                              static_cast<const T*>(bias), static_cast<T*>(out), cols, eps));
  return cudaGetLastError();
}

cudaError_t launch_rms_norm(FloatType ft, const void* x, const void* weight, void* out,
                            int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, rms_norm_rows<T><<<static_cast<unsigned>(rows), threads_for(cols), 0,
                                             stream>>>(static_cast<const T*>(x),
                                                       static_cast<const T*>(weight),
                                                       static_cast<T*>(out), cols, eps));
  return cudaGetLastError();
}

cudaError_t launch_group_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              void* out, int64_t n, int64_t c, int64_t inner, int64_t groups,
                              float eps, cudaStream_t stream) {
  const int64_t per_group = c / groups;
  TERN_FLOAT_DISPATCH(ft, group_norm_groups<T><<<static_cast<unsigned>(n * groups),
                                                 threads_for(per_group * inner), 0, stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(weight),
                              static_cast<const T*>(bias), static_cast<T*>(out), groups,
                              per_group, inner, eps));
  return cudaGetLastError();
}

cudaError_t launch_batch_norm(FloatType ft, const void* x, const void* weight, const void* bias,
                              const void* mean, const void* var, void* out, int64_t n, int64_t c,
                              int64_t inner, float eps, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  TERN_FLOAT_DISPATCH(ft, batch_norm_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(weight),
                              static_cast<const T*>(bias), static_cast<const T*>(mean),
                              static_cast<const T*>(var), static_cast<T*>(out), total, c, inner,
                              eps));
  return cudaGetLastError();
}

}  // namespace tern::cuda
