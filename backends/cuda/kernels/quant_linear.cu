// Linear layers and embedding lookups on quantized (nf4 / fp8) weights, decoded in the kernel:
// the weight stays in its packed buffer (quant::QuantLayout) on the device.
//
// - Few rows (decode: M <= kQuantGemvMaxRows): one warp per output column n streams w's row n
//   once for every row of x; each lane decodes 8 consecutive weights per step (one 32-bit word
//   of NF4 codes, two of FP8) when K is a multiple of 8, one at a time otherwise; a shuffle
//   reduction sums the lanes. Memory-bound: the packed weight is read exactly once.
// - More rows (prefill): 64x64 output tiles over K steps of 16, the weight tile decoded into
//   shared memory once per step and used by all 64 rows of x.
// Both compute in f32 (the weight decoded exactly as the portable kernels do, quant_decode.h).
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/quant_decode.h"

namespace tern::cuda {
namespace {

constexpr int kWarp = 32;
__constant__ float kNf4CodeDevice[16] = {TERN_NF4_CODE_VALUES};
constexpr int kGemvWarps = 8;  // output columns per block

__device__ __forceinline__ void load_codebook(float* code) {
  if (threadIdx.x < 16) code[threadIdx.x] = kNf4CodeDevice[threadIdx.x];
  __syncthreads();
}

template <int MaxRows>
__global__ void quant_gemv_kernel(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                  const float* __restrict__ bias, float* __restrict__ out,
                                  int m, int64_t n, int64_t k, QuantDecode q) {
  __shared__ float code[16];
  load_codebook(code);
  const int lane = threadIdx.x % kWarp;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp;
  if (col >= n) return;
  float acc[MaxRows];
#pragma unroll
  for (int r = 0; r < MaxRows; ++r) acc[r] = 0.0f;
  const uint64_t row_start = static_cast<uint64_t>(col) * static_cast<uint64_t>(k);
  if (k % 8 == 0) {
    for (int64_t kk = 8 * lane; kk < k; kk += 8 * kWarp) {
      float wv[8];
      quant_element8(w, q, code, row_start + static_cast<uint64_t>(kk), wv);
#pragma unroll
      for (int r = 0; r < MaxRows; ++r) {
        if (r < m) {
          const float4* xp = reinterpret_cast<const float4*>(x + r * k + kk);
          const float4 a = xp[0], b = xp[1];
          acc[r] += a.x * wv[0] + a.y * wv[1] + a.z * wv[2] + a.w * wv[3] + b.x * wv[4] +
                    b.y * wv[5] + b.z * wv[6] + b.w * wv[7];
        }
      }
    }
  } else {
    for (int64_t kk = lane; kk < k; kk += kWarp) {
      const float wv = quant_element(w, q, code, row_start + static_cast<uint64_t>(kk));
#pragma unroll
      for (int r = 0; r < MaxRows; ++r) {
        if (r < m) acc[r] += x[r * k + kk] * wv;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < MaxRows; ++r) {
    float v = acc[r];
    for (int off = kWarp / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
    if (lane == 0 && r < m) out[r * n + col] = v + (bias != nullptr ? bias[col] : 0.0f);
  }
}

constexpr int kTile = 64;
constexpr int kTileK = 16;

__global__ void quant_gemm_kernel(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                  const float* __restrict__ bias, float* __restrict__ out,
                                  int64_t m, int64_t n, int64_t k, QuantDecode q) {
  __shared__ float code[16];
  __shared__ float xs[kTileK][kTile + 1];  // x tile, k-major
  __shared__ float ws[kTileK][kTile + 1];  // decoded weight tile, k-major
  load_codebook(code);
  const int tid = threadIdx.x;              // 256 threads: 16 x 16, each 4 x 4 outputs
  const int tr = tid / 16, tc = tid % 16;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
    // 1024 elements of each tile, 4 per thread: element e = tid + 256 * j is (row e / 16,
    // k e % 16), so a warp reads 2 rows of 16 consecutive k.
    for (int j = 0; j < 4; ++j) {
      const int e = tid + kThreads * j;
      const int r = e / kTileK, kc = e % kTileK;
      const int64_t gk = k0 + kc;
      const int64_t gr = row0 + r, gc = col0 + r;
      xs[kc][r] = (gr < m && gk < k) ? x[gr * k + gk] : 0.0f;
      ws[kc][r] = (gc < n && gk < k)
                      ? quant_element(w, q, code, static_cast<uint64_t>(gc * k + gk))
                      : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < kTileK; ++kc) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = xs[kc][tr * 4 + i];
        b[i] = ws[kc][tc * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) acc[i][jj] += a[i] * b[jj];
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int64_t r = row0 + tr * 4 + i;
    if (r >= m) continue;
    for (int jj = 0; jj < 4; ++jj) {
      const int64_t c = col0 + tc * 4 + jj;
      if (c < n) out[r * n + c] = acc[i][jj] + (bias != nullptr ? bias[c] : 0.0f);
    }
  }
}

__global__ void quant_embedding_kernel(const uint8_t* __restrict__ w, const void* indices,
                                       bool i64, float* __restrict__ out, int64_t count,
                                       int64_t v, int64_t d, QuantDecode q, int* error_flag) {
  __shared__ float code[16];
  load_codebook(code);
  TERN_CUDA_LOOP(i, count * d) {
    const int64_t t = i / d, col = i % d;
    const int64_t index = i64 ? static_cast<const int64_t*>(indices)[t]
                              : static_cast<int64_t>(static_cast<const int32_t*>(indices)[t]);
    if (index < 0 || index >= v) {
      out[i] = 0.0f;
      atomicOr(error_flag, kErrorIndex);
    } else {
      out[i] = quant_element(w, q, code, static_cast<uint64_t>(index * d + col));
    }
  }
}

}  // namespace

cudaError_t launch_quant_linear(const float* x, const uint8_t* w, const float* bias, float* out,
                                int64_t m, int64_t n, int64_t k, const QuantDecode& q,
                                cudaStream_t stream) {
  if (m <= kQuantGemvMaxRows) {
    const unsigned blocks = static_cast<unsigned>((n + kGemvWarps - 1) / kGemvWarps);
    quant_gemv_kernel<kQuantGemvMaxRows><<<blocks, kGemvWarps * kWarp, 0, stream>>>(
        x, w, bias, out, static_cast<int>(m), n, k, q);
  } else {
    const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                    static_cast<unsigned>((m + kTile - 1) / kTile));
    quant_gemm_kernel<<<grid, kThreads, 0, stream>>>(x, w, bias, out, m, n, k, q);
  }
  return cudaGetLastError();
}

cudaError_t launch_quant_embedding(const uint8_t* w, const void* indices, bool indices_i64,
                                   float* out, int64_t count, int64_t v, int64_t d,
                                   const QuantDecode& q, int* error_flag, cudaStream_t stream) {
  quant_embedding_kernel<<<grid_for(count * d), kThreads, 0, stream>>>(
      w, indices, indices_i64, out, count, v, d, q, error_flag);
  return cudaGetLastError();
}

}  // namespace tern::cuda
