// Linear / matmul / embedding nodes whose weight is a quantized (nf4 / fp8) constant, as the
// cuda blob's QuantLinear and QuantEmbedding (internal to backends/cuda/compile). The weight
// becomes a blob constant of dtype Nf4 / Fp8E4M3 / Fp8E5M2 whose device buffer the runtime
// fills at prepare from the argument's codes and scheme tensors (quant::QuantLayout).
#pragma once

#include <cstdint>

#include "backends/cuda/compile/node_lowering.h"

namespace tern::compiler::cuda_compile {

/// True when `node` (linear, matmul, embedding, grouped_linear) reads an nf4/fp8 weight:
/// lower_node then gives QuantLinear / QuantEmbedding / QuantGroupedLinear, which only f32 blobs take.
bool reads_quantized_weight(const Graph& g, const Node& node);

/// QuantLinear for tern::linear (weight [N, K]) or tern::matmul (b [K, N] quantized: not
/// taken, the kernels read the weight row-major as [N, K]); Unsupported with the reason.
NodeLowering lower_quant_linear(const Graph& g, const Node& node);

/// QuantGroupedLinear for tern::grouped_linear with quantized experts w [E·N, K].
NodeLowering lower_quant_grouped_linear(const Graph& g, const Node& node);

/// QuantEmbedding for tern::embedding with a quantized table.
NodeLowering lower_quant_embedding(const Graph& g, const Node& node);

/// The device bytes of quantized constant `id` (its QuantLayout buffer).
uint64_t quant_weight_device_bytes(const Graph& g, int id);

}  // namespace tern::compiler::cuda_compile
