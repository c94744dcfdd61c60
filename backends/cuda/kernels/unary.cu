// Elementwise unary ops and activations (UnaryOp of cuda_blob_format.h), with the portable
// kernels' formulas (runtime/kernels/util/vector_math.h for GELU).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ inline float apply(int op, float x, float p0, float p1) {
  switch (op) {
    case 0: return x != x ? x : fmaxf(x, 0.0f);
    case 1: return x != x ? x : fminf(fmaxf(x, p0), p1);
    case 2: return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case 3: {
      const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return x * sigmoid(2.0f * u);
    }
    case 4: return x * sigmoid(x);
    case 5: return sigmoid(x);
    case 6: return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case 7: return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case 8: return tanhf(x);
    case 9: return expf(x);
    case 10: return logf(x);
    case 11: return sqrtf(x);
    case 12: return rsqrtf(x);
    case 13: return -x;
    case 14: return fabsf(x);
    case 15: return 1.0f / x;
    case 16: return p0 == 2.0f ? x * x : powf(x, p0);
    case 17: return x;
  }
  return 0.0f;
}

template <typename T>
__global__ void unary_kernel(int op, const T* x, T* out, int64_t n, float p0, float p1) {
  TERN_CUDA_LOOP(i, n) { out[i] = from_f<T>(apply(op, to_f(x[i]), p0, p1)); }
}

}  // namespace

cudaError_t launch_unary(FloatType ft, int op, const void* x, void* out, int64_t n, float p0,
                         float p1, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, unary_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
                              op, static_cast<const T*>(x), static_cast<T*>(out), n, p0, p1));
  return cudaGetLastError();
}

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, unary_kernel<float>);
}

}  // namespace tern::cuda
