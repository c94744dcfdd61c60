// The pieces of RMSNorm and of GPT-2's tanh GELU as the cpu delegate takes them (internal to
// backends/cpu/compile): pow by 2 or 3 (multiplies) or 0.5 (XNNPACK's square root, op 28), rsqrt
// (square root and a divide), tanh (2 · sigmoid(2x) − 1), and mean or sum over the last dim
// (XNNPACK's fully-connected node with a [1, C] filter of 1/C or 1: F.normalize's sum of squares
// too). Every function throws Unsupported on what it does not take.
#pragma once

#include <cstdint>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// pow(x, e) of an f32 activation by a scalar e of 2, 3 or 0.5 (x's shape out): returns e.
double small_pow_exponent(const Graph& g, const Node& node);

/// rsqrt(x) or tanh(x) of an f32 activation (x's shape out).
void check_unary_elementwise(const Graph& g, const Node& node);

/// Whether `node` is mean or sum(x, [-1] or [rank - 1], keepdim) of an f32 activation of rank
/// 1..6 but 4 (then *keepdim says whether the last dim stays, as 1, and *sum which of the two it
/// is); false for other means and sums.
bool is_last_dim_mean(const Graph& g, const Node& node, bool* keepdim, bool* sum = nullptr);

}  // namespace tern::compiler::cpu_compile
