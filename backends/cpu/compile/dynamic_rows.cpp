#include "backends/cpu/compile/dynamic_rows.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"

namespace tern::compiler::cpu_compile {

int single_leading_dynamic_dim(const Value& v) {
  int found = -1;
  for (size_t d = 0; d < v.dim_symbols.size(); ++d) {
    if (v.dim_symbols[d] < 0) continue;
    if (found >= 0 || d + 1 == v.sizes.size()) return -1;
    found = static_cast<int>(d);
  }
  return v.sizes.size() == 4 ? -1 : found;
}

namespace {

bool is_elementwise_unary(const std::string& op) {
  return op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp" ||
         op == "tern::leaky_relu" || op == "tern::silu" || op == "tern::sigmoid" ||
         op == "tern::hardswish" || op == "tern::hardsigmoid" || op == "tern::gelu" ||
         op == "tern::tanh" || op == "tern::rsqrt" || op == "tern::sqrt" || op == "tern::abs" ||
         op == "tern::neg" || op == "tern::reciprocal" || op == "tern::pow" ||
         is_unary_math_op(op);
}

bool is_elementwise_binary(const std::string& op) {
  return op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div" ||
         op == "tern::maximum" || op == "tern::minimum";
}

/// The rows of `out` (dims 0..d) that operand `v` must match (dynamic) or broadcast (static).
bool operand_fits(const Value& v, const Value& out, int d, bool broadcast) {
  if (v.is_dynamic()) {
    if (single_leading_dynamic_dim(v) != d || v.dim_symbols[static_cast<size_t>(d)] !=
                                                  out.dim_symbols[static_cast<size_t>(d)]) {
      return false;
    }
    if (v.sizes.size() != out.sizes.size()) return false;
    for (int j = 0; j < d; ++j) {
      if (v.sizes[static_cast<size_t>(j)] != out.sizes[static_cast<size_t>(j)]) return false;
    }
    return true;
  }
  if (!broadcast) return false;
  // A static operand, right-aligned against out: 1 in every dim up to d that it has.
  const int64_t shift = static_cast<int64_t>(out.sizes.size()) - static_cast<int64_t>(v.sizes.size());
  if (shift < 0) return false;
  for (size_t j = 0; j < v.sizes.size(); ++j) {
    if (static_cast<int64_t>(j) + shift <= d && v.sizes[j] != 1) return false;
  }
  return true;
}

}  // namespace

bool is_dynamic_rows_map(const Graph& g, const Node& node) {
  if (node.outputs.size() != 1) return false;
  const Value& out = g.values[static_cast<size_t>(node.outputs[0])];
  if (!out.is_tensor()) return false;
  const int d = single_leading_dynamic_dim(out);
  if (d < 0) return false;
  const std::string& op = node.op;
  const bool binary = is_elementwise_binary(op);
  const bool reduction = is_reduction_op(op);
  const bool norm = op == "tern::layer_norm" || op == "tern::rms_norm";  // over the last dim
  if (!binary && !reduction && !norm && !is_elementwise_unary(op) && op != "tern::linear" &&
      op != "tern::softmax" && !is_cpu_view_op(op)) {
    return false;
  }
  bool any_dynamic_input = false;
  for (size_t i = 0; i < node.args.size(); ++i) {
    const int a = node.args[i];
    if (a < 0) continue;
    const Value& v = g.values[static_cast<size_t>(a)];
    if (!v.is_tensor()) continue;
    const bool dynamic = v.is_dynamic();
    any_dynamic_input = any_dynamic_input || dynamic;
    if (is_cpu_view_op(op)) {
      // A view moves no bytes: the actual elements stay the first ones whichever dim varies
      // ([1, seq, H] -> [seq, H] around a linear), as long as the same symbol does.
      const int dx = single_leading_dynamic_dim(v);
      if (i != 0 || dx < 0 ||
          v.dim_symbols[static_cast<size_t>(dx)] != out.dim_symbols[static_cast<size_t>(d)]) {
        return false;
      }
      continue;
    }
    if (reduction) {
      // x: varies in dim d like out and keeps the dims before it; the reduced or reshaped dims
      // all come after d (out's d is a dynamic dim before its last, and the dims before match).
      if (i != 0 || !dynamic || single_leading_dynamic_dim(v) != d ||
          v.dim_symbols[static_cast<size_t>(d)] != out.dim_symbols[static_cast<size_t>(d)]) {
        return false;
      }
      for (int j = 0; j < d; ++j) {
        if (v.sizes[static_cast<size_t>(j)] != out.sizes[static_cast<size_t>(j)]) return false;
      }
      continue;
    }
    if ((op == "tern::linear" || norm) && i > 0) continue;  // constant weights and biases
    if (!operand_fits(v, out, d, binary)) return false;
  }
  if (!any_dynamic_input) return false;
  if (op == "tern::linear") {
    const Value& x = g.values[static_cast<size_t>(node.args[0])];
    return x.sizes.size() >= 2;
  }
  if (op == "tern::softmax") {
    if (node.args.size() != 2) return false;
    int64_t dim = int_value(g, node.args[1], "dim");
    if (dim < 0) dim += static_cast<int64_t>(out.sizes.size());
    return dim + 1 == static_cast<int64_t>(out.sizes.size());
  }
  return true;
}

}  // namespace tern::compiler::cpu_compile
