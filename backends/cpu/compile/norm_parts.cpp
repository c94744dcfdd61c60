#include "backends/cpu/compile/norm_parts.h"

#include <algorithm>
#include <cmath>

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

float pow_math_exponent(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("pow: expected 2 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& e = value_at(g, node.args[1]);
  if (e.kind != Value::Kind::Int && e.kind != Value::Kind::Double) {
    throw Unsupported("pow: the exponent is not a scalar");
  }
  const float v = static_cast<float>(number(g, node.args[1], "exponent"));
  if (!std::isfinite(v)) throw Unsupported("pow: a non-finite exponent");
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("pow: out shape");
  return v;
}

void check_unary_elementwise(const Graph& g, const Node& node) {
  if (node.args.size() != 1) throw Unsupported("expected 1 argument");
  const Value& x = activation_tensor(g, node.args[0], "x");
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("out shape differs from x");
}

bool is_reduction_op(const std::string& op) {
  return op == "tern::mean" || op == "tern::sum" || op == "tern::amax";
}

ReductionAttrs reduction_attrs(const Graph& g, const Node& node) {
  if (!is_reduction_op(node.op)) throw Unsupported("not a mean, sum or amax");
  if (node.args.size() != 3) throw Unsupported(node.op + ": expected 3 arguments");
  ReductionAttrs a;
  a.sum = node.op == "tern::sum";
  a.max = node.op == "tern::amax";
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& dims = static_value(g, node.args[1], "dims");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (dims.kind != Value::Kind::IntList || dims.ints.empty()) {
    throw Unsupported(node.op + ": not over a list of dims");
  }
  a.reduced.assign(static_cast<size_t>(rank), false);
  for (int64_t d : dims.ints) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank || a.reduced[static_cast<size_t>(d)]) {
      throw Unsupported(node.op + ": dims out of range or repeated");
    }
    a.reduced[static_cast<size_t>(d)] = true;
  }
  a.keepdim = bool_value(g, node.args[2], "keepdim");
  std::vector<int64_t> expect;
  for (int64_t d = 0; d < rank; ++d) {
    if (!a.reduced[static_cast<size_t>(d)]) {
      expect.push_back(x.sizes[static_cast<size_t>(d)]);
    } else if (a.keepdim) {
      expect.push_back(1);
    }
  }
  if (expect.empty() || single_output(g, node).sizes != expect) {
    throw Unsupported(node.op + ": out shape (or a scalar)");
  }
  int64_t first = rank, last = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (a.reduced[static_cast<size_t>(d)]) {
      first = std::min(first, d);
      last = d;
    }
  }
  a.row_major_ok = true;
  for (int64_t d = first; d <= last; ++d) {
    a.row_major_ok = a.row_major_ok && a.reduced[static_cast<size_t>(d)];
  }
  // An NHWC x: its dims in byte order are N, H, W, C; the reduced ones must be consecutive
  // there (H, W, both, C alone — MobileNetV5's RMSNorm2d over the channels —, W and C, ...).
  // Without keepdim the kept dims must also keep their order ([N, C] after H, W; [N, H, W]
  // after C; not [N, C, W] after H, whose bytes are [N, W, C]).
  a.nhwc_ok = false;
  if (rank == 4) {
    const bool by_bytes[4] = {a.reduced[0], a.reduced[2], a.reduced[3], a.reduced[1]};
    int64_t lo = 4, hi = -1;
    for (int64_t d = 0; d < 4; ++d) {
      if (by_bytes[d]) {
        lo = std::min(lo, d);
        hi = d;
      }
    }
    bool consecutive = true;
    for (int64_t d = lo; d <= hi; ++d) consecutive = consecutive && by_bytes[d];
    const bool kept_in_order = a.keepdim || a.reduced[1] || (a.reduced[2] && a.reduced[3]);
    a.nhwc_ok = consecutive && kept_in_order;
  }
  if (!a.row_major_ok && !a.nhwc_ok) {
    throw Unsupported(node.op + (rank == 4 && !a.reduced[0] && !a.reduced[1]
                                     ? ": over one spatial dim of an NHWC tensor without keepdim"
                                     : ": not over consecutive dims (of NCHW nor of NHWC order)"));
  }
  return a;
}

bool reduction_of_4d(const Graph& g, const Node& node, ReductionAttrs* attrs) {
  if (!is_reduction_op(node.op) || node.args.empty()) return false;
  const int x = node.args[0];
  if (x < 0 || static_cast<size_t>(x) >= g.values.size()) return false;
  const Value& xv = g.values[static_cast<size_t>(x)];
  if (!xv.is_tensor() || xv.sizes.size() != 4) return false;
  try {
    *attrs = reduction_attrs(g, node);
  } catch (const Unsupported&) {
    return false;
  }
  return true;
}

}  // namespace tern::compiler::cpu_compile
