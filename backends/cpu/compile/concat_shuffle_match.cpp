#include "backends/cpu/compile/concat_shuffle_match.h"

#include <map>
#include <set>

#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/strided_view.h"

namespace tern::compiler::cpu_compile {
namespace {

const std::vector<int64_t>& sizes_of(const Graph& g, int vid) {
  return g.values[static_cast<size_t>(vid)].sizes;
}

/// Whether index-map node `t` swaps dims 1 and 2 of a 5-D value of `sizes`: its result on a
/// row-major probe of those sizes is the probe permuted (0, 2, 1, 3, 4).
bool swaps_dims_1_2(const Graph& g, const Node& t, const std::vector<int64_t>& sizes) {
  if (t.op != "tern::transpose" && t.op != "tern::permute") return false;
  try {
    check_index_map(g, t);
    const StridedView probe = whole_value(0, sizes, false);
    const std::vector<StridedView> out = apply_index_map(g, t, probe);
    const StridedView want = permuted(probe, {0, 2, 1, 3, 4});
    return out.size() == 1 && out[0].sizes == want.sizes && out[0].strides == want.strides &&
           out[0].offset == 0;
  } catch (const std::exception&) {
    return false;
  }
}

/// Whether `split` cuts a value of `sizes` ([N, C, H, W], NHWC) along the channels into parts
/// of a multiple of `groups` channels, each NHWC (`nhwc`) and none a region output; the first
/// channel of each part into `starts`.
bool split_parts(const Graph& g, const Node& split, const std::vector<int64_t>& sizes,
                 int64_t groups, const std::function<bool(int)>& nhwc,
                 std::vector<int64_t>* starts) {
  if (split.op != "tern::split" || split.outputs.size() < 2) return false;
  try {
    check_index_map(g, split);
    const StridedView probe = whole_value(0, sizes, false);  // row-major: channel stride H*W
    const std::vector<StridedView> parts = apply_index_map(g, split, probe);
    const int64_t plane = sizes[2] * sizes[3];
    for (size_t i = 0; i < parts.size(); ++i) {
      const StridedView& v = parts[i];
      if (v.sizes.size() != 4 || v.sizes[0] != sizes[0] || v.sizes[2] != sizes[2] ||
          v.sizes[3] != sizes[3] || v.sizes[1] % groups != 0 || v.offset % plane != 0 ||
          (v.offset / plane) % groups != 0 || !nhwc(split.outputs[i])) {
        return false;
      }
      starts->push_back(v.offset / plane);
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<ConcatShuffleMatch> match_concat_shuffles(const Graph& g, const DelegateRegion& region,
                                                      size_t max_inputs,
                                                      const std::function<bool(int)>& nhwc) {
  std::map<int, int> uses;    // value -> node arguments reading it (whole graph)
  std::map<int, int> reader;  // value -> the (last) region node reading it
  for (const Node& n : g.nodes) {
    for (int a : n.args) {
      if (a < 0) continue;
      ++uses[a];
      for (int t : g.values[static_cast<size_t>(a)].tensors) ++uses[t];  // a cat's parts
    }
  }
  for (int n : region.nodes) {
    for (int a : g.nodes[static_cast<size_t>(n)].args) reader[a] = n;
  }
  const std::set<int> outputs(region.outputs.begin(), region.outputs.end());
  // The one region node reading value `v`, when nothing else reads it and it stays inside.
  auto only_reader = [&](int v) -> const Node* {
    auto r = reader.find(v);
    if (uses[v] != 1 || outputs.count(v) != 0 || r == reader.end()) return nullptr;
    const Node& n = g.nodes[static_cast<size_t>(r->second)];
    return n.args.empty() || n.args[0] != v || n.outputs.empty() ? nullptr : &n;
  };
  std::vector<ConcatShuffleMatch> found;
  for (int n : region.nodes) {
    const Node& cat = g.nodes[static_cast<size_t>(n)];
    if (cat.op != "tern::cat" || cat.outputs.size() != 1 || cat.args.size() != 2) continue;
    const int joined = cat.outputs[0];
    const std::vector<int64_t>& js = sizes_of(g, joined);
    std::vector<int> ins;
    try {
      ins = concat_inputs(g, cat);
      if (js.size() != 4 || (int_value(g, cat.args[1], "dim") % 4 + 4) % 4 != 1) continue;
    } catch (const std::exception&) {
      continue;
    }
    const int64_t groups = static_cast<int64_t>(ins.size());
    if (ins.size() < 2 || ins.size() > max_inputs || js[1] % groups != 0 || !nhwc(joined)) {
      continue;
    }
    const int64_t k = js[1] / groups;
    bool equal = true;
    for (int in : ins) equal = equal && sizes_of(g, in)[1] == k;
    if (!equal) continue;
    ConcatShuffleMatch m;
    m.cat = n;
    const Node* v1 = only_reader(joined);
    if (v1 == nullptr || v1->outputs.size() != 1 || !is_cpu_view_op(v1->op) ||
        sizes_of(g, v1->outputs[0]) != std::vector<int64_t>{js[0], groups, k, js[2], js[3]}) {
      continue;
    }
    const Node* t = only_reader(v1->outputs[0]);
    if (t == nullptr || t->outputs.size() != 1 || !swaps_dims_1_2(g, *t, sizes_of(g, v1->outputs[0]))) {
      continue;
    }
    const Node* last = only_reader(t->outputs[0]);
    std::vector<const Node*> chain = {v1, t};
    while (last != nullptr && last->op == "tern::clone" && last->outputs.size() == 1) {
      chain.push_back(last);
      last = only_reader(last->outputs[0]);
    }
    if (last == nullptr || last->outputs.size() != 1 || !is_cpu_view_op(last->op) ||
        sizes_of(g, last->outputs[0]) != js ||
        !nhwc(last->outputs[0])) {
      continue;
    }
    chain.push_back(last);
    m.outputs = {last->outputs[0]};
    m.first_channel = {0};
    const Node* split = only_reader(last->outputs[0]);
    std::vector<int64_t> starts;
    if (split != nullptr && split_parts(g, *split, js, groups, nhwc, &starts)) {
      chain.push_back(split);
      m.outputs = split->outputs;
      m.first_channel = starts;
    }
    for (const Node* c : chain) m.folded.push_back(static_cast<int>(c - g.nodes.data()));
    found.push_back(m);
  }
  return found;
}

}  // namespace tern::compiler::cpu_compile
