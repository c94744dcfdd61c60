// grouped_mm as the cpu delegate runs it (internal to backends/cpu/compile): tern's
// GroupedMatmul node (op 46, since blob version 23) multiplies each group of x's rows, cut by
// run-time ends, by its own constant matrix, packed once at prepare. Mixture-of-experts layers
// whose tokens are sorted by expert (transformers' grouped experts: Mixtral, Qwen3-MoE, OLMoE,
// gpt-oss and the others); the routing that makes the ends (top-k, argsort, histc, cumsum) stays
// on the portable kernels, and the ends enter the delegate as an int32 or int64 input.
#pragma once

#include <cstdint>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct GroupedMatmulAttrs {
  int x = -1;     ///< [S, K] f32 activation
  int w = -1;     ///< [E, K, N] f32 constant (not quantized)
  int ends = -1;  ///< [E] int32 / int64 tensor made outside the delegate
  int64_t rows = 0, k = 0, n = 0, groups = 0;
  bool int32_ends = false;
};

/// The attributes of a tern::grouped_linear node whose w is quantized (what `tern compile
/// --quantize` makes of a grouped_mm: w [E N, K] nf4 / fp8, each expert transposed): x, w, the
/// ends, S, K, N and E as above; throws Unsupported for another form, and when the experts do
/// not split the weight's layout (kernels/quant_weight.h, quant_rows_split_ok: N a multiple of
/// 8 starting the NF4 blocks, double quantization's groups and FP8 tiles) — those stay portable.
GroupedMatmulAttrs quant_grouped_attrs(const Graph& g, const Node& node);

/// The attributes of a tern::grouped_mm node; throws Unsupported for another form: x not a
/// 2-D f32 activation, w not a 3-D f32 constant (or quantized), the ends a constant or not a
/// 1-D int32 / int64 tensor of E elements, dims above 2^30, an output other than [S, N].
GroupedMatmulAttrs grouped_matmul_attrs(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
