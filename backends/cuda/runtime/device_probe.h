// Whether this process can use a CUDA device, probed once (internal to the cuda backend).
#pragma once

namespace tern::cuda {

/// The probe's result. `reason` says why not ("no CUDA driver (cudaGetDeviceCount: ...)",
/// "no CUDA device"), empty when available. Static storage; the first call probes (thread-safe)
/// and logs one line when no device can be used.
struct DeviceProbe {
  bool available = false;
  int device_count = 0;
  char reason[256] = {};
};
const DeviceProbe& probe_device();

}  // namespace tern::cuda
