#include "backends/cpu/compile/bottleneck_match.h"

#include <set>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::compiler::cpu_compile {
namespace {

using cpu::BottleneckEpilogue;

class Matcher {
 public:
  Matcher(const Graph& g, const DelegateRegion& r) : g_(g), r_(r) {
    readers_.resize(g.values.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (int a : g.nodes[n].args) {
        if (a < 0) continue;
        readers_[static_cast<size_t>(a)].push_back(static_cast<int>(n));
        // A cat reads each element of its tensor list: such a value has another reader.
        for (int t : g.values[static_cast<size_t>(a)].tensors) {
          readers_[static_cast<size_t>(t)].push_back(static_cast<int>(n));
        }
      }
    }
    leaving_.insert(r.outputs.begin(), r.outputs.end());
    leaving_.insert(g.outputs.begin(), g.outputs.end());
  }

  /// The chain starting at region node `first`, if one does.
  bool match(int first, BottleneckMatch* m) {
    *m = BottleneckMatch();
    const Node& head = node(first);
    int dw = first;
    if (is_pointwise(head)) {
      m->expand = first;
      m->nodes.push_back(first);
      int e = head.outputs[0];
      dw = sole_reader(e);
      if (dw >= 0 && epilogue(node(dw), &m->expand_epilogue)) {
        m->nodes.push_back(dw);
        e = node(dw).outputs[0];
        dw = sole_reader(e);
      }
      if (dw < 0 || !is_depthwise(node(dw)) || node(dw).args[0] != e ||
          depth_multiplier(node(dw)) != 1) {
        return false;
      }
      m->input = head.args[0];
    } else if (is_depthwise(head)) {
      m->input = head.args[0];
      m->multiplier = depth_multiplier(head);
    } else {
      return false;
    }
    m->depthwise = dw;
    m->nodes.push_back(dw);
    int d = node(dw).outputs[0];
    const int act = sole_reader(d);
    if (act >= 0 && epilogue(node(act), &m->depthwise_epilogue)) {
      m->nodes.push_back(act);
      d = node(act).outputs[0];
    }
    m->output = d;
    int proj = sole_reader(d);
    BottleneckMatch se = *m;
    if (proj < 0 && match_se(d, &se)) {  // the project reads d · gate
      const int gated = se.output;
      const int p = sole_reader(gated);
      if (p >= 0 && is_pointwise(node(p)) && node(p).args[0] == gated) {
        *m = se;
        d = gated;
        proj = p;
      }
    }
    if (proj >= 0 && is_pointwise(node(proj)) && node(proj).args[0] == d) {
      m->project = proj;
      m->nodes.push_back(proj);
      m->output = node(proj).outputs[0];
    }
    // With a project the residual is added before its clamp; without one after the depthwise
    // epilogue (StarNet's x + dwconv2(g(x))).
    fold_residual(m);
    return m->expand >= 0 || m->project >= 0 || is_large_depthwise(node(dw)) ||
           is_wide_depthwise(node(dw));
  }

 private:
  const Node& node(int n) const { return g_.nodes[static_cast<size_t>(n)]; }
  const Value& value(int v) const { return g_.values[static_cast<size_t>(v)]; }
  bool in_region(int n) const { return n >= r_.nodes.front() && n <= r_.nodes.back(); }

  /// The one region node reading value `v` (once), or -1 when another node reads it, it is read
  /// twice, or it leaves the region.
  int sole_reader(int v) const {
    const std::vector<int>& rs = readers_[static_cast<size_t>(v)];
    if (rs.size() != 1 || leaving_.count(v) != 0 || !in_region(rs[0])) return -1;
    return rs[0];
  }

