#include "backends/cpu/compile/recurrent_cell_match.h"

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

  /// A GRU cell anchored at its tanh node (the candidate n).
  bool match_gru_at(int tanh_node, GruCellMatch* m) {
    const Node& t = node(tanh_node);
    if (!unary(t, "tern::tanh")) return false;
    const int nv = t.outputs[0];
    if (!f32(nv, false)) return false;
    const std::vector<int64_t>& piece = value(nv).sizes;
    const int64_t h = piece.back();
    // n = tanh(add(xn, mul(hn, r))).
    const int a = t.args[0];
    const int a_node = made_by(a);
    if (a_node < 0 || !once(a) || !binary(node(a_node), "tern::add")) return false;
    int xn = -1, mul_node = -1;
    for (int k = 0; k < 2 && mul_node < 0; ++k) {
      const int u = node(a_node).args[static_cast<size_t>(k)];
      const int un = made_by(u);
      if (un >= 0 && once(u) && binary(node(un), "tern::mul")) {
        mul_node = un;
        xn = node(a_node).args[static_cast<size_t>(1 - k)];
      }
    }
    if (mul_node < 0) return false;
    // mul(hn, r): r the output of sigmoid(add(hr, xr)); hn output 2 of gh's split.
    int r_sig = -1, hn = -1;
    for (int k = 0; k < 2 && r_sig < 0; ++k) {
      const int u = node(mul_node).args[static_cast<size_t>(k)];
      const int un = made_by(u);
      if (un >= 0 && once(u) && unary(node(un), "tern::sigmoid")) {
        r_sig = un;
        hn = node(mul_node).args[static_cast<size_t>(1 - k)];
      }
    }
    if (r_sig < 0) return false;
    int hs_node = -1, xs_node = -1;
    if (!split_piece(hn, 2, h, &hs_node) || !split_piece(xn, 2, h, &xs_node) ||
        hs_node == xs_node) {
      return false;
    }
    const Node& hs = node(hs_node);
    const Node& xs = node(xs_node);
    // r = sigmoid(add(hr, xr)), z = sigmoid(add(hz, xz)).
    int r_add = -1, z_add = -1, z_sig = -1;
    if (!gate_sum(node(r_sig).args[0], hs.outputs[0], xs.outputs[0], &r_add)) return false;
    z_add = only_reader(hs.outputs[1]);
    if (z_add < 0 || z_add != only_reader(xs.outputs[1]) || !binary(node(z_add), "tern::add") ||
        other(node(z_add), hs.outputs[1]) != xs.outputs[1]) {
      return false;
    }
    z_sig = only_reader(node(z_add).outputs[0]);
    if (z_sig < 0 || !unary(node(z_sig), "tern::sigmoid")) return false;
    const int z = node(z_sig).outputs[0];
    // h' = add(mul(sub(h, n), z), n): n read by the sub and the last add only.
    const std::vector<int>& n_readers = readers(nv);
    if (n_readers.size() != 2) return false;
    int sub_node = -1, last_node = -1;
    for (int r : n_readers) {
      if (binary(node(r), "tern::sub") && node(r).args[1] == nv) sub_node = r;
      if (binary(node(r), "tern::add")) last_node = r;
    }
    if (sub_node < 0 || last_node < 0) return false;
    const int hprev = node(sub_node).args[0];
    if (!f32(hprev, true) || numel_of(value(hprev).sizes) != numel_of(piece) ||
        value(hprev).sizes.back() != h) {
      return false;
    }
    const int d = node(sub_node).outputs[0];
    const int e_node = only_reader(d);
    if (e_node < 0 || e_node != only_reader(z) || !binary(node(e_node), "tern::mul") ||
        other(node(e_node), d) != z) {
      return false;
    }
    const int e = node(e_node).outputs[0];
    if (!once(e) || other(node(last_node), nv) != e || !once_or_region_reader(nv, 2)) {
      return false;
    }
    const int h_next = node(last_node).outputs[0];
    if (!f32(h_next, false) || numel_of(value(h_next).sizes) != numel_of(piece) ||
        value(h_next).sizes.back() != h) {
      return false;
    }
    m->nodes = {xs_node, hs_node, r_add, r_sig, z_add, z_sig, a_node, mul_node, tanh_node,
                sub_node, e_node, last_node};
    std::sort(m->nodes.begin(), m->nodes.end());
    for (int n : m->nodes) {
      if (!in_region(n)) return false;
    }
    m->gi = xs.args[0];
    m->gh = hs.args[0];
    m->h = hprev;
    m->h_next = h_next;
    m->hidden = h;
    return true;
  }

 private:
  std::map<int, std::vector<int>> readers_;  ///< value -> the region nodes reading it

  /// `vid` is output `k` of a 3-way split along the last dim of an f32 data value [..., 3h]
  /// whose every output is read once: the split into *split.
  bool split_piece(int vid, size_t k, int64_t h, int* split) const {
    const int sn = made_by(vid);
    if (sn < 0) return false;
    const Node& s = node(sn);
    if (s.op != "tern::split" || s.args.size() != 3 || s.outputs.size() != 3 ||
        s.outputs[k] != vid) {
      return false;
    }
    const int g = s.args[0];
    if (!f32(g, false) || value(g).sizes.back() != 3 * h) return false;
    double dim = 0;
    const size_t rank = value(g).sizes.size();
    if (!scalar_constant(g_, s.args[2], &dim) ||
        (dim != -1.0 && dim != static_cast<double>(rank - 1))) {
      return false;
    }
    for (int o : s.outputs) {
      if (!once(o) || value(o).sizes.back() != h ||
          numel_of(value(o).sizes) * 3 != numel_of(value(g).sizes)) {
        return false;
      }
    }
    *split = sn;
    return true;
  }
  /// `sum` is add(a, b) (either order), read once, of the two splits' first pieces.
  bool gate_sum(int sum, int a, int b, int* add_node) const {
    const int n = made_by(sum);
    if (n < 0 || !once(sum) || !binary(node(n), "tern::add") || other(node(n), a) != b) {
      return false;
    }
    *add_node = n;
    return true;
  }
  /// `vid` is read by exactly `count` nodes (all in the region) and leaves no region.
  bool once_or_region_reader(int vid, size_t count) const {
    return readers(vid).size() == count && read_exactly(vid, static_cast<int>(count));
  }

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

std::vector<GruCellMatch> match_gru_cells(const Graph& g, const DelegateRegion& region) {
  Matcher matcher(g, region);
  std::vector<GruCellMatch> out;
  for (int n : region.nodes) {
    GruCellMatch m;
    if (matcher.match_gru_at(n, &m)) out.push_back(m);
  }
  return out;
}

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
