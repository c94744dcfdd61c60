#include "backends/cpu/compile/region_index.h"

namespace tern::compiler::cpu_compile {

RegionIndex::RegionIndex(const Graph& g, const DelegateRegion& r) : g_(g) {
  for (int n : r.nodes) {
    in_region_.insert(n);
    for (int o : g.nodes[static_cast<size_t>(n)].outputs) producer_[o] = n;
  }
  for (const Node& n : g.nodes) {
    for (int a : n.args) {
      if (a >= 0) ++uses_[a];
    }
  }
  for (const Value& v : g.values) {
    for (int t : v.tensors) ++uses_[t];  // read through a list
  }
  for (int o : r.outputs) region_outputs_.insert(o);
}

int RegionIndex::made_by(int vid) const {
  auto it = producer_.find(vid);
  return it == producer_.end() ? -1 : it->second;
}

bool RegionIndex::once(int vid) const { return read_exactly(vid, 1); }

bool RegionIndex::read_exactly(int vid, int count) const {
  auto it = uses_.find(vid);
  return it != uses_.end() && it->second == count && region_outputs_.count(vid) == 0;
}

bool RegionIndex::f32_activation(int vid) const {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  return v.kind == Value::Kind::Tensor && v.dtype == DType::F32 && !v.is_constant;
}

int RegionIndex::only_reader(int vid) const {
  if (!once(vid)) return -1;
  for (int n : in_region_) {
    for (int a : g_.nodes[static_cast<size_t>(n)].args) {
      if (a == vid) return n;
    }
  }
  return -1;
}

}  // namespace tern::compiler::cpu_compile
