// The memory planner: liveness over instruction positions, views aliased to their root, greedy
// best-fit placement of the largest tensors first.
#include "tools/compiler/memory_planner.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

namespace {

// Instruction position of every node: the nodes of a delegate region share one position.
std::vector<int> node_positions(const Graph& g, int* num_positions) {
  std::vector<int> region_of(g.nodes.size(), -1);
  for (size_t r = 0; r < g.delegates.size(); ++r) {
    for (int n : g.delegates[r].nodes) region_of[n] = static_cast<int>(r);
  }
  std::vector<int> pos(g.nodes.size(), 0);
  int next = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const bool continues_region = n > 0 && region_of[n] >= 0 && region_of[n] == region_of[n - 1];
    pos[n] = continues_region ? pos[n - 1] : next++;
  }
  *num_positions = next;
  return pos;
}

uint64_t aligned_size(const Graph& g, int id, uint64_t alignment) {
  const Value& v = g.values[id];
  uint64_t nbytes = 0, aligned = 0;
  if (!shape_nbytes(v.dtype, v.sizes, &nbytes) || !checked_align_up(nbytes, alignment, &aligned)) {
    throw std::invalid_argument("method '" + g.name + "': value " + std::to_string(id) + " '" +
                                v.name + "': byte size overflows");
  }
  return aligned;
}

struct Item {
  int id;
  uint64_t size;
  Lifetime life;
};

bool overlaps(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(const Graph& graph, const PlannerOptions& options) {
  validate_graph(graph);
  const uint64_t alignment = options.alignment;
  if (!is_power_of_two(alignment)) {
    throw std::invalid_argument("plan_memory: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  }
  const size_t n = graph.values.size();
  MemoryPlan plan;
  plan.alignment = options.alignment;
  plan.offsets.assign(n, -1);
  plan.alias_of.assign(n, -1);
  plan.lifetimes.assign(n, Lifetime{});

  int num_positions = 0;
  const std::vector<int> pos = node_positions(graph, &num_positions);
  const int end = num_positions - 1;  // the last position (-1 for a method without nodes)

  // Views of contiguous tensors share their root's bytes. The root is followed through chains.
  auto root_of = [&](int id) { return plan.alias_of[id] >= 0 ? plan.alias_of[id] : id; };
  for (const Node& node : graph.nodes) {
    if (!is_view_op(node.op) || node.args.empty() || node.outputs.size() != 1) continue;
    const int src = node.args[0];
    const int out = node.outputs[0];
    const Value& sv = graph.values[src];
    const Value& ov = graph.values[out];
    if (!sv.is_tensor() || !ov.is_tensor() || ov.is_state || src == out) continue;
    const int root = root_of(src);
    const Value& rv = graph.values[root];
    if (rv.caller_bound || rv.is_state) continue;  // caller memory / never shared
    uint64_t src_bytes = 0, out_bytes = 0;
    shape_nbytes(sv.dtype, sv.sizes, &src_bytes);
    shape_nbytes(ov.dtype, ov.sizes, &out_bytes);
    if (src_bytes != out_bytes) continue;  // not a pure reinterpretation: copy instead
    plan.alias_of[out] = root;
  }

  // Which values get their own arena bytes.
  std::vector<bool> planned(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Value& v = graph.values[i];
    planned[i] = v.is_tensor() && !v.is_constant && !v.caller_bound && plan.alias_of[i] < 0;
  }

  // Liveness, accumulated on each value's root.
  std::vector<Lifetime>& life = plan.lifetimes;
  std::vector<bool> seen(n, false);
  auto touch = [&](int id, int p) {
    auto mark = [&](int t) {
      const int r = root_of(t);
      if (!seen[r]) {
        life[r] = {p, p};
        seen[r] = true;
      } else {
        life[r].first = std::min(life[r].first, p);
        life[r].last = std::max(life[r].last, p);
      }
    };
    if (graph.values[id].kind == Value::Kind::TensorList) {
      for (int t : graph.values[id].tensors) mark(t);
    } else {
      mark(id);
    }
  };
  for (int id : graph.inputs) touch(id, -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (int a : graph.nodes[i].args) touch(a, pos[i]);
    for (int o : graph.nodes[i].outputs) touch(o, pos[i]);
  }
  for (int id : graph.outputs) touch(id, std::max(end, -1));
  for (size_t i = 0; i < n; ++i) {
    if (graph.values[i].is_state) {
      touch(static_cast<int>(i), -1);
      touch(static_cast<int>(i), end);
    }
  }

  std::vector<Item> items;
  for (size_t i = 0; i < n; ++i) {
    if (!planned[i]) continue;
    if (!seen[i]) life[i] = {0, 0};  // validated graphs produce every tensor; defensive
    items.push_back(
        {static_cast<int>(i), aligned_size(graph, static_cast<int>(i), alignment), life[i]});
  }

  // Lower bound: the largest total of live aligned bytes at any position.
  {
    // Difference array over positions -1..end (index p + 1), then a running sum.
    std::vector<uint64_t> starts(static_cast<size_t>(num_positions) + 2, 0);
    std::vector<uint64_t> stops(static_cast<size_t>(num_positions) + 2, 0);
    for (const Item& it : items) {
      starts[static_cast<size_t>(it.life.first + 1)] += it.size;
      stops[static_cast<size_t>(it.life.last + 1)] += it.size;
    }
    uint64_t live = 0;
    for (size_t p = 0; p < starts.size(); ++p) {
      live += starts[p];
      plan.lower_bound = std::max(plan.lower_bound, live);
      live -= stops[p];
    }
  }

  // Greedy best fit: largest first; among the gaps between already placed tensors whose
  // lifetimes overlap, take the smallest that fits, else go above all of them.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.size != b.size) return a.size > b.size;
    const int la = a.life.last - a.life.first, lb = b.life.last - b.life.first;
    if (la != lb) return la > lb;
    return a.id < b.id;
  });
  struct Placed {
    uint64_t offset, end;
    Lifetime life;
  };
  std::vector<Placed> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (const Item& it : items) {
    uint64_t offset = 0;
    if (it.size > 0) {
      busy.clear();
      for (const Placed& p : placed) {
        if (p.end > p.offset && overlaps(p.life, it.life)) busy.push_back({p.offset, p.end});
      }
      std::sort(busy.begin(), busy.end());
      uint64_t cursor = 0;
      uint64_t best_gap = std::numeric_limits<uint64_t>::max();
      bool found = false;
      for (const auto& b : busy) {
        if (b.first > cursor) {
          const uint64_t gap = b.first - cursor;
          if (gap >= it.size && gap < best_gap) {
            best_gap = gap;
            offset = cursor;
            found = true;
          }
        }
        cursor = std::max(cursor, b.second);
      }
      if (!found) offset = cursor;
    }
    uint64_t item_end = 0;
    if (!checked_add(offset, it.size, &item_end) ||
        offset > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw std::invalid_argument("method '" + graph.name + "': arena size overflows");
    }
    placed.push_back({offset, item_end, it.life});
    plan.offsets[it.id] = static_cast<int64_t>(offset);
    plan.arena_size = std::max(plan.arena_size, item_end);
  }

  // Views of planned roots take the root's offset (views of constants keep -1).
  for (size_t i = 0; i < n; ++i) {
    const int r = plan.alias_of[i];
    if (r >= 0) {
      plan.offsets[i] = plan.offsets[r];
      plan.lifetimes[i] = plan.lifetimes[r];
    }
  }
  return plan;
}

}  // namespace tern::compiler
