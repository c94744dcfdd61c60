// A mixture of experts' products (tern::grouped_mm, and tern::grouped_linear with nf4 / fp8
// experts): rows [ends[e - 1], ends[e]) of x times expert e's matrix, rows after the last end
// zeros. The ends are read on the device, so the launch does not depend on them (a captured
// CUDA graph replays for any routing): grid.y has one block row per expert plus one for the
// tail rows, and an expert's blocks walk its rows in steps of kGroupRows, reading the expert's
// weights once per step. A decode step (a few rows over a few experts) reads only the weights
// of the experts its rows picked; blocks of empty experts return at once. Ends that go
// backwards or past S set kErrorGroupEnds in the error flag (the ranges are clamped so that no
// access leaves its buffer; execute then fails naming the condition).
#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/quant_decode.h"

namespace tern::cuda {
namespace {

constexpr int kGroupRows = 4;  // rows of x per pass over an expert's weights
constexpr int kWarp = 32;
constexpr int kQuantWarps = 8;  // output columns per block of the quantized kernel
__constant__ float kNf4CodeGrouped[16] = {TERN_NF4_CODE_VALUES};

__device__ __forceinline__ int64_t end_at(const void* ends, bool i64, int64_t e) {
  return i64 ? static_cast<const int64_t*>(ends)[e]
             : static_cast<int64_t>(static_cast<const int32_t*>(ends)[e]);
}

/// Rows [lo, hi) of group e, clamped into [0, s] with hi >= lo.
__device__ __forceinline__ void group_rows(const void* ends, bool i64, int64_t e, int64_t s,
                                           int64_t* lo, int64_t* hi) {
  int64_t a = e == 0 ? 0 : end_at(ends, i64, e - 1);
  int64_t b = end_at(ends, i64, e);
  a = a < 0 ? 0 : (a > s ? s : a);
  b = b < a ? a : (b > s ? s : b);
  *lo = a;
  *hi = b;
}

/// The tail block row (blockIdx.y == groups): zeros rows [last end, s) of its columns; its
/// first thread checks the ends.
template <typename T>
__device__ void tail_rows(const void* ends, bool i64, int64_t groups, int64_t s, int64_t n,
                          int64_t col, T* out, int* error_flag) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int64_t prev = 0;
    for (int64_t e = 0; e < groups; ++e) {
      const int64_t v = end_at(ends, i64, e);
      if (v < prev || v > s) {
        atomicOr(error_flag, kErrorGroupEnds);
        break;
      }
      prev = v;
    }
  }
  int64_t last = end_at(ends, i64, groups - 1);
  last = last < 0 ? 0 : (last > s ? s : last);
  if (col >= n) return;
  for (int64_t r = last; r < s; ++r) out[r * n + col] = from_f<T>(0.0f);
}

/// w [E, K, N] row-major: one thread per output column (consecutive threads read consecutive
/// weights of one row of w).
template <typename T>
__global__ void grouped_mm_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                  const void* ends, bool i64, T* __restrict__ out, int64_t s,
                                  int64_t k, int64_t n, int64_t groups, int* error_flag) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t e = blockIdx.y;
  if (e == groups) {
    tail_rows<T>(ends, i64, groups, s, n, col, out, error_flag);
    return;
  }
  int64_t lo, hi;
  group_rows(ends, i64, e, s, &lo, &hi);
  if (col >= n) return;
  const T* we = w + static_cast<uint64_t>(e) * static_cast<uint64_t>(k * n) + col;
  for (int64_t r0 = lo; r0 < hi; r0 += kGroupRows) {
    const int rows = hi - r0 < kGroupRows ? static_cast<int>(hi - r0) : kGroupRows;
    float acc[kGroupRows] = {};
    for (int64_t kk = 0; kk < k; ++kk) {
      const float wv = to_f(we[kk * n]);
#pragma unroll
      for (int j = 0; j < kGroupRows; ++j) {
        if (j < rows) acc[j] += to_f(x[(r0 + j) * k + kk]) * wv;
      }
    }
    for (int j = 0; j < rows; ++j) out[(r0 + j) * n + col] = from_f<T>(acc[j]);
  }
}

