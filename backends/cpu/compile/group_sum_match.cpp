#include "backends/cpu/compile/group_sum_match.h"

#include <map>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {
namespace {

/// Most parts of one GroupSum (the blob's inputs less the weight).
constexpr size_t kMaxParts = 3;

/// A sum over dim 1 of a five-dim value, without keepdim (the groups' dim of [N, R, C, H, W]).
bool sums_dim1_of_five(const Graph& g, const Node& node) {
  if (node.op != "tern::sum" || node.args.empty() || node.outputs.size() != 1) return false;
  ReductionAttrs ra;
  try {
    ra = reduction_attrs(g, node);
  } catch (const std::exception&) {
    return false;
  }
  return ra.sum && !ra.keepdim &&
         ra.reduced == std::vector<bool>{false, true, false, false, false};
}

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r, const std::function<bool(int)>& nhwc)
      : RegionIndex(g, r), nhwc_(nhwc) {}

  /// A static f32 activation of `rank` dims.
  bool plain_tensor(int vid, size_t rank) const {
    if (vid < 0 || !f32_activation(vid)) return false;
    const Value& v = value(vid);
    return v.sizes.size() == rank && !v.is_dynamic();
  }

  /// x when `vid` [N, R, C, H, W] is view(x) of an NHWC x [N, R C, H, W]; else -1.
  int viewed_nhwc(int vid) const {
    const int n = made_by(vid);
    if (n < 0 || node(n).op != "tern::view" || node(n).args.empty()) return -1;
    const int x = node(n).args[0];
    if (!plain_tensor(x, 4) || !nhwc_(x)) return -1;
    const std::vector<int64_t>& xs = value(x).sizes;
    const std::vector<int64_t>& vs = value(vid).sizes;
    const bool same = xs[0] == vs[0] && xs[1] == vs[1] * vs[2] && xs[2] == vs[3] && xs[3] == vs[4];
    return same ? x : -1;
  }

  /// The parts of X [N, R, C, H, W]: one viewed x, or a cat along dim 1 of viewed x's. Sets
  /// *cat to the cat node (or -1).
  bool parts_of(int xv, std::vector<int>* parts, int* cat) const {
    *cat = -1;
    parts->clear();
    if (const int x = viewed_nhwc(xv); x >= 0) {
      parts->push_back(x);
      return true;
    }
    const int n = made_by(xv);
    if (n < 0 || node(n).op != "tern::cat" || node(n).args.size() != 2) return false;
    std::vector<int> ins;
    try {
      ins = concat_inputs(g_, node(n));
      const int64_t dim = int_value(g_, node(n).args[1], "dim");
      if (dim != 1 && dim != -4) return false;
    } catch (const std::exception&) {
      return false;
    }
    if (ins.empty() || ins.size() > kMaxParts) return false;
    for (int t : ins) {
      if (!plain_tensor(t, 5)) return false;
      const int x = viewed_nhwc(t);
      if (x < 0) return false;
      parts->push_back(x);
    }
    *cat = n;
    return true;
  }

  bool match_at(int s, GroupSumMatch* m) const {
    const Node& sum = node(s);
    if (!sums_dim1_of_five(g_, sum)) return false;
    const int z = sum.args[0];
    const int y = sum.outputs[0];
    if (!plain_tensor(z, 5) || !plain_tensor(y, 4) || !nhwc_(y)) return false;
    const std::vector<int64_t>& zs = value(z).sizes;
    int xv = z;
    m->weight = -1;
    m->mul_node = -1;
    const int mul = made_by(z);
    if (mul >= 0 && node(mul).op == "tern::mul" && node(mul).args.size() == 2 && once(z)) {
      // X · A (either order): A [N, R, C, 1, 1], X the grouped value.
      for (int i = 0; i < 2 && m->weight < 0; ++i) {
        const int a = node(mul).args[static_cast<size_t>(i)];
        const int x = node(mul).args[static_cast<size_t>(1 - i)];
        if (!plain_tensor(a, 5) || !plain_tensor(x, 5) || value(x).sizes != zs) continue;
        const std::vector<int64_t>& as = value(a).sizes;
        if (as[0] == zs[0] && as[1] == zs[1] && as[2] == zs[2] && as[3] == 1 && as[4] == 1 &&
            (zs[3] != 1 || zs[4] != 1)) {
          m->weight = a;
          xv = x;
        }
      }
      if (m->weight < 0) return false;  // a product of another form: lowered as it is
      m->mul_node = mul;
    }
    if (!parts_of(xv, &m->parts, &m->cat_node)) return false;
    m->sum_node = s;
    m->y = y;
    grouped_ = xv;
    return true;
  }

  int grouped() const { return grouped_; }

 private:
  const std::function<bool(int)>& nhwc_;
  mutable int grouped_ = -1;
};

