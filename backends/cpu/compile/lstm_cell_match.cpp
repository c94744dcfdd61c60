#include "backends/cpu/compile/lstm_cell_match.h"

#include <algorithm>
#include <map>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {
namespace {

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r) : RegionIndex(g, r) {
    for (int n : region_nodes()) {
      for (int a : node(n).args) {
        if (a >= 0) readers_[a].push_back(n);
      }
    }
  }

  bool match_at(int split_node, LstmCellMatch* m) {
    const Node& s = node(split_node);
    if (s.op != "tern::split" || s.args.size() != 3 || s.outputs.size() != 4) return false;
    const int gv = s.args[0];
    if (!f32(gv, false)) return false;
    const std::vector<int64_t>& gs = value(gv).sizes;
    if (gs.empty() || gs.size() > 3 || gs.back() % 4 != 0) return false;
    const int64_t h = gs.back() / 4;
    double dim = 0;
    if (!scalar_constant(g_, s.args[2], &dim) ||
        (dim != -1.0 && dim != static_cast<double>(gs.size() - 1))) {
      return false;
    }
    std::vector<int64_t> piece = gs;
    piece.back() = h;
    for (int o : s.outputs) {
      if (value(o).sizes != piece) return false;
    }
    // The four activations: sigmoid(i), sigmoid(f), tanh(g), sigmoid(o).
    const char* acts[4] = {"tern::sigmoid", "tern::sigmoid", "tern::tanh", "tern::sigmoid"};
    int act_node[4], act[4];
    for (int k = 0; k < 4; ++k) {
      act_node[k] = only_reader(s.outputs[static_cast<size_t>(k)]);
      if (act_node[k] < 0 || !unary(node(act_node[k]), acts[k])) return false;
      act[k] = node(act_node[k]).outputs[0];
    }
    const int i = act[0], f = act[1], gg = act[2], o = act[3];
    // c' = f * c + i * g.
    const int fc_node = only_reader(f);
    if (fc_node < 0 || !binary(node(fc_node), "tern::mul")) return false;
    const int c = other(node(fc_node), f);
    if (c < 0 || !f32(c, true) || value(c).sizes != piece) return false;
    const int ig_node = only_reader(i);
    if (ig_node < 0 || ig_node != only_reader(gg) || !binary(node(ig_node), "tern::mul") ||
        other(node(ig_node), i) != gg) {
      return false;
    }
    const int fc = node(fc_node).outputs[0], ig = node(ig_node).outputs[0];
    const int add_node = only_reader(fc);
    if (add_node < 0 || add_node != only_reader(ig) || !binary(node(add_node), "tern::add") ||
        other(node(add_node), fc) != ig) {
      return false;
    }
    const int c_next = node(add_node).outputs[0];
    if (!f32(c_next, false) || value(c_next).sizes != piece) return false;
    // h' = o * tanh(c').
    int tanh_node = -1, h_node = -1;
    for (int r : readers(c_next)) {
      if (!unary(node(r), "tern::tanh")) continue;
      const int t = node(r).outputs[0];
      const int hn = only_reader(t);
      if (hn < 0 || hn != only_reader(o) || !binary(node(hn), "tern::mul") ||
          other(node(hn), o) != t) {
        continue;
      }
      tanh_node = r;
      h_node = hn;
      break;
    }
    if (h_node < 0) return false;
    const int h_next = node(h_node).outputs[0];
    if (!f32(h_next, false) || value(h_next).sizes != piece) return false;
    m->nodes = {split_node, act_node[0], act_node[1], act_node[2], act_node[3],
                fc_node,    ig_node,     add_node,    tanh_node,   h_node};
    m->gates = gv;
    m->gates2 = -1;
    // gates = add(a, b) of two data values of its element count (no broadcast in effect: the
    // recurrent product [1, 1, 4H] and the step's row [1, 4H] of the input projection).
    const int gates_node = made_by(gv);
    if (gates_node >= 0 && once(gv) && binary(node(gates_node), "tern::add")) {
      const int a = node(gates_node).args[0], b = node(gates_node).args[1];
      if (f32(a, false) && f32(b, false) && numel_of(value(a).sizes) == numel_of(gs) &&
          numel_of(value(b).sizes) == numel_of(gs) && value(a).sizes.back() == gs.back() &&
          value(b).sizes.back() == gs.back() && value(a).sizes.size() <= 3 &&
          value(b).sizes.size() <= 3) {
        m->gates = a;
        m->gates2 = b;
        m->nodes.push_back(gates_node);
      }
    }
    std::sort(m->nodes.begin(), m->nodes.end());
    for (int n : m->nodes) {
      if (!in_region(n)) return false;
    }
    // c' is made where the pattern's last node runs: its other readers must come after.
    for (int r : readers(c_next)) {
      if (r != tanh_node && r < m->nodes.back()) return false;
    }
    m->c = c;
    m->c_next = c_next;
    m->h_next = h_next;
    m->hidden = h;
    return true;
  }

 private:
  std::map<int, std::vector<int>> readers_;  ///< value -> the region nodes reading it

  const std::vector<int>& readers(int vid) const {
    static const std::vector<int> kNone;
    auto it = readers_.find(vid);
    return it == readers_.end() ? kNone : it->second;
  }
  /// The one region node reading `vid` (read once), or -1.
  int only_reader(int vid) const {
    if (!once(vid)) return -1;
    const std::vector<int>& r = readers(vid);
    return r.size() == 1 ? r[0] : -1;
  }
  bool f32(int vid, bool constant_ok) const {
    if (vid < 0) return false;
    const Value& v = value(vid);
    return v.kind == Value::Kind::Tensor && v.dtype == DType::F32 &&
           (constant_ok || !v.is_constant) && !v.sizes.empty() && v.sizes.size() <= 3;
  }
  static bool unary(const Node& n, const char* op) {
    return n.op == op && n.args.size() == 1 && n.outputs.size() == 1;
  }
  static bool binary(const Node& n, const char* op) {
    return n.op == op && n.args.size() == 2 && n.outputs.size() == 1;
  }
  /// The operand of binary node `n` other than `vid`, or -1 when `vid` is neither.
  static int other(const Node& n, int vid) {
    if (n.args[0] == vid) return n.args[1];
    if (n.args[1] == vid) return n.args[0];
    return -1;
  }
};

}  // namespace

std::vector<LstmCellMatch> match_lstm_cells(const Graph& g, const DelegateRegion& region) {
  Matcher matcher(g, region);
  std::vector<LstmCellMatch> out;
  for (int n : region.nodes) {
    LstmCellMatch m;
    if (matcher.match_at(n, &m)) out.push_back(m);
  }
  return out;
}

}  // namespace tern::compiler::cpu_compile
