// A mixture of experts' MLP for the backends' grouped-product tests (cpu_quant_grouped_test,
// vulkan_grouped_test, cuda_grouped_test): x [rows, dim] -> grouped_mm(experts.w1 [experts,
// dim, hidden]) -> relu -> grouped_mm(experts.w2 [experts, hidden, out]), the group ends an
// input of dtype `ends` (the routing runs outside the delegates: int32 as transformers makes
// them, or int64). Inputs: x, then ends; output: y [rows, out].
#pragma once

#include <cstdint>

#include "tests/support/backend_test_values.h"
#include "tools/compiler/graph_builder.h"

namespace tern::test_support {

struct MoeShape {
  int64_t rows, experts, dim, hidden, out;
};

/// The model's graph (random weights, seeds 1 and 2, in [-0.2, 0.2] and [-0.2, 0.2]·scale).
inline compiler::Graph moe_mlp(const MoeShape& s, DType ends, float scale = 1.0f) {
  compiler::GraphBuilder g;
  const int x = g.input("x", DType::F32, {s.rows, s.dim});
  const int e = g.input("ends", ends, {s.experts});
  const int w1 = g.constant_f32("experts.w1", {s.experts, s.dim, s.hidden},
                                random_floats(s.experts * s.dim * s.hidden, 1, -0.2f * scale,
                                              0.2f * scale));
  const int w2 = g.constant_f32("experts.w2", {s.experts, s.hidden, s.out},
                                random_floats(s.experts * s.hidden * s.out, 2, -0.2f * scale,
                                              0.2f * scale));
  const int h = g.op("tern::grouped_mm", {x, w1, e}, DType::F32, {s.rows, s.hidden});
  const int r = g.op("tern::relu", {h}, DType::F32, {s.rows, s.hidden});
  g.output(g.op("tern::grouped_mm", {r, w2, e}, DType::F32, {s.rows, s.out}));
  return g.build();
}

}  // namespace tern::test_support
