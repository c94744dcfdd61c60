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

/// The means and sums the cpu delegate takes (tern::mean, tern::sum of an f32 activation):
enum class ReductionKind {
  kLastDim,        ///< over [-1] / [rank - 1] of any rank; a 4-D x must be plain (channels last)
  kSpatialPlain,   ///< over dims {1, 2} of a plain 4-D x [N, H, W, C]: GRN's spatial sum
  kSpatialNhwc,    ///< over dims {2, 3} of an NHWC 4-D x [N, C, H, W]: a global pool
};

struct ReductionAttrs {
  ReductionKind kind = ReductionKind::kLastDim;
  bool keepdim = false;  ///< the reduced dims stay, as 1
  bool sum = false;      ///< tern::sum (else tern::mean)
};

/// What mean or sum `node` is (out shape checked); throws Unsupported for other dims, a scalar
/// result or a node of another op. The layout each kind needs is check_layout's (layout_plan.h).
ReductionAttrs reduction_attrs(const Graph& g, const Node& node);

/// reduction_attrs() for a 4-D x, or false (not a mean / sum, malformed, or not 4-D): what the
/// layout plan asks of its input.
bool reduction_of_4d(const Graph& g, const Node& node, ReductionAttrs* attrs);

}  // namespace tern::compiler::cpu_compile
