#include "backends/cpu/compile/channel_mix_match.h"

#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/region_index.h"
#include "backends/cpu/cpu_blob_format.h"
#include "tools/compiler/value_bytes.h"

namespace tern::compiler::cpu_compile {
namespace {

/// A constant tensor of `j` elements laid along the last dim of what it is added to ([J], or
/// [1, .., 1, J]).
bool is_row_constant(const Graph& g, int vid, int64_t j) {
  if (vid < 0) return false;
  const Value& v = g.values[static_cast<size_t>(vid)];
  uint64_t n = 0;
  return v.is_tensor() && v.is_constant && v.dtype == DType::F32 && !v.sizes.empty() &&
         v.sizes.back() == j && shape_numel(v.sizes, &n) && n == static_cast<uint64_t>(j);
}

/// The permutation of a permute or transpose node over a value of rank `rank`; empty for any
/// other node or a malformed one.
std::vector<int64_t> permutation_of(const Graph& g, const Node& node, size_t rank) {
  try {
    return index_map_permutation(g, node, rank);
  } catch (const std::exception&) {
    return {};
  }
}

/// What a chain ending in a given permute reads and which nodes it is.
struct Structure {
  int x = -1, dim = -1, weight = -1, bias = -1;
  std::vector<int> nodes;  ///< from the last node back
};

/// The chain ending at node `end` (index `end_index`), found through `maker`.
bool structure_of(const Graph& g, const Node& end, int end_index,
                  const std::function<int(int)>& maker, Structure* st) {
  if (end.args.empty() || end.args[0] < 0 || end.outputs.size() != 1) return false;
  const Value& u_end = g.values[static_cast<size_t>(end.args[0])];
  const size_t r = u_end.sizes.size();
  if (!u_end.is_tensor() || u_end.dtype != DType::F32 || r < 2 || r > cpu::kMaxDims) {
    return false;
  }
  // y = permute(u, [0 .. d-1, r-1, d .. r-2]): u's last dim back to d.
  const std::vector<int64_t> back = permutation_of(g, end, r);
  if (back.size() != r) return false;
  int dim = -1;
  for (size_t i = 0; i < r; ++i) {
    if (back[i] == static_cast<int64_t>(r - 1)) dim = static_cast<int>(i);
  }
  if (dim < 0 || dim == static_cast<int>(r - 1)) return false;
  for (size_t i = 0; i < r; ++i) {
    const int64_t want = static_cast<int>(i) < dim ? static_cast<int64_t>(i)
                         : static_cast<int>(i) == dim ? static_cast<int64_t>(r - 1)
                                                      : static_cast<int64_t>(i) - 1;
    if (back[i] != want) return false;
  }
  const int64_t j = u_end.sizes.back();
  st->nodes = {end_index};
  // Back from u: views and constant adds, then the linear.
  int u = end.args[0];
  int linear = -1;
  while (linear < 0) {
    const int n = maker(u);
    if (n < 0) return false;
    const Node& node = g.nodes[static_cast<size_t>(n)];
    if (node.args.empty() || node.args[0] < 0 || node.outputs.size() != 1) return false;
    if (is_cpu_view_op(node.op)) {
      u = node.args[0];
    } else if (node.op == "tern::add" && node.args.size() == 2 && st->bias < 0) {
      const std::vector<int64_t>& out = g.values[static_cast<size_t>(u)].sizes;
      int other = -1;
      for (int i = 0; i < 2 && other < 0; ++i) {
        const int c = node.args[static_cast<size_t>(i)], a = node.args[static_cast<size_t>(1 - i)];
        if (a >= 0 && is_row_constant(g, c, j) && g.values[static_cast<size_t>(a)].sizes == out &&
            !out.empty() && out.back() == j) {
          st->bias = c;
          other = a;
        }
      }
      if (other < 0) return false;
      u = other;
    } else if (node.op == "tern::linear" && node.args.size() == 3) {
      linear = n;
    } else {
      return false;
    }
    st->nodes.push_back(n);
  }
  const Node& lin = g.nodes[static_cast<size_t>(linear)];
  const int w = lin.args[1], b = lin.args[2];
  if (w < 0) return false;
  const Value& wv = g.values[static_cast<size_t>(w)];
  if (!wv.is_tensor() || !wv.is_constant || wv.dtype != DType::F32 || wv.sizes.size() != 2 ||
      wv.sizes[0] != j) {
    return false;
  }
  const int64_t k = wv.sizes[1];
  if (b >= 0 && g.values[static_cast<size_t>(b)].is_tensor()) {
    if (st->bias >= 0 || !is_row_constant(g, b, j)) return false;  // one bias at most
    st->bias = b;
  }
  st->weight = w;
  // Back from the linear's input: views, then the first permute, x's dim d moved last.
  int t = lin.args[0];
  if (t < 0 || g.values[static_cast<size_t>(t)].sizes.empty() ||
      g.values[static_cast<size_t>(t)].sizes.back() != k) {
    return false;
  }
  for (;;) {
    const int n = maker(t);
    if (n < 0) return false;
    const Node& node = g.nodes[static_cast<size_t>(n)];
    st->nodes.push_back(n);
    if (!is_cpu_view_op(node.op)) break;
    if (node.args.empty() || node.args[0] < 0) return false;
    t = node.args[0];
  }
  const Node& first = g.nodes[static_cast<size_t>(st->nodes.back())];
  if (first.args.empty() || first.args[0] < 0) return false;
  const int x = first.args[0];
  const Value& xv = g.values[static_cast<size_t>(x)];
  if (!xv.is_tensor() || xv.dtype != DType::F32 || xv.sizes.size() != r) return false;
  const std::vector<int64_t> to_last = permutation_of(g, first, r);
  if (to_last.size() != r) return false;
  for (size_t i = 0; i < r; ++i) {
    if (back[static_cast<size_t>(to_last[i])] != static_cast<int64_t>(i)) return false;
  }
  // t [.., K] (x permuted) and u [.., J] agree but for the last dim, so every view between
  // only renamed rows.
  const std::vector<int64_t>& ts = g.values[static_cast<size_t>(t)].sizes;
  std::vector<int64_t> want = ts;
  if (want.size() != r || xv.sizes[static_cast<size_t>(dim)] != k) return false;
  want.back() = j;
  if (want != u_end.sizes) return false;
  st->x = x;
  st->dim = dim;
  return true;
}

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r, const std::function<bool(int)>& nhwc)
      : RegionIndex(g, r), nhwc_(nhwc) {}

