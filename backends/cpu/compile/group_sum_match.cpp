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

/// What a sum of channel groups reads, by structure alone: the product folded in (mul and its
/// weight) when the summed value is one, the grouped value X, X's parts and the cat joining
/// them.
struct Structure {
  int mul = -1, weight = -1, grouped = -1, cat = -1;
  std::vector<int> parts;  ///< the 4-D values viewed as [N, R_i, C, H, W]
};

/// The 4-D x when `vid` [N, R, C, H, W] is a view of x [N, R C, H, W] (made by `maker`'s node),
/// else -1.
int viewed_4d(const Graph& g, int vid, const std::function<int(int)>& maker) {
  const int n = maker(vid);
  if (n < 0 || g.nodes[static_cast<size_t>(n)].op != "tern::view") return -1;
  const Node& v = g.nodes[static_cast<size_t>(n)];
  if (v.args.empty() || v.args[0] < 0) return -1;
  const std::vector<int64_t>& xs = g.values[static_cast<size_t>(v.args[0])].sizes;
  const std::vector<int64_t>& vs = g.values[static_cast<size_t>(vid)].sizes;
  const bool same = xs.size() == 4 && vs.size() == 5 && xs[0] == vs[0] &&
                    xs[1] == vs[1] * vs[2] && xs[2] == vs[3] && xs[3] == vs[4];
  return same ? v.args[0] : -1;
}

/// The structure of `sum` when it is a sum of channel groups, nodes found by `maker` (the
/// graph's, or one region's): sum(X, [1]) or sum(X · A, [1]) (either order) with A
/// [N, R, C, 1, 1] and X a view of a 4-D value or a cat along dim 1 of 1 to 3 such views.
bool structure_of(const Graph& g, const Node& sum, const std::function<int(int)>& maker,
                  Structure* st) {
  if (!sums_dim1_of_five(g, sum)) return false;
  const int z = sum.args[0];
  const std::vector<int64_t>& zs = g.values[static_cast<size_t>(z)].sizes;
  st->grouped = z;
  const int mul = maker(z);
  if (mul >= 0 && g.nodes[static_cast<size_t>(mul)].op == "tern::mul" &&
      g.nodes[static_cast<size_t>(mul)].args.size() == 2) {
    const Node& m = g.nodes[static_cast<size_t>(mul)];
    for (int i = 0; i < 2 && st->weight < 0; ++i) {
      const int a = m.args[static_cast<size_t>(i)], x = m.args[static_cast<size_t>(1 - i)];
      if (a < 0 || x < 0 || g.values[static_cast<size_t>(x)].sizes != zs) continue;
      const std::vector<int64_t>& as = g.values[static_cast<size_t>(a)].sizes;
      if (as.size() == 5 && as[0] == zs[0] && as[1] == zs[1] && as[2] == zs[2] && as[3] == 1 &&
          as[4] == 1 && (zs[3] != 1 || zs[4] != 1)) {
        st->weight = a;
        st->grouped = x;
      }
    }
    if (st->weight < 0) return false;  // a product of another form: lowered as it is
    st->mul = mul;
  }
  if (const int x = viewed_4d(g, st->grouped, maker); x >= 0) {
    st->parts = {x};
    return true;
  }
  const int cat = maker(st->grouped);
  if (cat < 0 || g.nodes[static_cast<size_t>(cat)].op != "tern::cat" ||
      g.nodes[static_cast<size_t>(cat)].args.size() != 2) {
    return false;
  }
  std::vector<int> ins;
  try {
    ins = concat_inputs(g, g.nodes[static_cast<size_t>(cat)]);
    const int64_t dim = int_value(g, g.nodes[static_cast<size_t>(cat)].args[1], "dim");
    if (dim != 1 && dim != -4) return false;
  } catch (const std::exception&) {
    return false;
  }
  if (ins.empty() || ins.size() > kMaxParts) return false;
  for (int t : ins) {
    const int x = viewed_4d(g, t, maker);
    if (x < 0) return false;
    st->parts.push_back(x);
  }
  st->cat = cat;
  return true;
}

/// The node of `g` making `vid`, or -1.
int graph_maker(const Graph& g, int vid) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs) {
      if (o == vid) return static_cast<int>(i);
    }
  }
  return -1;
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

  /// The structure of region node `s` (its nodes all in the region) whose values are static
  /// f32 activations, the 4-D ones NHWC, and whose product only the sum reads. *grouped: X.
  bool match_at(int s, GroupSumMatch* m, int* grouped) const {
    Structure st;
    if (!structure_of(g_, node(s), [this](int vid) { return made_by(vid); }, &st)) return false;
    const int z = node(s).args[0], y = node(s).outputs[0];
    if (!plain_tensor(z, 5) || !plain_tensor(y, 4) || !nhwc_(y)) return false;
    if (st.mul >= 0 && (!once(z) || !plain_tensor(st.weight, 5) || !plain_tensor(st.grouped, 5))) {
      return false;
    }
    for (int x : st.parts) {
      if (!plain_tensor(x, 4) || !nhwc_(x)) return false;
    }
    if (st.cat >= 0) {
      for (int t : g_.values[static_cast<size_t>(node(st.cat).args[0])].tensors) {
        if (!plain_tensor(t, 5)) return false;
      }
    }
    m->parts = st.parts;
    m->weight = st.weight;
    m->y = y;
    m->sum_node = s;
    m->mul_node = st.mul;
    m->cat_node = st.cat;
    *grouped = st.grouped;
    return true;
  }

 private:
  const std::function<bool(int)>& nhwc_;
};

}  // namespace

bool is_group_sum_shape(const Graph& g, const Node& node) {
  Structure st;
  return structure_of(g, node, [&g](int vid) { return graph_maker(g, vid); }, &st);
}

std::vector<GroupSumMatch> match_group_sums(const Graph& g, const DelegateRegion& region,
                                            const std::function<bool(int)>& nhwc) {
  Matcher m(g, region, nhwc);
  std::vector<GroupSumMatch> found;
  std::map<int, int> reads;  // X -> reads by the matched sums and products
  std::vector<int> grouped;
  for (int n : region.nodes) {
    GroupSumMatch gs;
    int x = -1;
    if (!m.match_at(n, &gs, &x)) continue;
    ++reads[x];
    grouped.push_back(x);
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
