// where(cond, x, y) with a constant condition, as the cpu delegate runs it (internal to
// backends/cpu/compile).
// - One of x / y an f32 activation, the other a constant (an f32 tensor or a number): the
//   constant side is written as two bounds, upper = (take the constant ? k : +inf) and lower =
//   (take the constant ? k : -inf), and out = max(min(activation, upper), lower): exactly the
//   constant where the condition picks it, exactly the activation elsewhere. Two elementwise
//   nodes (ops 36, 35) with constant operands; MPT's ALiBi mask, 1.13's masked softmax.
// - Both activations (of the output's shape): out = max(min(x, upper), min(y, other_upper))
//   with upper = (cond ? +inf : -inf) and other_upper = (cond ? -inf : +inf): the picked side
//   passes its minimum unchanged, the other becomes -inf, and the maximum returns the picked
//   value exactly (infinities included). Three nodes; Funnel's token-type attention bias.
// Exact for any activation value but NaN, which XNNPACK's minimum/maximum may turn into a
// bound.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct WhereSelect {
  int activation = -1;          ///< the f32 activation operand (x, or y when x is a constant)
  int other = -1;               ///< y when both are activations, else -1
  std::vector<int64_t> dims;    ///< the bounds' tern dims: the output's rank, 1 where neither
                                ///< the condition nor the constant varies
  std::vector<float> upper;     ///< row-major over dims
  std::vector<float> lower;        ///< one activation only
  std::vector<float> other_upper;  ///< two activations only: y's bound
};

/// The bounds of where node `node`; throws Unsupported for any other form (a condition that is
/// not a constant bool tensor, two constants, an activation not of the output's shape, a NaN
/// constant, shapes that do not broadcast to the output).
WhereSelect where_select(const Graph& g, const Node& node);

/// Whether where node `node` has a condition that is no constant (a bool activation: made
/// outside the delegate, bool ops are not taken). Such a where is tern's select node (op 44,
/// since version 21): the condition enters as a BoolPlain region input and picks each element
/// of x or y, copied exactly (Apertus' xIELU, XLM's padding mask).
bool is_where_of_activation_condition(const Graph& g, const Node& node);

/// Checks a where of an activation condition: the condition a bool tensor of rank 1..6, x and
/// y f32 activations, f32 constants (0-D too) or numbers, every operand broadcasting to the
/// output (f32, rank 1..6). Throws Unsupported otherwise.
void check_where_of_activation_condition(const Graph& g, const Node& node);

/// Select's mode (cpu::SelectMode 1..6) for a comparison op (tern::gt, ge, lt, le, eq, ne); 0
/// for any other op.
uint32_t select_compare_mode(const std::string& op);

/// A comparison of an f32 activation x with a number (or a 0-D f32 constant) s, fused into the
/// selects that read it (op 44's modes 1..6, since version 22: the bool mask is never made).
/// Checks that every reader of its output, in the whole graph, is a where taking it as its
/// condition that check_where_of_activation_condition accepts, and returns s; throws
/// Unsupported naming what does not hold (another reader: a cast, a logical op, a method
/// output).
float check_fused_comparison(const Graph& g, const Node& node);

/// tril / triu of an f32 activation of rank 2..6 as tern's select (op 44, mode 1: a constant
/// f32 mask over the last two dims, 1 where the triangle keeps x, compared > 0.5; 0 elsewhere):
/// exact, NaN and infinities included. Returns the mask (rows x cols, row-major); throws
/// Unsupported for another form or a mask of more than kMaxTriangleMask elements.
constexpr int64_t kMaxTriangleMask = int64_t{1} << 20;
std::vector<float> triangle_keep_mask(const Graph& g, const Node& node, int64_t* rows,
                                      int64_t* cols);

}  // namespace tern::compiler::cpu_compile
