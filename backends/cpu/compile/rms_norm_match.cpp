#include "backends/cpu/compile/rms_norm_match.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {
namespace {

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r) : RegionIndex(g, r) {}

  bool match_at(int rsqrt_node, RmsNormMatch* m) const {
    const Node& r = node(rsqrt_node);
    if (r.op != "tern::rsqrt" || r.args.size() != 1 || r.outputs.size() != 1) return false;
    // Backwards: e = add(mean, eps), mean over the last dim (keepdim) of x² .
    const int e = r.args[0];
    const int add_node = made_by(e);
    if (add_node < 0 || !once(e) || !is_binary(node(add_node), "tern::add")) return false;
    const Node& a = node(add_node);
    int mean_value = -1;
    double eps = 0.0;
    for (int i = 0; i < 2 && mean_value < 0; ++i) {
      if (scalar_constant(g_, a.args[1 - i], &eps)) mean_value = a.args[i];
    }
    if (mean_value < 0 || !(static_cast<float>(eps) > 0.0f) || !std::isfinite(eps) ||
        !once(mean_value)) {
      return false;
    }
    const int mean_node = made_by(mean_value);
    if (mean_node < 0 || node(mean_node).op != "tern::mean") return false;
    const int sq = node(mean_node).args.at(0);
    const int sq_node = made_by(sq);
    if (sq_node < 0 || !once(sq)) return false;
    const int x = squared(node(sq_node));
    if (x < 0 || !f32_activation(x)) return false;
    const Value& xv = value(x);
    const size_t rank = xv.sizes.size();
    if (rank == 0 || rank == 4) return false;
    ReductionAttrs ra;
    try {
      ra = reduction_attrs(g_, node(mean_node));
    } catch (const std::exception&) {
      return false;
    }
    if (ra.sum || ra.max || !ra.keepdim || ra.reduced.size() != rank) return false;
    for (size_t d = 0; d < rank; ++d) {
      if (ra.reduced[d] != (d + 1 == rank)) return false;
    }
    // Forwards: s = mul(x, rsqrt), then optionally mul(s, w) by a constant [C].
    const int s_node = only_reader(r.outputs[0]);
    if (s_node < 0 || !is_binary(node(s_node), "tern::mul") ||
        other_arg(node(s_node), r.outputs[0]) != x) {
      return false;
    }
    int y = node(s_node).outputs[0];
    int y_node = s_node;
    int weight = -1;
    const int w_node = only_reader(y);
    if (w_node >= 0 && is_binary(node(w_node), "tern::mul")) {
      const int w = other_arg(node(w_node), y);
      const Value& wv = value(w);
      if (w >= 0 && wv.is_constant && wv.dtype == DType::F32 && wv.sizes.size() == 1 &&
          wv.sizes[0] == xv.sizes.back() && value(node(w_node).outputs[0]).sizes == xv.sizes) {
        weight = w;
        y = node(w_node).outputs[0];
        y_node = w_node;
      }
    }
    if (value(y).sizes != xv.sizes || value(y).dtype != DType::F32) return false;
    m->x = x;
    m->y = y;
    m->weight = weight;
    m->eps = eps;
    m->nodes = {sq_node, mean_node, add_node, rsqrt_node, s_node};
    if (y_node != s_node) m->nodes.push_back(y_node);
    std::sort(m->nodes.begin(), m->nodes.end());
    if (m->nodes.back() != y_node) return false;  // lowered where its last piece runs
    for (int n : m->nodes) {
      if (!in_region(n)) return false;
    }
    return true;
  }

 private:
  static bool is_binary(const Node& n, const char* op) {
    return n.op == op && n.args.size() == 2 && n.outputs.size() == 1;
  }
  static int other_arg(const Node& n, int vid) {
    if (n.args[0] == vid) return n.args[1];
    if (n.args[1] == vid) return n.args[0];
    return -1;
  }
  /// x of pow(x, 2) or mul(x, x), else -1.
  int squared(const Node& n) const {
    if (n.outputs.size() != 1 || n.args.size() != 2) return -1;
    double e = 0.0;
    if (n.op == "tern::pow" && scalar_constant(g_, n.args[1], &e) && e == 2.0) return n.args[0];
    if (n.op == "tern::mul" && n.args[0] == n.args[1]) return n.args[0];
    return -1;
  }
};

}  // namespace

std::vector<RmsNormMatch> match_rms_norms(const Graph& g, const DelegateRegion& region) {
  Matcher matcher(g, region);
  std::vector<RmsNormMatch> out;
  for (int n : region.nodes) {
    RmsNormMatch m;
    if (matcher.match_at(n, &m)) out.push_back(m);
  }
  return out;
}

}  // namespace tern::compiler::cpu_compile
