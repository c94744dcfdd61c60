// Masks and dtype changes: compare / logical (-> bool), where (bool -> float), cast (any ->
// any). Values of any ValueDType are read through load_value (ints exactly, floats as f32).
#include "backends/cuda/kernels/grid.cuh"

namespace tern::cuda {
namespace {

/// One element of a ValueDType tensor: integers and bools as `i` (exact), floats as `f`.
struct Element {
  bool is_int;
  int64_t i;
  float f;
  __device__ double as_double() const { return is_int ? static_cast<double>(i) : f; }
  __device__ bool truth() const { return is_int ? i != 0 : f != 0.0f; }  // NaN is true
};

__device__ inline Element load_value(int dtype, const void* p, int64_t at) {
  switch (dtype) {
    case 1: return {false, 0, to_f(static_cast<const __half*>(p)[at])};
    case 2: return {false, 0, to_f(static_cast<const __nv_bfloat16*>(p)[at])};
    case 3: return {true, static_cast<const int64_t*>(p)[at], 0.0f};
    case 4: return {true, static_cast<const int32_t*>(p)[at], 0.0f};
    case 8: return {true, static_cast<const bool*>(p)[at] ? 1 : 0, 0.0f};
    default: return {false, 0, static_cast<const float*>(p)[at]};
  }
}

__device__ inline void store_value(int dtype, void* p, int64_t at, const Element& e) {
  switch (dtype) {
    case 1: static_cast<__half*>(p)[at] = from_f<__half>(e.is_int ? static_cast<float>(e.i) : e.f); break;
    case 2:
      static_cast<__nv_bfloat16*>(p)[at] =
          from_f<__nv_bfloat16>(e.is_int ? static_cast<float>(e.i) : e.f);
      break;
    case 3: static_cast<int64_t*>(p)[at] = e.is_int ? e.i : static_cast<int64_t>(e.f); break;
    case 4:
      static_cast<int32_t*>(p)[at] =
          static_cast<int32_t>(e.is_int ? e.i : static_cast<int64_t>(e.f));
      break;
    case 8: static_cast<bool*>(p)[at] = e.truth(); break;
    default: static_cast<float*>(p)[at] = e.is_int ? static_cast<float>(e.i) : e.f; break;
  }
}

/// The element offsets of output element i in each of `count` broadcast operands.
__device__ inline void offsets(const Broadcast3& s, int64_t i, int count, int64_t* at) {
  for (int k = 0; k < count; ++k) at[k] = 0;
  int64_t rest = i;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t c = rest % s.dims[d];
    rest /= s.dims[d];
    for (int k = 0; k < count; ++k) at[k] += c * s.strides[k][d];
  }
}

__global__ void compare_kernel(int op, int dtype, const void* a, const void* b, float scalar,
                               bool* out, int64_t n, Broadcast3 s) {
  TERN_CUDA_LOOP(i, n) {
    int64_t at[2];
    offsets(s, i, 2, at);
    const Element ea = load_value(dtype, a, at[0]);
    const Element eb = b != nullptr ? load_value(dtype, b, at[1]) : Element{false, 0, scalar};
    bool r = false;
    if (ea.is_int && eb.is_int) {  // exact
      switch (op) {
        case 0: r = ea.i == eb.i; break;
        case 1: r = ea.i != eb.i; break;
        case 2: r = ea.i < eb.i; break;
        case 3: r = ea.i <= eb.i; break;
        case 4: r = ea.i > eb.i; break;
        case 5: r = ea.i >= eb.i; break;
      }
    } else {
      const double x = ea.as_double(), y = eb.as_double();
      switch (op) {
        case 0: r = x == y; break;
        case 1: r = x != y; break;
        case 2: r = x < y; break;
        case 3: r = x <= y; break;
        case 4: r = x > y; break;
        case 5: r = x >= y; break;
      }
    }
    if (op == 6) r = ea.truth() && eb.truth();
    if (op == 7) r = ea.truth() || eb.truth();
    out[i] = r;
  }
}

template <typename T>
__global__ void where_kernel(const bool* cond, const T* a, const T* b, float sa, float sb, T* out,
                             int64_t n, Broadcast3 s) {
  TERN_CUDA_LOOP(i, n) {
    int64_t at[3];
    offsets(s, i, 3, at);
    if (cond[at[0]]) {
      out[i] = a != nullptr ? a[at[1]] : from_f<T>(sa);
    } else {
      out[i] = b != nullptr ? b[at[2]] : from_f<T>(sb);
    }
  }
}

__global__ void cast_kernel(int from, int to, const void* x, void* out, int64_t n) {
  TERN_CUDA_LOOP(i, n) { store_value(to, out, i, load_value(from, x, i)); }
}

}  // namespace

cudaError_t launch_compare(int op, int dtype, const void* a, const void* b, float scalar,
                           bool* out, int64_t n, const Broadcast3& s, cudaStream_t stream) {
  compare_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, dtype, a, b, scalar, out, n, s);
  return cudaGetLastError();
}

cudaError_t launch_where(FloatType ft, const void* cond, const void* a, const void* b,
                         float scalar_a, float scalar_b, void* out, int64_t n,
                         const Broadcast3& s, cudaStream_t stream) {
  TERN_FLOAT_DISPATCH(ft, where_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
                              static_cast<const bool*>(cond), static_cast<const T*>(a),
                              static_cast<const T*>(b), scalar_a, scalar_b, static_cast<T*>(out),
                              n, s));
  return cudaGetLastError();
}

cudaError_t launch_cast(int from, int to, const void* x, void* out, int64_t n,
                        cudaStream_t stream) {
  cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(from, to, x, out, n);
  return cudaGetLastError();
}

}  // namespace tern::cuda
