// NF4 / FP8 weights in the cpu backend's compile half (internal to backends/cpu/compile): which
// quantized linears and embeddings it takes, and their weight constant for ops 23 and 24 of the
// blob (the codes re-laid out by backends/cpu/kernels/quant_weight.h at prepare, by a recipe).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Whether value `id` is a tensor of a quantized dtype (nf4, fp8_e4m3, fp8_e5m2).
bool is_quantized_value(const Graph& g, int id);

/// Checks a tern::linear whose weight is quantized (a constant [N, K] with its parameter
/// tensors; FP8 codes finite) against x [..., K] (not 4-D), the optional f32 bias [N] and the
/// output; throws Unsupported with the reason.
void check_quant_linear(const Graph& g, const Node& node);

/// Checks a tern::embedding whose table is quantized (as above, [V, D]) with int64 indices of
/// rank 1 or 2 that are a region input, and an f32 output [..., D]; throws Unsupported.
void check_quant_embedding(const Graph& g, const Node& node);

/// The size of the blob weight constant (floats of quant_weight.h's layout, made by a
/// QuantWeight recipe at prepare) and the node params (QuantParam indices) of quantized weight
/// value `id` (checked by the functions above).
struct QuantBlobWeight {
  uint64_t floats = 0;
  uint32_t params[cpu::kQuantParamCount] = {};
};
QuantBlobWeight quant_blob_weight(const Graph& g, int id);

}  // namespace tern::compiler::cpu_compile