/// The node of `g` making `vid`, or -1.
int graph_maker(const Graph& g, int vid) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs) {
      if (o == vid) return static_cast<int>(i);
    }
  }
  return -1;
}

/// `vid` [N, R, C, H, W] made by a view of a 4-D [N, R C, H, W].
bool grouped_view(const Graph& g, int vid) {
  const int n = graph_maker(g, vid);
  if (n < 0 || g.nodes[static_cast<size_t>(n)].op != "tern::view") return false;
  const Node& v = g.nodes[static_cast<size_t>(n)];
  if (v.args.empty() || v.args[0] < 0) return false;
  const std::vector<int64_t>& xs = g.values[static_cast<size_t>(v.args[0])].sizes;
  const std::vector<int64_t>& vs = g.values[static_cast<size_t>(vid)].sizes;
  return xs.size() == 4 && vs.size() == 5 && xs[0] == vs[0] && xs[1] == vs[1] * vs[2] &&
         xs[2] == vs[3] && xs[3] == vs[4];
}

}  // namespace

bool is_group_sum_shape(const Graph& g, const Node& node) {
  if (!sums_dim1_of_five(g, node)) return false;
  int xv = node.args[0];
  const std::vector<int64_t>& zs = g.values[static_cast<size_t>(xv)].sizes;
  const int mul = graph_maker(g, xv);
  if (mul >= 0 && g.nodes[static_cast<size_t>(mul)].op == "tern::mul" &&
      g.nodes[static_cast<size_t>(mul)].args.size() == 2) {
    const Node& m = g.nodes[static_cast<size_t>(mul)];
    int x = -1;
    for (int i = 0; i < 2; ++i) {
      const int a = m.args[static_cast<size_t>(i)], b = m.args[static_cast<size_t>(1 - i)];
      if (a < 0 || b < 0) continue;
      const std::vector<int64_t>& as = g.values[static_cast<size_t>(a)].sizes;
      if (g.values[static_cast<size_t>(b)].sizes == zs && as.size() == 5 && as[3] == 1 &&
          as[4] == 1 && as[0] == zs[0] && as[1] == zs[1] && as[2] == zs[2]) {
        x = b;
      }
    }
    if (x < 0) return false;
    xv = x;
  }
  if (grouped_view(g, xv)) return true;
  const int cat = graph_maker(g, xv);
  if (cat < 0 || g.nodes[static_cast<size_t>(cat)].op != "tern::cat") return false;
  const Node& c = g.nodes[static_cast<size_t>(cat)];
  if (c.args.size() != 2 || c.args[0] < 0) return false;
  const std::vector<int>& parts = g.values[static_cast<size_t>(c.args[0])].tensors;
  if (parts.empty() || parts.size() > kMaxParts) return false;
  for (int t : parts) {
    if (t < 0 || !grouped_view(g, t)) return false;
  }
  return true;
}

std::vector<GroupSumMatch> match_group_sums(const Graph& g, const DelegateRegion& region,
                                            const std::function<bool(int)>& nhwc) {
  Matcher m(g, region, nhwc);
  std::vector<GroupSumMatch> found;
  std::map<int, int> reads;  // X -> reads by the matched sums and products
  std::vector<int> grouped;
  for (int n : region.nodes) {
    GroupSumMatch gs;
    if (!m.match_at(n, &gs)) continue;
    ++reads[m.grouped()];
    grouped.push_back(m.grouped());
    found.push_back(gs);
  }
  // A cat stays when anything else reads its output (it is lowered as a cat for them).
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i].cat_node >= 0 && !m.read_exactly(grouped[i], reads[grouped[i]])) {
      found[i].cat_node = -1;
    }
  }
  return found;
}

}  // namespace tern::compiler::cpu_compile
