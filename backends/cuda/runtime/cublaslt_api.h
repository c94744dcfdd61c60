// The cuBLASLt functions the cuda backend calls, loaded at run time (dlopen) the first time a
// CUDA device is found, so that tern does not link libcublasLt (about 500 MB: about 0.25 s per
// process start, paid on machines without a GPU too) and a machine without it still runs the
// portable fallback. Internal to the cuda backend.
#pragma once

#include <cublasLt.h>

#include <cstddef>

namespace tern::cuda {

/// Every cuBLASLt function the backend calls (gemm_plan.cpp, cuda_backend.cpp).
#define TERN_CUBLASLT_FUNCTIONS(X)                                                          \
  X(cublasLtCreate)                                                                         \
  X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)               \
      X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                       \
          X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                \
              X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)          \
                  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) \
                      X(cublasLtMatmul)

/// The resolved entry points (all null until loaded).
struct CublasLtApi {
#define TERN_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  TERN_CUBLASLT_FUNCTIONS(TERN_CUBLASLT_MEMBER)
#undef TERN_CUBLASLT_MEMBER
};

/// Opens `library` (a soname or a path; dlopen, RTLD_NOW | RTLD_LOCAL) and resolves every
/// function of TERN_CUBLASLT_FUNCTIONS into `*api`. On success the library stays open for the
/// life of the process. False with `why` filled otherwise ("libcublasLt.so.13 not found:
/// <dlerror>", "libcublasLt.so.13 has no cublasLtMatmul: <dlerror>"), `*api` left all null.
/// Not cached: load_cublaslt() is the process's copy; tests call this one directly.
bool open_cublaslt(const char* library, CublasLtApi* api, char* why, size_t why_size);

/// The process's cuBLASLt: `loaded`, or `reason` saying why not.
struct CublasLtLoad {
  bool loaded = false;
  char reason[512] = {};
};

/// Loads the process's table once (thread-safe): TERN_CUBLASLT_SONAME (libcublasLt.so.<CUDA
/// major>) through the dynamic linker's search path, then the same name in the build's CUDA
/// toolkit (TERN_CUBLASLT_DIR). The reason names the soname and the first dlerror. Static
/// storage. Called by probe_device() only once a device is found.
const CublasLtLoad& load_cublaslt();

/// The process's table: every member set once load_cublaslt().loaded, all null before.
const CublasLtApi& lt();

}  // namespace tern::cuda
