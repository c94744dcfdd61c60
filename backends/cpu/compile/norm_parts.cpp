#include "backends/cpu/compile/norm_parts.h"

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

double small_pow_exponent(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("pow: expected 2 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& e = value_at(g, node.args[1]);
  if (e.kind != Value::Kind::Int && e.kind != Value::Kind::Double) {
    throw Unsupported("pow: the exponent is not a scalar");
  }
  const double v = number(g, node.args[1], "exponent");
  if (v != 2.0 && v != 3.0 && v != 0.5) {
    throw Unsupported("pow: an exponent other than 2, 3 or 0.5");
  }
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("pow: out shape");
  return v;
}

void check_unary_elementwise(const Graph& g, const Node& node) {
  if (node.args.size() != 1) throw Unsupported("expected 1 argument");
  const Value& x = activation_tensor(g, node.args[0], "x");
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("out shape differs from x");
}

bool is_last_dim_mean(const Graph& g, const Node& node, bool* keepdim, bool* sum) {
  if ((node.op != "tern::mean" && node.op != "tern::sum") || node.args.size() != 3) return false;
  if (sum != nullptr) *sum = node.op == "tern::sum";
  const Value& x = value_at(g, node.args[0]);
  if (!x.is_tensor() || x.sizes.size() == 4 || x.sizes.empty()) return false;
  const Value& dims = value_at(g, node.args[1]);
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (dims.kind != Value::Kind::IntList || dims.ints.size() != 1 ||
      (dims.ints[0] != -1 && dims.ints[0] != rank - 1)) {
    return false;
  }
  (void)activation_tensor(g, node.args[0], "x");
  *keepdim = bool_value(g, node.args[2], "keepdim");
  std::vector<int64_t> expect = x.sizes;
  if (*keepdim) {
    expect.back() = 1;
  } else {
    expect.pop_back();
  }
  if (expect.empty() || single_output(g, node).sizes != expect) {
    throw Unsupported(node.op + ": out shape (or a scalar)");
  }
  return true;
}

}  // namespace tern::compiler::cpu_compile
