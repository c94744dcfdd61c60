// One cuBLASLt matrix product, described and tuned once at init (internal to the cuda backend).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace tern::cuda {

/// A column-major product D (m x n, ldd) = alpha * op(A) (m x k) * B (k x n) [+ bias (m)],
/// then the activation, over `batch` matrices at the given element strides (0: shared).
/// A row-major product is expressed as its transpose (backends/cuda/README.md, "GEMMs").
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  bool bias = false;
  int activation = 0;  ///< Activation of cuda_blob_format.h: 0 none, 1 relu, 2 GELU (tanh)
  /// Storage of A, B, D and the bias: ValueDType 0 (f32), 1 (f16), 2 (bf16). The product
  /// always accumulates in f32 (CUBLAS_COMPUTE_32F, f32 alpha; no TF32).
  int dtype = 0;
};

/// cuBLASLt descriptors, layouts and the algorithm chosen by its heuristic for one shape.
/// Not copyable; destroy() releases it (also safe on a plan that was never set up).
class GemmPlan {
 public:
  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() { destroy(); }

  /// Creates the descriptors (A, B, D of the shape's dtype, f32 compute: no TF32) and asks the
  /// heuristic for an
  /// algorithm within `workspace_bytes`. DelegateInvalidCompatibility naming `what` when
  /// cuBLASLt offers none; DelegateExecutionFailed on another cuBLASLt error.
  Error setup(cublasLtHandle_t handle, const GemmShape& shape, size_t workspace_bytes,
              const char* what);
  /// Enqueues the product on `stream`; the matrices (and `bias`, m elements, read only when
  /// the shape has one) are of the shape's dtype.
  cublasStatus_t run(cublasLtHandle_t handle, const void* a, const void* b, const void* bias,
                     void* d, float alpha, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream);
  void destroy();

  /// The name of a cuBLAS status ("CUBLAS_STATUS_NOT_SUPPORTED"), for messages.
  static const char* status_string(cublasStatus_t status);

 private:
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool ready_ = false;
};

}  // namespace tern::cuda
