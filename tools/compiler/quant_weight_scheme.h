// A quantized (nf4 / fp8) constant of a graph as the GPU backends' compile halves take it: its
// scheme in quant::QuantLayout terms (runtime/kernels/util/quant_buffer_layout.h) and its
// parameter tensors, checked once here for the vulkan and cuda backends alike.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "runtime/kernels/util/quant_buffer_layout.h"
#include "tools/compiler/graph.h"

namespace tern::compiler {

/// Why a quantized constant cannot go to a GPU backend (the caller rethrows it as its own
/// "unsupported" reason).
class QuantWeightRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The scheme and data of a rank-2 quantized constant [rows, cols].
struct QuantWeightScheme {
  quant::QuantFormat format = quant::QuantFormat::Nf4;
  int64_t block_size = 0;     ///< NF4 block; 0 for FP8
  int64_t dq_block_size = 0;  ///< NF4 double quantization; else 0
  quant::QuantGranularity granularity = quant::QuantGranularity::PerTensor;  ///< FP8
  int64_t block_rows = 0, block_cols = 0;  ///< FP8 Block2D tile; else 0
  float dq_offset = 0.0f;     ///< NF4 double quantization; else 0
  int64_t rows = 0, cols = 0;
  quant::QuantLayout layout;
  uint64_t code_bytes = 0;    ///< packed codes: NF4 (rows * cols + 1) / 2, FP8 rows * cols
  /// The graph's bytes of the codes and of the parameter tensors the format has (the others
  /// null): absmax (NF4), dq_codes + dq_absmax2 + dq_table (double quantization), scale (FP8).
  const ConstantBytes* codes = nullptr;
  const ConstantBytes* absmax = nullptr;
  const ConstantBytes* dq_codes = nullptr;
  const ConstantBytes* dq_absmax2 = nullptr;
  const ConstantBytes* dq_table = nullptr;
  const ConstantBytes* scale = nullptr;
};

/// True when graph value `id` is an nf4 / fp8_e4m3 / fp8_e5m2 tensor.
bool is_quantized_weight(const Graph& g, int id);

/// The scheme of quantized constant `id`. QuantWeightRefused (naming the weight) when it is not
/// a rank-2 constant of at most 2^30 elements with an nf4/fp8 scheme quant::quant_layout takes,
/// when a parameter tensor is missing or of the wrong dtype / length, when the packed codes are
/// short, or when an FP8 code is a NaN or infinity encoding.
QuantWeightScheme quant_weight_scheme(const Graph& g, int id);

/// The weight's whole device buffer (quant::QuantLayout order, 4 * total_words bytes).
std::vector<uint8_t> quant_weight_buffer(const QuantWeightScheme& s);

}  // namespace tern::compiler
