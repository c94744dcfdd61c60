// The pieces of RMSNorm and of GPT-2's tanh GELU as the cpu delegate takes them (internal to
// backends/cpu/compile): pow by 2 or 3 (multiplies) or 0.5 (XNNPACK's square root, op 28), rsqrt
// (square root and a divide), tanh (2 · sigmoid(2x) − 1), and mean or sum over the last dim
// (XNNPACK's fully-connected node with a [1, C] filter of 1/C or 1: F.normalize's sum of squares
// too). Every function throws Unsupported on what it does not take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// pow(x, e) of an f32 activation by a scalar e of 2, 3 or 0.5 (x's shape out): returns e.
double small_pow_exponent(const Graph& g, const Node& node);

/// pow(x, e) by any other finite number e: tern's unary math node (op 38's pow, since blob
/// version 22: the portable kernel's float std::pow, bit for bit). Returns e; throws
/// Unsupported for a tensor exponent or a non-finite one.
float pow_math_exponent(const Graph& g, const Node& node);

/// rsqrt(x) or tanh(x) of an f32 activation (x's shape out).
void check_unary_elementwise(const Graph& g, const Node& node);

/// A mean, sum or max the cpu delegate takes (tern::mean, tern::sum, tern::amax of an f32
/// activation, not to a scalar). The reduced dims must be one contiguous range of x's bytes: consecutive dims of a
/// row-major x (any rank; a plain, channels-last 4-D one too: GRN's sum over H, W of
/// [N, H, W, C], a mean over its channels), or H, W or both of an NHWC 4-D x (keepdim, or both
/// of them: a global pool). Which of the two a 4-D x is, the layout plan decides
/// (check_layout refuses a layout the reduction cannot read).
struct ReductionAttrs {
  std::vector<bool> reduced;  ///< per dim of x
  bool keepdim = false;       ///< the reduced dims stay, as 1
  bool sum = false;           ///< tern::sum
  bool max = false;           ///< tern::amax (neither: tern::mean)
  bool row_major_ok = false;  ///< consecutive dims: x row-major (plain, for a 4-D x)
  bool nhwc_ok = false;       ///< a 4-D x read as NHWC: dims consecutive in N, H, W, C order
};

/// tern::mean, tern::sum or tern::amax.
bool is_reduction_op(const std::string& op);

/// What mean, sum or amax `node` is (out shape checked); throws Unsupported for other dims, a scalar
/// result or a node of another op.
ReductionAttrs reduction_attrs(const Graph& g, const Node& node);

/// reduction_attrs() for a 4-D x, or false (not a mean / sum, malformed, or not 4-D): what the
/// layout plan asks of its input.
bool reduction_of_4d(const Graph& g, const Node& node, ReductionAttrs* attrs);

}  // namespace tern::compiler::cpu_compile
