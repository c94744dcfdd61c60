#include "backends/cpu/compile/tanh_gelu_match.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

class Matcher : public RegionIndex {
 public:
  Matcher(const Graph& g, const DelegateRegion& r) : RegionIndex(g, r) {}

  bool match_at(int tanh_node, TanhGeluMatch* m) {
    const Node& t = node(tanh_node);
    if (t.op != "tern::tanh" || t.args.size() != 1 || t.outputs.size() != 1) return false;
    // Backwards from tanh: E = mul(u, sqrt(2/pi)), D = add(x, c), C = mul(p, 0.044715),
    // P = pow(x, 3).
    int e_node, u;
    if (!scaled(t.args[0], kSqrt2OverPi, &e_node, &u)) return false;
    const int d_node = made_by(u);
    if (d_node < 0 || !once(u) || !is_plain_add(node(d_node))) return false;
    const Node& d = node(d_node);
    int x = -1, c_node = -1, p_node = -1;
    for (int i = 0; i < 2 && x < 0; ++i) {
      int cn, pv;
      if (!scaled(d.args[i], 0.044715, &cn, &pv)) continue;
      const int pn = made_by(pv);
      const int other = d.args[1 - i];
      double e = 0;
      if (pn < 0 || !once(pv) || node(pn).op != "tern::pow" || node(pn).args.size() != 2 ||
          node(pn).args[0] != other || !scalar_constant(g_, node(pn).args[1], &e) || e != 3.0) {
        continue;
      }
      x = other;
      c_node = cn;
      p_node = pn;
    }
    if (x < 0 || !f32_activation(x)) return false;
    // Forwards from tanh: G = add(tanh, 1), Y = mul(a, g) with a = mul(x, 0.5).
    const int g_node = only_reader(t.outputs[0]);
    if (g_node < 0 || !is_plain_add(node(g_node))) return false;
    double one = 0;
    const Node& gn = node(g_node);
    const int one_arg = gn.args[0] == t.outputs[0] ? gn.args[1] : gn.args[0];
    if (!scalar_constant(g_, one_arg, &one) || one != 1.0) return false;
    const int y_node = only_reader(gn.outputs[0]);
    if (y_node < 0) return false;
    const Node& yn = node(y_node);
    if (yn.op != "tern::mul" || yn.args.size() != 2 || yn.outputs.size() != 1) return false;
    const int a = yn.args[0] == gn.outputs[0] ? yn.args[1] : yn.args[0];
    int a_node, ax;
    if (!scaled(a, 0.5, &a_node, &ax) || ax != x) return false;
    const int y = yn.outputs[0];
    if (!f32_activation(y) || g_.values[static_cast<size_t>(y)].sizes !=
                              g_.values[static_cast<size_t>(x)].sizes) {
      return false;
    }
    m->x = x;
    m->y = y;
    m->nodes = {a_node, p_node, c_node, d_node, e_node, tanh_node, g_node, y_node};
    std::sort(m->nodes.begin(), m->nodes.end());
    if (m->nodes.back() != y_node) return false;  // lowered where the last mul runs
    m->x_reads = 3;
    for (int n : m->nodes) {
      if (!in_region(n)) return false;
    }
    return true;
  }

 private:
  static bool is_plain_add(const Node& n) {
    if (n.op != "tern::add" || n.outputs.size() != 1) return false;
    return n.args.size() == 2;
  }
  /// `vid` is made by mul(t, s) or mul(s, t) with scalar s near `factor`, read only by the
  /// pattern's next node: the mul into *mul_node, t into *t.
  bool scaled(int vid, double factor, int* mul_node, int* t) const {
    const int n = made_by(vid);
    if (n < 0 || !once(vid)) return false;
    const Node& m = node(n);
    if (m.op != "tern::mul" || m.args.size() != 2 || m.outputs.size() != 1) return false;
    for (int i = 0; i < 2; ++i) {
      double s = 0;
      if (scalar_constant(g_, m.args[1 - i], &s) && near(s, factor) && f32_activation(m.args[i])) {
        *mul_node = n;
        *t = m.args[i];
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::vector<TanhGeluMatch> match_tanh_gelus(const Graph& g, const DelegateRegion& region) {
  Matcher matcher(g, region);
  std::vector<TanhGeluMatch> out;
  for (int n : region.nodes) {
    TanhGeluMatch m;
    if (matcher.match_at(n, &m)) out.push_back(m);
  }
  return out;
}

}  // namespace tern::compiler::cpu_compile
