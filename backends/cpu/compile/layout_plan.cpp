#include "backends/cpu/compile/layout_plan.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};

bool is_4d_tensor(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  return v.is_tensor() && v.sizes.size() == 4;
}

/// Ops whose output keeps the layout of their activation operands.
bool follows_operands(const std::string& op) {
  return op == "tern::layer_norm" || op == "tern::linear" || op == "tern::gelu" ||
         op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp" ||
         op == "tern::hardswish" || op == "tern::sigmoid" || op == "tern::hardsigmoid" ||
         op == "tern::silu" || op == "tern::add" || op == "tern::sub" || op == "tern::mul" ||
         op == "tern::div";
}

/// Ops whose 4-D data input must be NHWC (their meaning is over [N, C, H, W]).
bool needs_nhwc(const std::string& op) {
  return op == "tern::conv2d" || op == "tern::max_pool2d" || op == "tern::avg_pool2d" ||
         op == "tern::adaptive_avg_pool2d" || op == "tern::mean" || op == "tern::batch_norm" ||
         op == "tern::pad" || op == "tern::softmax";
}

}  // namespace

std::vector<int64_t> permute_dims(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("permute: expected 2 arguments");
  const Value& x = f32_tensor(g, node.args[0], "x");
  const Value& d = static_value(g, node.args[1], "dims");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (d.kind != Value::Kind::IntList || static_cast<int64_t>(d.ints.size()) != rank) {
    throw Unsupported("permute: dims is not an IntList of x's rank");
  }
  std::vector<int64_t> dims;
  for (int64_t v : d.ints) dims.push_back(v < 0 ? v + rank : v);
  return dims;
}

std::vector<bool> plain_4d_values(const Graph& g) {
  std::vector<bool> plain(g.values.size(), false);
  for (const Node& node : g.nodes) {
    if (node.outputs.size() != 1 || node.args.empty()) continue;
    const int out = node.outputs[0];
    if (!is_4d_tensor(g, out)) continue;
    const int x = node.args[0];
    const bool x_tensor = x >= 0 && static_cast<size_t>(x) < g.values.size() &&
                          g.values[static_cast<size_t>(x)].is_tensor();
    if (!x_tensor) continue;
    bool p = false;
    if (node.op == "tern::permute") {
      try {
        p = is_4d_tensor(g, x) && !plain[static_cast<size_t>(x)] &&
            permute_dims(g, node) == kToChannelsLast;
      } catch (const Unsupported&) {
        p = false;
      }
    } else if (is_cpu_view_op(node.op)) {
      p = is_4d_tensor(g, x) ? static_cast<bool>(plain[static_cast<size_t>(x)])
                             : layout_sensitive(g.values[static_cast<size_t>(out)].sizes);
    } else if (follows_operands(node.op)) {
      for (int a : node.args) {
        if (is_4d_tensor(g, a) && !g.values[static_cast<size_t>(a)].is_constant &&
            plain[static_cast<size_t>(a)]) {
          p = true;
        }
      }
    }
    plain[static_cast<size_t>(out)] = p;
  }
  return plain;
}

void check_layout(const Graph& g, const Node& node, const std::vector<bool>& plain) {
  const std::string& op = node.op;
  auto is_plain = [&](int id) {
    return is_4d_tensor(g, id) && plain[static_cast<size_t>(id)];
  };
  if (needs_nhwc(op)) {
    if (!node.args.empty() && is_plain(node.args[0])) {
      throw Unsupported(op + ": of a channels-last (plain) 4-D tensor");
    }
  } else if (op == "tern::cat") {
    for (int part : concat_inputs(g, node)) {
      if (is_plain(part)) throw Unsupported("cat: of a channels-last (plain) 4-D tensor");
    }
  } else if (op == "tern::linear" || op == "tern::layer_norm") {
    if (is_4d_tensor(g, node.args[0]) && !is_plain(node.args[0])) {
      throw Unsupported(op + ": over the last dim of an NHWC 4-D tensor");
    }
  } else if (op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div") {
    const int out = node.outputs.at(0);
    for (size_t k = 0; k < 2 && k < node.args.size(); ++k) {
      const int a = node.args[k];
      if (is_4d_tensor(g, a) && !g.values[static_cast<size_t>(a)].is_constant &&
          is_plain(a) != is_plain(out)) {
        throw Unsupported(op + ": operands of NHWC and channels-last (plain) layouts");
      }
    }
  } else if (op == "tern::permute") {
    const int x = node.args[0];
    const std::vector<int64_t> dims = permute_dims(g, node);
    const bool to_last = is_4d_tensor(g, x) && !is_plain(x) && dims == kToChannelsLast;
    const bool to_first = is_plain(x) && dims == kToChannelsFirst;
    if (!to_last && !to_first) {
      throw Unsupported("permute: only (0, 2, 3, 1) of an NHWC tensor or (0, 3, 1, 2) of a "
                        "channels-last one (a layout change inside the delegate)");
    }
  } else if (is_cpu_view_op(op)) {
    const int x = node.args[0], out = node.outputs.at(0);
    const Value& xv = g.values[static_cast<size_t>(x)];
    const Value& ov = g.values[static_cast<size_t>(out)];
    // NHWC and row-major bytes differ for a layout-sensitive NHWC side.
    const bool x_nhwc_sensitive = !is_plain(x) && layout_sensitive(xv.sizes);
    const bool out_nhwc_sensitive = !is_plain(out) && layout_sensitive(ov.sizes);
    if (xv.sizes != ov.sizes && (x_nhwc_sensitive || out_nhwc_sensitive)) {
      throw Unsupported("view: reorders an NHWC tensor");
    }
  }
}

}  // namespace tern::compiler::cpu_compile
