#include "backends/cpu/compile/pad_fold.h"

#include <vector>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

constexpr int64_t kMaxPad = int64_t{1} << 30;  // the blob's parameter limit

/// The region nodes reading value `v` as conv2d x (args[0] only), or empty when anything else
/// reads it (another argument, another node, a tensor list) or it leaves the region.
std::vector<int> conv_readers(const Graph& g, const DelegateRegion& r, int v) {
  for (int o : r.outputs) {
    if (o == v) return {};
  }
  for (int o : g.outputs) {
    if (o == v) return {};
  }
  std::vector<int> convs;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (size_t a = 0; a < node.args.size(); ++a) {
      const int id = node.args[a];
      if (id < 0) continue;
      for (int t : g.values[static_cast<size_t>(id)].tensors) {
        if (t == v) return {};
      }
      if (id != v) continue;
      const int ni = static_cast<int>(n);
      const bool in_region = ni >= r.nodes.front() && ni <= r.nodes.back();
      if (!in_region || node.op != "tern::conv2d" || a != 0 || node.args.size() != 7) return {};
      convs.push_back(ni);
    }
  }
  return convs;
}

/// The pad amounts of pad node `node` when it is a zero pad of a 4-D tensor's H and W only:
/// top, left, bottom, right; else false.
bool spatial_zero_pad(const Graph& g, const Node& node, int64_t amounts[4]) {
  if (node.op != "tern::pad" || node.args.size() != 4 || node.outputs.size() != 1) return false;
  const Value& x = g.values[static_cast<size_t>(node.args[0])];
  if (x.kind != Value::Kind::Tensor || x.sizes.size() != 4 || x.is_constant) return false;
  std::vector<int64_t> pre, post;
  float value = 0.0f;
  bool reflect = false;
  pad_amounts(g, node, 4, &pre, &post, &value, &reflect);
  if (reflect || value != 0.0f || pre[0] != 0 || pre[1] != 0 || post[0] != 0 || post[1] != 0) {
    return false;
  }
  amounts[0] = pre[2];
  amounts[1] = pre[3];
  amounts[2] = post[2];
  amounts[3] = post[3];
  return true;
}

}  // namespace

bool fold_zero_pads(const Graph& g, const DelegateRegion& r, Graph* out) {
  if (r.nodes.empty()) return false;
  bool copied = false;
  for (int n : r.nodes) {
    int64_t amounts[4] = {0, 0, 0, 0};
    if (!spatial_zero_pad(g, g.nodes[static_cast<size_t>(n)], amounts)) continue;
    const int padded = g.nodes[static_cast<size_t>(n)].outputs[0];
    const std::vector<int> convs = conv_readers(g, r, padded);
    if (convs.empty()) continue;
    // Each conv's own padding (top, left) = (bottom, right) plus the pad's, checked in range
    // (conv_attrs of the rewritten node checks the shapes again when it is lowered).
    std::vector<std::vector<int64_t>> pads;
    bool fits = true;
    for (int c : convs) {
      const ConvAttrs a = conv_attrs(g, g.nodes[static_cast<size_t>(c)]);
      std::vector<int64_t> p{a.pad[0] + amounts[0], a.pad[1] + amounts[1],
                             a.pad_end[0] + amounts[2], a.pad_end[1] + amounts[3]};
      for (int64_t v : p) fits = fits && v <= kMaxPad;
      pads.push_back(p);
    }
    if (!fits) continue;
    if (!copied) {
      *out = g;
      copied = true;
    }
    Node& pad = out->nodes[static_cast<size_t>(n)];
    const int x = pad.args[0];
    for (size_t i = 0; i < convs.size(); ++i) {
      Value list;
      list.kind = Value::Kind::IntList;
      list.ints = pads[i];
      out->values.push_back(list);
      Node& conv = out->nodes[static_cast<size_t>(convs[i])];
      conv.args[0] = x;
      conv.args[4] = static_cast<int>(out->values.size()) - 1;
    }
    pad.op = kFoldedPadOp;
    pad.args.clear();
    pad.outputs.clear();
  }
  return copied;
}

}  // namespace tern::compiler::cpu_compile