  /// The squeeze-excitation reading d (the depthwise stage's output, read by nothing else than
  /// its global mean and the gating mul): mean(d) or adaptive_avg_pool2d(d, 1) -> 1x1 conv
  /// (S channels) [-> relu, relu6, hardswish or silu] -> 1x1 conv (back to E) -> sigmoid or
  /// hardsigmoid -> mul(d, gate) (either order), every intermediate read once, inside the region
  /// and not leaving it. Appends the nodes to m and sets m->output to the mul's output.
  bool match_se(int d, BottleneckMatch* m) const {
    const std::vector<int>& rs = readers_[static_cast<size_t>(d)];
    if (rs.size() != 2 || leaving_.count(d) != 0 || !in_region(rs[0]) || !in_region(rs[1])) {
      return false;
    }
    const Value& dv = value(d);
    if (dv.sizes.size() != 4) return false;
    const int64_t e = dv.sizes[1];
    const std::vector<int64_t> pooled{dv.sizes[0], e, 1, 1};
    int pool = -1, mul = -1;
    for (int r : rs) {
      const Node& n = node(r);
      if (n.op == "tern::mul" && n.outputs.size() == 1) mul = r;
      if ((n.op == "tern::mean" || n.op == "tern::adaptive_avg_pool2d") && n.args[0] == d &&
          n.outputs.size() == 1 && value(n.outputs[0]).sizes == pooled) {
        pool = r;
      }
    }
    if (pool < 0 || mul < 0) return false;
    try {
      if (node(pool).op == "tern::mean") {
        if (!global_mean_keepdim(g_, node(pool))) return false;
      } else {
        int64_t size[2];
        spatial(g_, node(pool).args[1], "output_size", nullptr, 0, size);
        if (size[0] != 1 || size[1] != 1) return false;
      }
    } catch (const Unsupported&) {
      return false;
    }
    BottleneckMatch se = *m;
    se.nodes.push_back(pool);
    int v = node(pool).outputs[0];
    const int squeeze = sole_reader(v);
    if (squeeze < 0 || !is_pointwise(node(squeeze)) || node(squeeze).args[0] != v) return false;
    se.se_squeeze = squeeze;
    se.se_channels = value(node(squeeze).outputs[0]).sizes[1];
    if (se.se_channels >= (int64_t{1} << 22)) return false;  // the blob's field holds less
    se.nodes.push_back(squeeze);
    v = node(squeeze).outputs[0];
    int next = sole_reader(v);
    if (next >= 0 && epilogue(node(next), &se.se_squeeze_epilogue)) {
      se.nodes.push_back(next);
      v = node(next).outputs[0];
      next = sole_reader(v);
    }
    if (next < 0 || !is_pointwise(node(next)) || node(next).args[0] != v ||
        value(node(next).outputs[0]).sizes != pooled) {
      return false;
    }
    se.se_excite = next;
    se.nodes.push_back(next);
    v = node(next).outputs[0];
    const int gate = sole_reader(v);
    if (gate < 0 || node(gate).args.size() != 1 || node(gate).outputs.size() != 1 ||
        (node(gate).op != "tern::sigmoid" && node(gate).op != "tern::hardsigmoid")) {
      return false;
    }
    se.se_gate = static_cast<uint32_t>(node(gate).op == "tern::sigmoid"
                                           ? cpu::SqueezeGate::Sigmoid
                                           : cpu::SqueezeGate::Clamp01);
    se.nodes.push_back(gate);
    v = node(gate).outputs[0];
    const Node& mn = node(mul);
    if (sole_reader(v) != mul || mn.args.size() != 2 ||
        !((mn.args[0] == d && mn.args[1] == v) || (mn.args[0] == v && mn.args[1] == d)) ||
        value(mn.outputs[0]).sizes != dv.sizes) {
      return false;
    }
    se.nodes.push_back(mul);
    se.output = mn.outputs[0];
    *m = se;
    return true;
  }

  /// A relu, relu6 (hardtanh/clamp to [0, 6]), hardswish or silu as the kernel's stage epilogue.
  bool epilogue(const Node& n, uint32_t* code) const {
    if (n.op == "tern::hardswish" || n.op == "tern::silu") {
      if (n.args.size() != 1) return false;
      *code = static_cast<uint32_t>(n.op == "tern::silu" ? BottleneckEpilogue::Silu
                                                          : BottleneckEpilogue::Hardswish);
      return true;
    }
    if (n.op != "tern::relu" && n.op != "tern::hardtanh" && n.op != "tern::clamp") return false;
    float lo, hi;
    clamp_bounds(g_, n, &lo, &hi);
    if (lo != 0.0f) return false;
    if (hi == 6.0f) {
      *code = static_cast<uint32_t>(BottleneckEpilogue::Relu6);
      return true;
    }
    if (hi > 3.0e38f) {
      *code = static_cast<uint32_t>(BottleneckEpilogue::Relu);
      return true;
    }
    return false;
  }

  bool is_conv_on_activation(const Node& n) const {
    return n.op == "tern::conv2d" && n.args.size() >= 3 && !value(n.args[0]).is_constant &&
           value(n.args[1]).is_constant &&
           (is_none(g_, n.args[2]) || value(n.args[2]).is_constant);
  }

