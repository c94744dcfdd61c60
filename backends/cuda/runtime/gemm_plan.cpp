#include "backends/cuda/runtime/gemm_plan.h"

#include "backends/cuda/runtime/cublaslt_api.h"

namespace tern::cuda {
namespace {

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      break;
  }
  return "cuBLAS status (other)";
}

cudaDataType_t data_type(int dtype) {
  return dtype == 1 ? CUDA_R_16F : dtype == 2 ? CUDA_R_16BF : CUDA_R_32F;
}

cublasStatus_t make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows,
                           int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasStatus_t s = lt().cublasLtMatrixLayoutCreate(
      layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
  if (s != CUBLAS_STATUS_SUCCESS || batch <= 1) return s;
  const int32_t count = static_cast<int32_t>(batch);
  s = lt().cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count));
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return lt().cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof(stride));
}

}  // namespace

Error GemmPlan::setup(cublasLtHandle_t handle, const GemmShape& g, size_t workspace_bytes,
                      const char* what) {
  destroy();
  cublasStatus_t s = lt().cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t ta = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = CUBLAS_OP_N;
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  }
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.activation == 1)
    epilogue = g.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (g.activation == 2)
    epilogue = g.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (g.bias)
    epilogue = CUBLASLT_EPILOGUE_BIAS;
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof(epilogue));
  }
  const cudaDataType_t type = data_type(g.dtype);
  if (s == CUBLAS_STATUS_SUCCESS && g.bias) {
    const cudaDataType_t bias_type = type;
    s = lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                            sizeof(bias_type));
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = g.transpose_a ? make_layout(&a_, type, g.k, g.m, g.lda, g.batch, g.stride_a)
                      : make_layout(&a_, type, g.m, g.k, g.lda, g.batch, g.stride_a);
  }
  if (s == CUBLAS_STATUS_SUCCESS) s = make_layout(&b_, type, g.k, g.n, g.ldb, g.batch, g.stride_b);
  if (s == CUBLAS_STATUS_SUCCESS) s = make_layout(&d_, type, g.m, g.n, g.ldd, g.batch, g.stride_d);
  if (s != CUBLAS_STATUS_SUCCESS) {
    destroy();
    return set_error_message(Error::DelegateExecutionFailed,
                             "cuda backend: %s: cuBLASLt descriptors: %s", what, status_name(s));
  }
  cublasLtMatmulPreference_t pref = nullptr;
  s = lt().cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t ws = workspace_bytes;
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof(ws));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = lt().cublasLtMatmulAlgoGetHeuristic(handle, op_, a_, b_, d_, d_, pref, 1, &result, &found);
  }
  if (pref != nullptr) lt().cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found < 1) {
    destroy();
    return set_error_message(
        Error::DelegateInvalidCompatibility,
        "cuda backend: %s: cuBLASLt has no algorithm for m %lld, n %lld, k %lld, batch %lld "
        "(%s)",
        what, static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
        static_cast<long long>(g.batch),
        s != CUBLAS_STATUS_SUCCESS ? status_name(s) : "no heuristic result");
  }
  algo_ = result.algo;
  ready_ = true;
  return Error::Ok;
}

cublasStatus_t GemmPlan::run(cublasLtHandle_t handle, const void* a, const void* b,
                             const void* bias, void* d, float alpha, void* workspace,
                             size_t workspace_bytes, cudaStream_t stream) {
  if (!ready_) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bias != nullptr) {
    const cublasStatus_t s = lt().cublasLtMatmulDescSetAttribute(
        op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  const float beta = 0.0f;
  return lt().cublasLtMatmul(handle, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_,
                             workspace, workspace_bytes, stream);
}

const char* GemmPlan::status_string(cublasStatus_t status) { return status_name(status); }

void GemmPlan::destroy() {
  if (d_ != nullptr) lt().cublasLtMatrixLayoutDestroy(d_);
  if (b_ != nullptr) lt().cublasLtMatrixLayoutDestroy(b_);
  if (a_ != nullptr) lt().cublasLtMatrixLayoutDestroy(a_);
  if (op_ != nullptr) lt().cublasLtMatmulDescDestroy(op_);
  op_ = nullptr;
  a_ = b_ = d_ = nullptr;
  ready_ = false;
}

}  // namespace tern::cuda
