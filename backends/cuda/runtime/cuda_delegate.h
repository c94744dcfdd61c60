// The per-delegate state of the cuda backend (internal): created at init, bound and captured
// at prepare, replayed at execute, freed at destroy.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/runtime/blob_reader.h"
#include "backends/cuda/runtime/gemm_plan.h"

namespace tern::cuda {

/// cuBLASLt workspace per delegate.
constexpr size_t kLtWorkspaceBytes = size_t{8} << 20;

/// Device buffers of one delegate (each one allocation through device_allocator()).
struct DeviceBuffers {
  uint8_t* arena = nullptr;      ///< header.arena_bytes: activations, inputs, outputs
  uint8_t* weights = nullptr;    ///< header.weights_bytes: constants, uploaded at prepare
  uint8_t* workspace = nullptr;  ///< header.workspace_bytes: im2col columns, attention scores
  void* lt_workspace = nullptr;  ///< kLtWorkspaceBytes for cuBLASLt
  int* error_flag = nullptr;     ///< one int: an embedding index was out of range
};

struct CudaDelegate {
  BlobPlan plan;
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffers buffers;
  /// Two GEMM plans per node (Gemm and Conv2d use the first; Attention both).
  GemmPlan* gemms = nullptr;
  /// Whether any node raises the error flag (Embedding).
  bool uses_error_flag = false;
  bool has_grouped_nodes = false;  ///< GroupedMatmul / QuantGroupedLinear: ends checked at execute
  /// Set at prepare: weights uploaded, graph captured (or launched directly when capture
  /// failed).
  bool prepared = false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  /// Host copy of *error_flag after each execute.
  int host_error_flag = 0;
  /// Bytes of buffers.weights: the blob's weights_bytes, or with zero copy the constants that
  /// are copied after all (set at prepare).
  uint64_t weights_bytes = 0;
  /// Zero-copy weights (TERN_CUDA_ZERO_COPY=1 on an integrated GPU, docs/jetson.md): decided at
  /// init; at prepare every constant gets its device address in constant_ptrs (num_values
  /// entries): its host bytes used in place, or its spot in a compact weights buffer.
  bool zero_copy = false;
  void** constant_ptrs = nullptr;
  /// The host ranges this delegate holds in host_range_registry() (constants used in place).
  const void** held_data = nullptr;
  uint64_t* held_bytes = nullptr;
  uint32_t num_held = 0;
};

/// Device address of value `v` of the delegate's plan.
inline void* value_ptr(const CudaDelegate& d, uint32_t v) {
  const BlobValue& value = d.plan.values[v];
  if (value.kind != static_cast<uint32_t>(ValueKind::Constant)) return d.buffers.arena + value.offset;
  if (d.constant_ptrs != nullptr) return d.constant_ptrs[v];
  return d.buffers.weights + value.offset;
}

/// Sets up the GEMM plans of every node that needs them (init). Errors as GemmPlan::setup.
Error plan_gemms(CudaDelegate& d);

/// Enqueues every node of the delegate on its stream (the error-flag reset first), as
/// prepare's graph capture and the uncaptured path run it. DelegateExecutionFailed naming the
/// node on a launch or cuBLASLt error.
Error enqueue_nodes(CudaDelegate& d);

}  // namespace tern::cuda
