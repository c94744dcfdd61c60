// What the cpu compile half's pattern matchers ask of a region (internal to
// backends/cpu/compile): which node makes a value, how often a value is read in the whole
// graph (tensor lists included), and whether it leaves the region. Shared by the tanh-GELU,
// RMS norm and attention matchers.
#pragma once

#include <map>
#include <set>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

class RegionIndex {
 public:
  RegionIndex(const Graph& g, const DelegateRegion& r);

  const Node& node(int n) const { return g_.nodes[static_cast<size_t>(n)]; }
  const Value& value(int vid) const { return g_.values[static_cast<size_t>(vid)]; }
  bool in_region(int n) const { return in_region_.count(n) != 0; }
  const std::set<int>& region_nodes() const { return in_region_; }
  /// The region node making `vid`, or -1.
  int made_by(int vid) const;
  /// Read by exactly one node, not through a list, and not leaving the region.
  bool once(int vid) const;
  /// Read by exactly `count` node arguments (lists included) and not leaving the region.
  bool read_exactly(int vid, int count) const;
  /// The one region node reading `vid` when it is read once (once()), else -1.
  int only_reader(int vid) const;
  /// An f32 tensor that is not a constant.
  bool f32_activation(int vid) const;

 protected:
  const Graph& g_;

 private:
  std::set<int> in_region_;
  std::set<int> region_outputs_;
  std::map<int, int> producer_;
  std::map<int, int> uses_;
};

}  // namespace tern::compiler::cpu_compile
