#include "backends/cpu/compile/softmax_mix_match.h"

#include <exception>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/region_index.h"
#include "backends/cpu/cpu_blob_format.h"

namespace tern::compiler::cpu_compile {
namespace {

/// An f32 constant of `sizes`.
bool f32_constant(const Value& v, const std::vector<int64_t>& sizes) {
  return v.is_tensor() && v.is_constant && v.dtype == DType::F32 && v.sizes == sizes;
}

/// Node `c` (reading the softmax's output [N, K, H, W]) as the conv of a SoftmaxMixMatch.
bool pointwise_conv(const Graph& g, const Node& c, int64_t k, SoftmaxMixMatch* m) {
  if (c.op != "tern::conv2d" || c.args.size() != 7 || c.outputs.size() != 1) return false;
  const Value& w = g.values[static_cast<size_t>(c.args[1])];
  if (w.sizes.size() != 4) return false;
  const int64_t j = w.sizes[0];
  if (j < 1 || j > static_cast<int64_t>(cpu::kMaxChannelMixWidth) || !f32_constant(w, {j, k, 1, 1})) {
    return false;
  }
  const int b = c.args[2];
  const Value& bv = g.values[static_cast<size_t>(b)];
  const bool no_bias = bv.kind == Value::Kind::None;
  if (!no_bias && !f32_constant(bv, {j})) return false;
  try {
    const ConvAttrs a = conv_attrs(g, c);
    for (int d = 0; d < 2; ++d) {
      if (a.stride[d] != 1 || a.pad[d] != 0 || a.pad_end[d] != 0 || a.dilation[d] != 1) return false;
    }
    if (a.groups != 1) return false;
  } catch (const std::exception&) {
    return false;
  }
  m->weight = c.args[1];
  m->bias = no_bias ? -1 : b;
  return true;
}

}  // namespace

std::vector<SoftmaxMixMatch> match_softmax_mixes(const Graph& g, const DelegateRegion& region) {
  const RegionIndex idx(g, region);
  std::vector<SoftmaxMixMatch> found;
  for (int n : region.nodes) {
    const Node& s = idx.node(n);
    if (s.op != "tern::softmax" || s.args.size() != 2 || s.outputs.size() != 1) continue;
    const Value& x = idx.value(s.args[0]);
    const Value& dim = idx.value(s.args[1]);
    if (!idx.f32_activation(s.args[0]) || x.sizes.size() != 4 || dim.kind != Value::Kind::Int ||
        (dim.int_value != 1 && dim.int_value != -3)) {
      continue;
    }
    const int64_t k = x.sizes[1];
    if (k < 1 || k > static_cast<int64_t>(cpu::kMaxChannelMixWidth)) continue;
    const int reader = idx.only_reader(s.outputs[0]);
    if (reader < 0) continue;
    const Node& c = idx.node(reader);
    SoftmaxMixMatch m;
    if (c.args.empty() || c.args[0] != s.outputs[0] || !pointwise_conv(g, c, k, &m)) continue;
    m.softmax = n;
    m.conv = reader;
    found.push_back(m);
  }
  return found;
}

}  // namespace tern::compiler::cpu_compile
