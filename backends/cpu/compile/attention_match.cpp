#include "backends/cpu/compile/attention_match.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {
namespace {

int64_t product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r) : RegionIndex(g, r) {}

  /// The pattern ending at `bmm_node` (the second product), into *m.
  bool match_at(int bmm_node, AttentionMatch* m) {
    const Node& pv = node(bmm_node);
    if (!is_bmm(pv)) return false;
    std::vector<int> nodes = {bmm_node};
    m->out = pv.outputs[0];
    // bmm(s, v), or bmm(v, [view of] transpose(s)).
    int x = pv.args[0];
    m->v = pv.args[1];
    m->transposed = false;
    int n = reader_made(x);
    if (n < 0 || !leads_to_softmax(n)) {
      x = pv.args[1];
      m->v = pv.args[0];
      m->transposed = true;
      n = reader_made(x);
      if (n >= 0 && is_view(node(n))) {
        nodes.push_back(n);
        x = node(n).args[0];
        n = reader_made(x);
      }
      if (n < 0 || !swaps_last_two(node(n))) return false;
      nodes.push_back(n);
      x = node(n).args[0];
      n = reader_made(x);
      if (n < 0) return false;
    }
    // Backwards: [view back] <- softmax <- [add mask] <- [mul/div scalar] <- [view] <- bmm.
    if (is_view(node(n))) {
      nodes.push_back(n);
      x = node(n).args[0];
      n = reader_made(x);
      if (n < 0) return false;
    }
    const Node& sm = node(n);
    if (sm.op != "tern::softmax" || sm.args.size() != 2 || !last_dim(sm.args[1], x)) return false;
    nodes.push_back(n);
    x = sm.args[0];
    m->scores_dims = sizes(x);
    if (!scores_from(x, m, &nodes)) return false;
    // Shapes: q [.., L, E], kᵀ [.., E, S], scores [.., L, S], v [.., S, Ev], out [.., L, Ev];
    // the views only regroup the dims before the last two.
    const std::vector<int64_t>& qs = sizes(m->q);
    const std::vector<int64_t>& ks = sizes(m->kt);
    const std::vector<int64_t>& vs = sizes(m->v);
    const std::vector<int64_t>& os = sizes(m->out);
    const std::vector<int64_t>& sc = m->scores_dims;
    const size_t r = qs.size();
    if (r < 2 || ks.size() != r || vs.size() != r || os.size() != r || sc.size() < 2 ||
        sc.size() > 6) {
      return false;
    }
    const int64_t heads = product(qs, 0, r - 2);
    const int64_t l = qs[r - 2], e = qs[r - 1], sk = ks[r - 1];
    // The fused node's v [.., S, Ev] and output [.., L, Ev] (transposed: v's and out's last
    // two dims swapped).
    const size_t rows = m->transposed ? r - 1 : r - 2, cols = m->transposed ? r - 2 : r - 1;
    if (ks[r - 2] != e || vs[rows] != sk || os[rows] != l || os[cols] != vs[cols] ||
        product(ks, 0, r - 2) != heads || product(vs, 0, r - 2) != heads ||
        sc[sc.size() - 2] != l || sc.back() != sk || product(sc, 0, sc.size() - 2) != heads ||
        sc.size() - 2 > 4) {
      return false;
    }
    for (int v : {m->kt, m->v, m->out}) {
      if (!f32_activation(v)) return false;
    }
    const Value& qv = value(m->q);  // q may be a constant (the Attention node's, version 20)
    if (!f32_activation(m->q) &&
        !(qv.is_constant && qv.dtype == DType::F32 && qv.quant.scheme == QuantSpec::Scheme::None)) {
      return false;
    }
    if (m->mask >= 0 && value(m->mask).is_dynamic()) return false;
    std::sort(nodes.begin(), nodes.end());
    if (nodes.back() != bmm_node) return false;  // lowered where the second bmm runs
    for (int k : nodes) {
      if (!in_region(k)) return false;
    }
    m->nodes = nodes;
    return true;
  }

 private:
  /// The scores `x` fed to the softmax: [add(y, mask) or add(mask, y)] with y from
  /// scaled_products(), or scaled_products(x). The nodes found are appended to *nodes.
  bool scores_from(int x, AttentionMatch* m, std::vector<int>* nodes) const {
    const int n = reader_made(x);
    if (n < 0) return false;
    const Node& add = node(n);
    if (is_binary(add, "tern::add") && plain_add(add)) {
      for (int i = 0; i < 2; ++i) {
        std::vector<int> found;
        if (sizes(add.args[i]) == sizes(x) && mask_fits(add.args[1 - i], sizes(x)) &&
            scaled_products(add.args[i], m, &found)) {
          m->mask = add.args[1 - i];
          nodes->push_back(n);
          nodes->insert(nodes->end(), found.begin(), found.end());
          return true;
        }
      }
      return false;
    }
    return scaled_products(x, m, nodes);
  }

  /// `x` = [mul(y, s), mul(s, y) or div(y, s)] of y = [view of] bmm(q, kᵀ) (each read once):
  /// q, kᵀ and the scale into *m, the nodes appended to *nodes.
  bool scaled_products(int x, AttentionMatch* m, std::vector<int>* nodes) const {
    int n = reader_made(x);
    if (n < 0) return false;
    double s = 0;
    int y = -1;
    m->scale = 1.0;
    if ((is_binary(node(n), "tern::mul") || is_binary(node(n), "tern::div")) &&
        scalar_operand(node(n), &y, &s)) {
      m->scale = node(n).op == "tern::div" ? 1.0 / s : s;
      nodes->push_back(n);
      n = reader_made(y);
      if (n < 0) return false;
    }
    if (is_view(node(n))) {
      nodes->push_back(n);
      n = reader_made(node(n).args[0]);
      if (n < 0) return false;
    }
    const Node& qk = node(n);
    if (!is_bmm(qk)) return false;
    nodes->push_back(n);
    m->q = qk.args[0];
    m->kt = qk.args[1];
    return true;
  }

  const std::vector<int64_t>& sizes(int vid) const { return value(vid).sizes; }

  /// Node `n` is the softmax, or a view of the softmax's output (the scores of the first
  /// form's second product).
  bool leads_to_softmax(int n) const {
    if (is_view(node(n))) {
      n = reader_made(node(n).args[0]);
      if (n < 0) return false;
    }
    return node(n).op == "tern::softmax";
  }

  /// transpose(x, -2, -1) or a permute swapping the last two dims alone (the region's
  /// index-map nodes passed check_index_map when the backend took them).
  bool swaps_last_two(const Node& n) const {
    if (n.outputs.size() != 1 || n.args.empty()) return false;
    const size_t r = sizes(n.args[0]).size();
    return r >= 2 && index_map_permutation(g_, n, r) == swapped_dims(r, r - 2, r - 1);
  }

  /// The region node making `vid` when `vid` is read once (by the pattern) and stays in the
  /// region; else -1.
  int reader_made(int vid) const { return once(vid) ? made_by(vid) : -1; }

  bool f32_activation(int vid) const {
    const Value& v = value(vid);
    return v.kind == Value::Kind::Tensor && v.dtype == DType::F32 && !v.is_constant &&
           !v.is_dynamic();
  }
  bool is_bmm(const Node& n) const {
    return (n.op == "tern::bmm" || n.op == "tern::matmul") && n.args.size() == 2 &&
           n.outputs.size() == 1;
  }
  bool is_view(const Node& n) const {
    if ((n.op != "tern::view" && n.op != "tern::reshape") || n.outputs.size() != 1 ||
        n.args.empty()) {
      return false;
    }
    // Only the dims before the last two regroup.
    const std::vector<int64_t>& a = sizes(n.args[0]);
    const std::vector<int64_t>& b = sizes(n.outputs[0]);
    return a.size() >= 2 && b.size() >= 2 && a[a.size() - 1] == b[b.size() - 1] &&
           a[a.size() - 2] == b[b.size() - 2] &&
           product(a, 0, a.size() - 2) == product(b, 0, b.size() - 2);
  }
  static bool is_binary(const Node& n, const char* op) {
    return n.op == op && n.outputs.size() == 1 && (n.args.size() == 2 || n.args.size() == 3);
  }
  /// add(a, b) with no alpha or alpha 1; div's rounding mode none.
  bool plain_add(const Node& n) const {
    if (n.args.size() == 2) return true;
    const Value& a = value(n.args[2]);
    return (a.kind == Value::Kind::Int && a.int_value == 1) ||
           (a.kind == Value::Kind::Double && a.double_value == 1.0);
  }
  /// mul(t, s), mul(s, t) or div(t, s) with s a finite nonzero number (or a one-element f32
  /// constant) and t made in the pattern: t into *t, s into *s.
  bool scalar_operand(const Node& n, int* t, double* s) const {
    if (n.args.size() == 3 && value(n.args[2]).kind != Value::Kind::None) return false;
    for (int i = 0; i < 2; ++i) {
      if (n.op == "tern::div" && i == 1) break;
      if (!scalar_constant(g_, n.args[1 - i], s) || reader_made(n.args[i]) < 0) continue;
      if (!(*s != 0.0 && std::fabs(*s) < 1e30)) return false;
      *t = n.args[i];
      return true;
    }
    return false;
  }
  /// `vid` is an f32 tensor (constant or activation, static) broadcasting to `scores` with the
  /// keys in full: rank <= the scores', each dim 1 or the scores'.
  bool mask_fits(int vid, const std::vector<int64_t>& scores) const {
    if (vid < 0) return false;
    const Value& m = value(vid);
    if (m.kind != Value::Kind::Tensor || m.dtype != DType::F32 || m.is_dynamic() ||
        m.sizes.empty() || m.sizes.size() > scores.size() || m.sizes.back() != scores.back()) {
      return false;
    }
    const size_t off = scores.size() - m.sizes.size();
    for (size_t i = 0; i < m.sizes.size(); ++i) {
      if (m.sizes[i] != 1 && m.sizes[i] != scores[off + i]) return false;
    }
    return true;
  }
  bool last_dim(int dim_vid, int x) const {
    const Value& d = value(dim_vid);
    if (d.kind != Value::Kind::Int) return false;
    const int64_t rank = static_cast<int64_t>(sizes(x).size());
    const int64_t dim = d.int_value < 0 ? d.int_value + rank : d.int_value;
    return dim == rank - 1;
  }
};

}  // namespace

std::vector<AttentionMatch> match_attentions(const Graph& g, const DelegateRegion& region) {
  Matcher matcher(g, region);
  std::vector<AttentionMatch> out;
  for (int n : region.nodes) {
    AttentionMatch m;
    if (matcher.match_at(n, &m)) out.push_back(m);
  }
  return out;
}

}  // namespace tern::compiler::cpu_compile
