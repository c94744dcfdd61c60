// The softmax step of attention: scale, mask (bool or additive, broadcast by strides), causal
// cut, softmax in place over each row of the [batch, L, S] scores; empty rows become zeros.
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

template <typename T>
__device__ inline float score_at(const T* row, int64_t b, int64_t i, int64_t j, float scale,
                                 bool causal, const AttentionMask& m) {
  if (causal && j > i) return -INFINITY;
  float v = to_f(row[j]) * scale;
  if (m.kind != 0) {
    const int64_t at = (b / m.inner) * m.strides[0] + (b % m.inner) * m.strides[1] +
                       i * m.strides[2] + j * m.strides[3];
    if (m.kind == 1) {
      if (!static_cast<const bool*>(m.data)[at]) return -INFINITY;
    } else {
      v += to_f(static_cast<const T*>(m.data)[at]);
    }
  }
  return v;
}

/// One block per row (b, i).
template <typename T>
__global__ void attention_softmax_rows(T* scores, int64_t l, int64_t s, float scale,
                                       bool causal, AttentionMask mask) {
  __shared__ float scratch[32];
  const int64_t row_index = blockIdx.x;
  const int64_t b = row_index / l, i = row_index % l;
  T* row = scores + row_index * s;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    m = fmaxf(m, score_at(row, b, i, j, scale, causal, mask));
  }
  m = block_max(m, scratch);
  if (m == -INFINITY) {
    __syncthreads();
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) row[j] = from_f<T>(0.0f);
    return;
  }
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    sum += expf(score_at(row, b, i, j, scale, causal, mask) - m);
  }
  sum = block_sum(sum, scratch);
  const float inv = 1.0f / sum;
  // Every thread has read its elements; each writes only the elements it read.
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    row[j] = from_f<T>(expf(score_at(row, b, i, j, scale, causal, mask) - m) * inv);
  }
}

}  // namespace

cudaError_t launch_attention_softmax(FloatType ft, void* scores, int64_t batch, int64_t l,
                                     int64_t s, float scale, bool causal,
                                     const AttentionMask& mask, cudaStream_t stream) {
  const unsigned threads = s >= 1024 ? 1024u : s >= 256 ? 256u : s >= 64 ? 64u : 32u;
  TERN_FLOAT_DISPATCH(ft, attention_softmax_rows<T><<<static_cast<unsigned>(batch * l), threads,
                                                      0, stream>>>(static_cast<T*>(scores), l, s,
                                                                   scale, causal, mask));
  return cudaGetLastError();
}

}  // namespace tern::cuda
