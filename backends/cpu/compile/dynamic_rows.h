// Which nodes the cpu delegate takes on bounded-dynamic values (docs/dynamic-shapes.md;
// backends/cpu/README.md "Bounded-dynamic rows"). A dynamic value varies in one dim d before its
// last and is not 4-D; its buffer is sized at the bound and its actual elements are the first
// ones (the dims up to d run over fewer "rows", each row the same width). The delegate takes a
// node on such values only when it is a rows map: output row i depends on row i of its dynamic
// inputs alone, and every static operand is the same for every row. XNNPACK's nodes then run
// all the bound's rows (the rows past the actual ones are never read back) and tern's GEMMs
// the actual rows.
#pragma once

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// The dim of `v` with a dynamic symbol when there is exactly one, it is not the last and `v`
/// is not 4-D (a 4-D tensor may be kept NHWC in the delegate); else -1.
int single_leading_dynamic_dim(const Value& v);

/// Whether `node`, which reads or makes a dynamic value, is a rows map the delegate takes:
/// a linear (x and out varying in the same dim), an elementwise unary op, a binary op whose
/// dynamic operands have the output's dims up to d and whose static operands are 1 there
/// (broadcast over the rows), a mean / sum / max over dims after d, a softmax, layer norm or
/// RMS norm over the last dim, or a view (its input may vary in another dim: a view moves no
/// bytes, so the actual elements stay the first ones). Every dynamic value it touches varies
/// by the same symbol.
/// (The node's static checks are supports()' business.)
bool is_dynamic_rows_map(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
