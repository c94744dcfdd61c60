// Row-wise normalisations: softmax / log-softmax, layer norm; and inference batch norm.
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace tern::cuda {
namespace {

/// One block per row.
__global__ void softmax_rows(const float* x, float* out, int64_t cols, bool log) {
  __shared__ float scratch[32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(row[j] - m);
  sum = block_sum(sum, scratch);
  if (log) {
    const float lse = m + logf(sum);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] - lse;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) * inv;
  }
}

/// One block per row: mean, then the biased variance around it (two passes).
__global__ void layer_norm_rows(const float* x, const float* weight, const float* bias,
                                float* out, int64_t cols, float eps) {
  __shared__ float scratch[32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += row[j];
  const float mean = block_sum(sum, scratch) / static_cast<float>(cols);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = row[j] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, scratch) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = (row[j] - mean) * rstd;
    if (weight != nullptr) y *= weight[j];
    if (bias != nullptr) y += bias[j];
    dst[j] = y;
  }
}

__global__ void batch_norm_kernel(const float* x, const float* weight, const float* bias,
                                  const float* mean, const float* var, float* out, int64_t total,
                                  int64_t c, int64_t inner, float eps) {
  TERN_CUDA_LOOP(i, total) {
    const int64_t ch = (i / inner) % c;
    float y = (x[i] - mean[ch]) * rsqrtf(var[ch] + eps);
    if (weight != nullptr) y *= weight[ch];
    if (bias != nullptr) y += bias[ch];
    out[i] = y;
  }
}

unsigned threads_for(int64_t cols) {
  return cols >= 1024 ? 1024u : cols >= 256 ? 256u : cols >= 64 ? 64u : 32u;
}

}  // namespace

cudaError_t launch_softmax(const float* x, float* out, int64_t rows, int64_t cols, bool log,
                           cudaStream_t stream) {
  softmax_rows<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(x, out, cols, log);
  return cudaGetLastError();
}

cudaError_t launch_layer_norm(const float* x, const float* weight, const float* bias, float* out,
                              int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  layer_norm_rows<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
      x, weight, bias, out, cols, eps);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm(const float* x, const float* weight, const float* bias,
                              const float* mean, const float* var, float* out, int64_t n,
                              int64_t c, int64_t inner, float eps, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  batch_norm_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, weight, bias, mean, var, out,
                                                             total, c, inner, eps);
  return cudaGetLastError();
}

}  // namespace tern::cuda