/// w the quantized [E·N, K]: one warp per output column (expert e's row e N + col of w),
/// its lanes striding over K as quant_linear.cu's GEMV, a shuffle reduction per row of x.
__global__ void quant_grouped_kernel(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                     const void* ends, bool i64, float* __restrict__ out,
                                     int64_t s, int64_t n, int64_t k, int64_t groups,
                                     QuantDecode q, int* error_flag) {
  __shared__ float code[16];
  if (threadIdx.x < 16) code[threadIdx.x] = kNf4CodeGrouped[threadIdx.x];
  __syncthreads();
  const int lane = threadIdx.x % kWarp;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kQuantWarps + threadIdx.x / kWarp;
  const int64_t e = blockIdx.y;
  if (e == groups) {
    // One thread per column of the tail rows (the block's first kQuantWarps columns' worth of
    // threads cover kThreads columns: index by thread, not by warp).
    const int64_t tail_col = static_cast<int64_t>(blockIdx.x) * kQuantWarps + threadIdx.x;
    tail_rows<float>(ends, i64, groups, s, n,
                     threadIdx.x < kQuantWarps ? tail_col : n, out, error_flag);
    return;
  }
  int64_t lo, hi;
  group_rows(ends, i64, e, s, &lo, &hi);
  if (col >= n) return;
  const uint64_t row_start = static_cast<uint64_t>(e * n + col) * static_cast<uint64_t>(k);
  for (int64_t r0 = lo; r0 < hi; r0 += kGroupRows) {
    const int rows = hi - r0 < kGroupRows ? static_cast<int>(hi - r0) : kGroupRows;
    const float* xr = x + r0 * k;
    float acc[kGroupRows] = {};
    if (k % 8 == 0) {
      for (int64_t kk = 8 * lane; kk < k; kk += 8 * kWarp) {
        float wv[8];
        quant_element8(w, q, code, row_start + static_cast<uint64_t>(kk), wv);
#pragma unroll
        for (int j = 0; j < kGroupRows; ++j) {
          if (j < rows) {
            const float* xp = xr + j * k + kk;
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[j] += xp[i] * wv[i];
          }
        }
      }
    } else {
      for (int64_t kk = lane; kk < k; kk += kWarp) {
        const float wv = quant_element(w, q, code, row_start + static_cast<uint64_t>(kk));
#pragma unroll
        for (int j = 0; j < kGroupRows; ++j) {
          if (j < rows) acc[j] += xr[j * k + kk] * wv;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kGroupRows; ++j) {
      float v = acc[j];
      for (int off = kWarp / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
      if (lane == 0 && j < rows) out[(r0 + j) * n + col] = v;
    }
  }
}

}  // namespace

cudaError_t launch_grouped_matmul(FloatType ft, const void* x, const void* w, const void* ends,
                                  bool ends_i64, void* out, int64_t s, int64_t k, int64_t n,
                                  int64_t groups, int* error_flag, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads),
                  static_cast<unsigned>(groups + 1));
  TERN_FLOAT_DISPATCH(ft, grouped_mm_kernel<T><<<grid, kThreads, 0, stream>>>(
                              static_cast<const T*>(x), static_cast<const T*>(w), ends, ends_i64,
                              static_cast<T*>(out), s, k, n, groups, error_flag));
  return cudaGetLastError();
}

cudaError_t launch_quant_grouped_linear(const float* x, const uint8_t* w, const void* ends,
                                        bool ends_i64, float* out, int64_t s, int64_t n,
                                        int64_t k, int64_t groups, const QuantDecode& q,
                                        int* error_flag, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + kQuantWarps - 1) / kQuantWarps),
                  static_cast<unsigned>(groups + 1));
  quant_grouped_kernel<<<grid, kQuantWarps * kWarp, 0, stream>>>(x, w, ends, ends_i64, out, s,
                                                                   n, k, groups, q, error_flag);
  return cudaGetLastError();
}

}  // namespace tern::cuda
