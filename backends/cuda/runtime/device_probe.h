// Whether this process can use a CUDA device, probed once (internal to the cuda backend).
#pragma once

namespace tern::cuda {

/// The probe's result: a device is there and cuBLASLt loaded (cublaslt_api.h, opened only once
/// a device is found). `reason` says why not ("no usable CUDA driver (cudaGetDeviceCount:
/// ...)", "no CUDA device", "libcublasLt.so.13 not found: <dlerror>"), empty when available. Static
/// storage; the first call probes (thread-safe) and logs one line when no device can be used.
struct DeviceProbe {
  bool available = false;
  int device_count = 0;
  char reason[512] = {};
};
const DeviceProbe& probe_device();

}  // namespace tern::cuda
