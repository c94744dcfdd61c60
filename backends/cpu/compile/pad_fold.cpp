#include "backends/cpu/compile/pad_fold.h"

#include <vector>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

constexpr int64_t kMaxPad = int64_t{1} << 30;  // the blob's parameter limit

/// The region nodes reading value `v` as conv2d x (or, with `pools`, max_pool2d x; args[0]
/// only), or empty when anything else reads it (another argument, another node, a tensor
/// list) or it leaves the region.
std::vector<int> conv_readers(const Graph& g, const DelegateRegion& r, int v, bool pools) {
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
      const bool conv = node.op == "tern::conv2d" && node.args.size() == 7;
      const bool pool = pools && node.op == "tern::max_pool2d" && node.args.size() == 6;
      if (!in_region || !(conv || pool) || a != 0) return {};
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

/// Whether value `v` is made by a relu, or a clamp / hardtanh with a lower bound >= 0 (every
/// element >= 0 or NaN).
bool nonnegative(const Graph& g, int v) {
  for (const Node& node : g.nodes) {
    if (node.outputs.size() != 1 || node.outputs[0] != v) continue;
    if (node.op != "tern::relu" && node.op != "tern::hardtanh" && node.op != "tern::clamp") {
      return false;
    }
    float lo = 0.0f, hi = 0.0f;
    clamp_bounds(g, node, &lo, &hi);
    return lo >= 0.0f;
  }
  return false;
}

/// A max pool over the zero-padded tensor equals one over the tensor itself with the pad added
/// to the pool's padding (XNNPACK's padded taps never win a max) when the tensor is >= 0 and
/// every window holds a pixel of it: the first window reaches row / column 0, the last starts
/// before the end. Writes the pool's new padding [top, left, bottom, right] (floor mode: any
/// ceil-mode extra is in it), or returns false (also when bottom < top or right < left, which
/// pool_attrs' four-value form does not take).
bool pool_padding(const Graph& g, const Node& pool, const int64_t amounts[4], int64_t in_h,
                  int64_t in_w, std::vector<int64_t>* pads) {
  const PoolAttrs a = pool_attrs(g, pool, true);
  const std::vector<int64_t>& out = g.values[static_cast<size_t>(pool.outputs[0])].sizes;
  const int64_t in[2] = {in_h, in_w};
  pads->assign(4, 0);
  for (int d = 0; d < 2; ++d) {
    const int64_t start = a.pad[d] + amounts[d];
    const int64_t end = a.pad[d] + a.extra_pad[d] + amounts[2 + d];
    const int64_t span = a.dilation[d] * (a.kernel[d] - 1) + 1;
    if (start > span - 1 || (out[2 + static_cast<size_t>(d)] - 1) * a.stride[d] - start > in[d] - 1 ||
        end < start || 2 * start > a.kernel[d]) {
      return false;
    }
    (*pads)[static_cast<size_t>(d)] = start;
    (*pads)[static_cast<size_t>(d) + 2] = end;
  }
  return true;
}

}  // namespace

bool fold_zero_pads(const Graph& g, const DelegateRegion& r, Graph* out) {
  if (r.nodes.empty()) return false;
  bool copied = false;
  for (int n : r.nodes) {
    int64_t amounts[4] = {0, 0, 0, 0};
    if (!spatial_zero_pad(g, g.nodes[static_cast<size_t>(n)], amounts)) continue;
    const Node& pad_node = g.nodes[static_cast<size_t>(n)];
    const int padded = pad_node.outputs[0];
    const std::vector<int64_t>& xs = g.values[static_cast<size_t>(pad_node.args[0])].sizes;
    const std::vector<int> convs =
        conv_readers(g, r, padded, /*pools=*/nonnegative(g, pad_node.args[0]));
    if (convs.empty()) continue;
    // Each conv's own padding (top, left) = (bottom, right) plus the pad's, checked in range
    // (conv_attrs of the rewritten node checks the shapes again when it is lowered); each
    // max pool's as pool_padding says.
    std::vector<std::vector<int64_t>> pads;
    bool fits = true;
    for (int c : convs) {
      const Node& reader = g.nodes[static_cast<size_t>(c)];
      std::vector<int64_t> p;
      if (reader.op == "tern::max_pool2d") {
        fits = fits && pool_padding(g, reader, amounts, xs[2], xs[3], &p);
      } else {
        const ConvAttrs a = conv_attrs(g, reader);
        p = {a.pad[0] + amounts[0], a.pad[1] + amounts[1], a.pad_end[0] + amounts[2],
             a.pad_end[1] + amounts[3]};
      }
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
      const int list_id = static_cast<int>(out->values.size()) - 1;
      Node& reader = out->nodes[static_cast<size_t>(convs[i])];
      reader.args[0] = x;
      if (reader.op == "tern::max_pool2d") {  // x, kernel, stride, padding, dilation, ceil_mode
        reader.args[3] = list_id;
        Value floor_mode;
        floor_mode.kind = Value::Kind::Bool;
        floor_mode.bool_value = false;
        out->values.push_back(floor_mode);
        reader.args[5] = static_cast<int>(out->values.size()) - 1;
      } else {  // x, w, b, stride, padding, dilation, groups
        reader.args[4] = list_id;
      }
    }
    pad.op = kFoldedPadOp;
    pad.args.clear();
    pad.outputs.clear();
  }
  return copied;
}

}  // namespace tern::compiler::cpu_compile
