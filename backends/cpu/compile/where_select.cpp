#include "backends/cpu/compile/where_select.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

/// `sizes` right-aligned to `rank` dims with leading 1s.
std::vector<int64_t> aligned(const std::vector<int64_t>& sizes, size_t rank) {
  std::vector<int64_t> d(rank - sizes.size(), 1);
  d.insert(d.end(), sizes.begin(), sizes.end());
  return d;
}

uint64_t numel_of(const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int64_t d : sizes) n *= static_cast<uint64_t>(d);
  return n;
}

/// Row-major element strides of `dims`, 0 for a dim of 1 (read broadcast).
std::vector<uint64_t> broadcast_strides(const std::vector<int64_t>& dims) {
  std::vector<uint64_t> s(dims.size(), 0);
  uint64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = dims[i] == 1 ? 0 : step;
    step *= static_cast<uint64_t>(dims[i]);
  }
  return s;
}

}  // namespace

WhereSelect where_select(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("where: expected 3 arguments");
  const Value& out = single_output(g, node);
  const size_t r = out.sizes.size();
  const Value& cond = value_at(g, node.args[0]);
  if (!cond.is_tensor() || !cond.is_constant || cond.dtype != DType::Bool ||
      cond.sizes.size() > r) {
    throw Unsupported("where: the condition is not a constant bool tensor");
  }
  // Which side is the activation; the other a constant (tensor or number).
  const Value& x = value_at(g, node.args[1]);
  const Value& y = value_at(g, node.args[2]);
  const bool x_act = x.is_tensor() && !x.is_constant;
  const bool y_act = y.is_tensor() && !y.is_constant;
  if (!x_act && !y_act) throw Unsupported("where: of two constants");
  WhereSelect w;
  w.activation = x_act ? node.args[1] : node.args[2];
  const Value& act = activation_tensor(g, w.activation, x_act ? "x" : "y");
  if (act.sizes != out.sizes) throw Unsupported("where: the activation is not the output's shape");
  const std::vector<int64_t> cdims = aligned(cond.sizes, r);
  if (cond.data.size() != numel_of(cond.sizes)) throw Unsupported("where: the condition's bytes");
  if (x_act && y_act) {
    w.other = node.args[2];
    if (activation_tensor(g, w.other, "y").sizes != out.sizes) {
      throw Unsupported("where: an activation is not the output's shape");
    }
    for (size_t i = 0; i < r; ++i) {
      if (cdims[i] != 1 && cdims[i] != out.sizes[i]) {
        throw Unsupported("where: the condition does not broadcast to " + shape_str(out.sizes));
      }
    }
    w.dims = cdims;
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (uint8_t c : cond.data) {
      w.upper.push_back(c != 0 ? kInf : -kInf);
      w.other_upper.push_back(c != 0 ? -kInf : kInf);
    }
    return w;
  }
  const int kid = x_act ? node.args[2] : node.args[1];
  const Value& k = value_at(g, kid);
  std::vector<int64_t> kdims(r, 1);
  std::vector<float> kdata;
  double scalar = 0.0;
  if (k.kind == Value::Kind::Int || k.kind == Value::Kind::Double) {
    kdata.push_back(static_cast<float>(number(g, kid, "the constant")));
  } else if (scalar_constant(g, kid, &scalar)) {
    kdata.push_back(static_cast<float>(scalar));
  } else {
    const Value& kt = f32_tensor(g, kid, "the constant");
    if (kt.sizes.size() > r || kt.data.size() != numel_of(kt.sizes) * 4) {
      throw Unsupported("where: the constant's rank or bytes");
    }
    kdims = aligned(kt.sizes, r);
    kdata.resize(numel_of(kt.sizes));
    std::memcpy(kdata.data(), kt.data.data(), kt.data.size());
  }
  for (float v : kdata) {
    if (std::isnan(v)) throw Unsupported("where: a NaN constant");
  }
  w.dims.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    for (int64_t d : {cdims[i], kdims[i]}) {
      if (d == 1) continue;
      if (d != out.sizes[i] || (w.dims[i] != 1 && w.dims[i] != d)) {
        throw Unsupported("where: the condition or the constant does not broadcast to " +
                          shape_str(out.sizes));
      }
      w.dims[i] = d;
    }
  }
  const std::vector<uint64_t> cs = broadcast_strides(cdims), ks = broadcast_strides(kdims);
  uint64_t n = 1;
  for (int64_t d : w.dims) n *= static_cast<uint64_t>(d);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  w.upper.resize(n);
  w.lower.resize(n);
  std::vector<int64_t> idx(r, 0);
  for (uint64_t e = 0; e < n; ++e) {
    uint64_t ci = 0, ki = 0;
    for (size_t i = 0; i < r; ++i) {
      ci += static_cast<uint64_t>(idx[i]) * cs[i];
      ki += static_cast<uint64_t>(idx[i]) * ks[i];
    }
    const bool take_constant = (cond.data[ci] != 0) != x_act;  // x where cond, else y
    w.upper[e] = take_constant ? kdata[ki] : kInf;
    w.lower[e] = take_constant ? kdata[ki] : -kInf;
    for (size_t i = r; i-- > 0;) {  // the next index, row-major
      if (++idx[i] < w.dims[i]) break;
      idx[i] = 0;
    }
  }
  return w;
}

bool is_where_of_activation_condition(const Graph& g, const Node& node) {
  if (node.op != "tern::where" || node.args.empty()) return false;
  const Value& c = value_at(g, node.args[0]);
  return c.is_tensor() && !c.is_constant && c.dtype == DType::Bool;
}

