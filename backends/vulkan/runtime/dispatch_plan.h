// Which shader runs a blob node and with how many workgroups (internal to the vulkan backend):
// the one table a reader scans to see every op the backend runs.
#pragma once

#include <cstdint>

#include "backends/vulkan/runtime/blob_reader.h"
#include "backends/vulkan/shaders/spirv_shaders.h"
#include "runtime/core/error.h"

namespace tern::vulkan {

/// Quantized linears with at most this many rows of x run quant_gemv.comp (its accumulators);
/// more rows run the tiled quant_gemm.comp.
constexpr int32_t kQuantGemvMaxRows = 4;

struct Dispatch {
  ShaderId shader = ShaderId::Unary;
  uint32_t groups[3] = {1, 1, 1};
};

/// The dispatch of node `index` of a validated plan on a device with these workgroup-count
/// limits. 1-D work larger than max_groups[0] groups folds into (x, y). DelegateInvalid-
/// Compatibility (naming the node and the limit) when the device cannot run it.
Error plan_dispatch(const BlobPlan& plan, uint32_t index, const uint32_t max_groups[3],
                    Dispatch* out);

}  // namespace tern::vulkan
