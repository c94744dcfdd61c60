// A quantized (nf4 / fp8) weight as a vulkan blob constant (internal to backends/vulkan/compile):
// the program's packed codes and parameter arrays copied unchanged into one ValueType::Quant
// constant in QuantLayout order (vulkan_blob_format.h), and the scheme as node params.
#pragma once

#include <cstdint>

#include "backends/vulkan/compile/blob_writer.h"
#include "tools/compiler/quant_weight_scheme.h"

namespace tern::compiler::vulkan_compile {

/// What ops 14 and 15 need of a quantized weight.
struct QuantWeightRef {
  uint32_t value = vulkan::kNoValue;  ///< the blob constant
  int64_t rows = 0, cols = 0;         ///< the weight's [rows, cols]
  /// params[vulkan::kQFormat .. vulkan::kQCols] (the rest 0) and fparams[0] (dq offset).
  int32_t params[vulkan::kNodeParams] = {};
  float dq_offset = 0.0f;
};

/// True when graph tensor `id` is an nf4 / fp8_e4m3 / fp8_e5m2 tensor.
bool is_quantized_tensor(const Graph& g, int id);

/// The blob constant of quantized constant `id` (made once per weight, shared by every node
/// that reads it). Unsupported when it is not a rank-2 constant with a scheme the shaders take,
/// when a parameter tensor is missing or of the wrong dtype / size, when the packed data is
/// short, or when an FP8 code is a NaN / infinity encoding (such weights stay on the portable
/// kernels).
QuantWeightRef quant_weight(BlobBuilder& b, int id);

/// `params` of a node with the scheme of `w` filled in at vulkan::kQFormat.. (`params` grown to
/// kNodeParams entries).
void put_quant_params(const QuantWeightRef& w, std::vector<int32_t>* params);

}  // namespace tern::compiler::vulkan_compile