  /// A 1x1 stride-1 unpadded one-group conv.
  bool is_pointwise(const Node& n) const {
    if (!is_conv_on_activation(n)) return false;
    const ConvAttrs a = conv_attrs(g_, n);
    const std::vector<int64_t>& w = value(n.args[1]).sizes;
    return !a.depthwise && a.groups == 1 && w[2] == 1 && w[3] == 1 && a.stride[0] == 1 &&
           a.stride[1] == 1 && a.pad[0] == 0 && a.pad[1] == 0 && a.pad_end[0] == 0 &&
           a.pad_end[1] == 0;
  }

  /// A depthwise conv (any whole number of output channels per input channel: depth_multiplier),
  /// dilation 1 and a window of at most kMaxBottleneckWindow rows.
  bool is_depthwise(const Node& n) const {
    if (!is_conv_on_activation(n)) return false;
    const ConvAttrs a = conv_attrs(g_, n);
    const std::vector<int64_t>& w = value(n.args[1]).sizes;
    return a.depthwise && w[0] % a.groups == 0 && a.dilation[0] == 1 && a.dilation[1] == 1 &&
           w[2] <= static_cast<int64_t>(cpu::kMaxBottleneckWindow);
  }

  /// Output channels per input channel of depthwise conv `n`.
  int64_t depth_multiplier(const Node& n) const {
    return value(n.args[1]).sizes[0] / conv_attrs(g_, n).groups;
  }

  /// A depthwise window of more than 25 taps (ConvNeXt's and FastViT's 7x7) runs on tern's
  /// kernel whatever its size: XNNPACK's depthwise kernels stop at 25 taps, and past them it
  /// computes a grouped GEMM of one column per channel (a 7x7 stride-2 conv of 64x64x96 took
  /// 26 ms on two threads, against 0.13 ms for a 3x3 one).
  bool is_wide_depthwise(const Node& n) const {
    const std::vector<int64_t>& w = value(n.args[1]).sizes;
    return w[2] * w[3] > 25;
  }

  /// A lone depthwise conv with at least kLoneDepthwiseMinWork output floats runs on tern's
  /// kernel too (MobileNetV3's first block: 56x56x16): its depthwise rows beat XNNPACK's by more
  /// than the extra stage boundary costs (single thread, 112x112x16 stride 2: 10.5 µs vs 28.9).
  bool is_large_depthwise(const Node& n) const {
    const std::vector<int64_t>& y = value(n.outputs[0]).sizes;
    return y[1] * y[2] * y[3] >= kLoneDepthwiseMinWork;
  }
  static constexpr int64_t kLoneDepthwiseMinWork = 1 << 15;

  /// add(out, r) of the chain's output (the project's, or the depthwise's), either order, alpha
  /// 1, no broadcasting: r becomes the residual and the add's output the chain's.
  void fold_residual(BottleneckMatch* m) const {
    const int add = sole_reader(m->output);
    if (add < 0 || node(add).op != "tern::add" || binary_alpha(g_, node(add)) != 1.0) return;
    const Node& a = node(add);
    const int other = a.args[0] == m->output ? a.args[1] : a.args[0];
    const Value& ov = value(other);
    if (other == m->output || ov.kind != Value::Kind::Tensor || ov.is_constant ||
        ov.sizes != value(m->output).sizes || value(a.outputs[0]).sizes != ov.sizes) {
      return;
    }
    m->residual = other;
    m->nodes.push_back(add);
    m->output = a.outputs[0];
  }

  const Graph& g_;
  const DelegateRegion& r_;
  std::vector<std::vector<int>> readers_;  ///< value -> nodes reading it (graph-wide)
  std::set<int> leaving_;                  ///< region and graph outputs
};

}  // namespace

std::vector<BottleneckMatch> match_bottlenecks(const Graph& g, const DelegateRegion& region) {
  std::vector<BottleneckMatch> found;
  if (region.nodes.empty()) return found;
  Matcher matcher(g, region);
  std::set<int> claimed;
  for (int n : region.nodes) {
    BottleneckMatch m;
    if (claimed.count(n) != 0 || !matcher.match(n, &m)) continue;
    bool free = true;
    for (int k : m.nodes) free = free && claimed.count(k) == 0;
    if (!free) continue;
    claimed.insert(m.nodes.begin(), m.nodes.end());
    found.push_back(m);
  }
  return found;
}

}  // namespace tern::compiler::cpu_compile