uint32_t select_compare_mode(const std::string& op) {
  if (op == "tern::gt") return 1;
  if (op == "tern::ge") return 2;
  if (op == "tern::lt") return 3;
  if (op == "tern::le") return 4;
  if (op == "tern::eq") return 5;
  if (op == "tern::ne") return 6;
  return 0;
}

float check_fused_comparison(const Graph& g, const Node& node) {
  const std::string what = node.op.substr(node.op.find("::") + 2);
  if (select_compare_mode(node.op) == 0 || node.args.size() != 2) {
    throw Unsupported(what + ": not a comparison of two arguments");
  }
  const Value& x = value_at(g, node.args[0]);
  if (!x.is_tensor() || x.is_constant || x.dtype != DType::F32 || x.sizes.empty()) {
    throw Unsupported(what + ": x is not an f32 activation of rank >= 1");
  }
  const Value& s = value_at(g, node.args[1]);
  float number = 0.0f;
  if (s.kind == Value::Kind::Int) {
    number = static_cast<float>(s.int_value);
  } else if (s.kind == Value::Kind::Double) {
    number = static_cast<float>(s.double_value);
  } else if (s.is_tensor() && s.is_constant && s.sizes.empty() && s.dtype == DType::F32 &&
             s.quant.scheme == QuantSpec::Scheme::None && s.data.size() == 4) {
    std::memcpy(&number, s.data.data(), 4);
  } else {
    throw Unsupported(what + ": compares with a tensor (only a number is fused into a select)");
  }
  if (node.outputs.size() != 1) throw Unsupported(what + ": expected one output");
  const Value& out = value_at(g, node.outputs[0]);
  if (!out.is_tensor() || out.dtype != DType::Bool || out.sizes != x.sizes) {
    throw Unsupported(what + ": the output is not a bool tensor of x's shape");
  }
  const int mask = node.outputs[0];
  for (int o : g.outputs) {
    if (o == mask) throw Unsupported(what + ": its result is a method output");
  }
  size_t readers = 0;
  for (const Node& reader : g.nodes) {
    for (size_t a = 0; a < reader.args.size(); ++a) {
      if (reader.args[a] != mask) continue;
      if (reader.op != "tern::where" || a != 0) {
        throw Unsupported(what + ": its result is read by " + reader.op +
                          " (only wheres' conditions are fused)");
      }
      check_where_of_activation_condition(g, reader);
      ++readers;
    }
  }
  for (const Value& v : g.values) {  // in a tensor list: read by an op that is no where
    for (int t : v.tensors) {
      if (t == mask) throw Unsupported(what + ": its result is in a tensor list");
    }
  }
  if (readers == 0) throw Unsupported(what + ": nothing reads its result");
  return number;
}

std::vector<float> triangle_keep_mask(const Graph& g, const Node& node, int64_t* rows,
                                      int64_t* cols) {
  const bool upper = node.op == "tern::triu";
  const std::string what = upper ? "triu" : "tril";
  if ((!upper && node.op != "tern::tril") || node.args.size() != 2) {
    throw Unsupported(what + ": expected x and a diagonal");
  }
  const Value& x = f32_tensor(g, node.args[0], "x");
  if (x.is_constant || x.sizes.size() < 2) throw Unsupported(what + ": x is no activation of rank >= 2");
  const Value& out = single_output(g, node);
  if (out.sizes != x.sizes) throw Unsupported(what + ": out shape differs from x");
  const int64_t diagonal = int_value(g, node.args[1], "diagonal");
  const int64_t r = x.sizes[x.sizes.size() - 2], c = x.sizes.back();
  if (r * c > kMaxTriangleMask) {
    throw Unsupported(what + ": a mask of " + std::to_string(r * c) + " elements (" +
                      std::to_string(kMaxTriangleMask) + " at most)");
  }
  std::vector<float> mask(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
      mask[static_cast<size_t>(i * c + j)] = keep ? 1.0f : 0.0f;
    }
  }
  *rows = r;
  *cols = c;
  return mask;
}

void check_where_of_activation_condition(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("where: expected 3 arguments");
  const Value& out = single_output(g, node);
  const size_t r = out.sizes.size();
  const Value& c = value_at(g, node.args[0]);
  if (!c.is_tensor() || c.is_constant || c.dtype != DType::Bool || c.sizes.empty() ||
      c.sizes.size() > r) {
    throw Unsupported("where: the condition is not a bool activation of rank 1.." +
                      std::to_string(r));
  }
  auto broadcasts = [&](const std::vector<int64_t>& s) {
    if (s.size() > r) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t o = out.sizes[r - s.size() + i];
      if (s[i] != o && s[i] != 1) return false;
    }
    return true;
  };
  if (!broadcasts(c.sizes)) {
    throw Unsupported("where: the condition " + shape_str(c.sizes) +
                      " does not broadcast to the output " + shape_str(out.sizes));
  }
  for (int k = 1; k <= 2; ++k) {
    const Value& v = value_at(g, node.args[static_cast<size_t>(k)]);
    const char* what = k == 1 ? "x" : "y";
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Double) continue;
    if (v.is_tensor() && v.is_constant && v.sizes.empty() && v.dtype == DType::F32 &&
        v.quant.scheme == QuantSpec::Scheme::None) {
      continue;  // a 0-D constant: one value
    }
    const Value& t = f32_tensor(g, node.args[static_cast<size_t>(k)], what);
    if (!broadcasts(t.sizes)) {
      throw Unsupported(std::string("where: ") + what + " " + shape_str(t.sizes) +
                        " does not broadcast to the output " + shape_str(out.sizes));
    }
  }
}

}  // namespace tern::compiler::cpu_compile
