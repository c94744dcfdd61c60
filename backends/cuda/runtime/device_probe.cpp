#include "backends/cuda/runtime/device_probe.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "backends/cuda/runtime/cublaslt_api.h"

namespace tern::cuda {
namespace {

DeviceProbe run_probe() {
  DeviceProbe p;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    const bool no_driver = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
                           e == cudaErrorInitializationError;
    std::snprintf(p.reason, sizeof(p.reason), "%s (cudaGetDeviceCount: %s: %s)",
                  e == cudaErrorNoDevice ? "no CUDA device"
                  : no_driver            ? "no usable CUDA driver"
                                         : "CUDA unavailable",
                  cudaGetErrorName(e), cudaGetErrorString(e));
  } else if (count < 1) {
    std::snprintf(p.reason, sizeof(p.reason), "no CUDA device (cudaGetDeviceCount: 0)");
  } else {
    // cuBLASLt is loaded only once a device is there (cublaslt_api.h): a machine without a
    // GPU never opens it.
    const CublasLtLoad& lt = load_cublaslt();
    if (lt.loaded) {
      p.available = true;
      p.device_count = count;
    } else {
      std::snprintf(p.reason, sizeof(p.reason), "%s", lt.reason);
    }
  }
  return p;
}

}  // namespace

const DeviceProbe& probe_device() {
  static const DeviceProbe probe = run_probe();
  return probe;
}

}  // namespace tern::cuda