  /// A static f32 activation kept row-major.
  bool plain_activation(int vid) const {
    return vid >= 0 && f32_activation(vid) && !value(vid).is_dynamic() && !nhwc_(vid);
  }

  bool match_at(int n, ChannelMixMatch* m) const {
    const Node& end = node(n);
    if (end.op != "tern::permute" && end.op != "tern::transpose") return false;
    Structure st;
    if (!structure_of(g_, end, n, [this](int vid) { return made_by(vid); }, &st)) return false;
    const int y = end.outputs[0];
    if (!plain_activation(st.x) || !plain_activation(y)) return false;
    for (size_t i = 1; i < st.nodes.size(); ++i) {  // every value the chain makes but y
      if (!in_region(st.nodes[i]) || !once(node(st.nodes[i]).outputs[0])) return false;
    }
    const std::vector<int64_t>& w = value(st.weight).sizes;
    if (w[0] > static_cast<int64_t>(cpu::kMaxChannelMixWidth) ||
        w[1] > static_cast<int64_t>(cpu::kMaxChannelMixWidth)) {
      return false;
    }
    m->x = st.x;
    m->dim = st.dim;
    m->weight = st.weight;
    m->bias = st.bias;
    m->y = y;
    m->nodes.assign(st.nodes.rbegin(), st.nodes.rend());
    return true;
  }

 private:
  const std::function<bool(int)>& nhwc_;
};

}  // namespace

bool ends_channel_mix(const Graph& g, const Node& node, const std::function<int(int)>& maker,
                      int* x) {
  if (node.op != "tern::permute" && node.op != "tern::transpose") return false;
  Structure st;
  if (!structure_of(g, node, -1, maker, &st)) return false;
  *x = st.x;
  return true;
}

std::vector<ChannelMixMatch> match_channel_mixes(const Graph& g, const DelegateRegion& region,
                                                 const std::function<bool(int)>& nhwc) {
  Matcher m(g, region, nhwc);
  std::vector<ChannelMixMatch> found;
  for (int n : region.nodes) {
    ChannelMixMatch cm;
    if (m.match_at(n, &cm)) found.push_back(cm);
  }
  return found;
}

}  // namespace tern::compiler::cpu_compile
