// The memory planner: liveness over node positions, views (and contiguous pieces, at a
// byte offset) aliased to their root, greedy best-fit placement of the largest tensors first.
#include "tools/compiler/memory_planner.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernels/util/split_piece.h"
#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

namespace {

uint64_t aligned_size(const Graph& g, int id, uint64_t alignment) {
  const Value& v = g.values[id];
  uint64_t nbytes = 0, aligned = 0;
  if (!shape_nbytes(v.dtype, v.sizes, &nbytes) || !checked_align_up(nbytes, alignment, &aligned)) {
    throw std::invalid_argument("method '" + g.name + "': value " + std::to_string(id) + " '" +
                                v.name + "': byte size overflows");
  }
  return aligned;
}

const Value* arg_value(const Graph& g, const Node& node, size_t i) {
  if (i >= node.args.size()) return nullptr;
  const int id = node.args[i];
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return nullptr;
  return &g.values[static_cast<size_t>(id)];
}

// An Int attribute; false when absent or of another kind.
bool int_attr(const Graph& g, const Node& node, size_t i, int64_t* v) {
  const Value* a = arg_value(g, node, i);
  if (a == nullptr || a->kind != Value::Kind::Int) return false;
  *v = a->int_value;
  return true;
}

// A dim normalized like ATen (negative counts from the end); false when out of range.
bool wrap_dim(int64_t dim, size_t rank, size_t* out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) return false;
  *out = static_cast<size_t>(dim < 0 ? dim + r : dim);
  return true;
}

// The piece [start, start + len) of `x` along `dim` as one contiguous run of x's bytes: the
// dims before `dim` hold a single index (all 1), or the piece is all of `dim`. `out` must have
// x's sizes with `dim` replaced by len (or removed when `drop_dim`). Sets the byte offset of
// its first element.
bool contiguous_piece(const Value& x, const Value& out, size_t dim, int64_t start, int64_t len,
                      bool drop_dim, uint64_t* byte_offset) {
  if (!x.is_tensor() || !out.is_tensor() || x.dtype != out.dtype) return false;
  const uint32_t bits = bits_per_element(x.dtype);
  if (bits % 8 != 0 || dim >= x.sizes.size()) return false;
  if (start < 0 || len < 0 || start > x.sizes[dim] - len) return false;
  bool one_outer = true;
  for (size_t d = 0; d < dim; ++d) one_outer = one_outer && x.sizes[d] == 1;
  if (!one_outer && len != x.sizes[dim]) return false;
  std::vector<int64_t> expected = x.sizes;
  if (drop_dim) {
    expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(dim));
  } else {
    expected[dim] = len;
  }
  if (expected != out.sizes) return false;
  uint64_t inner = 1;
  for (size_t d = dim + 1; d < x.sizes.size(); ++d) {
    if (x.sizes[d] < 0 || !checked_mul(inner, static_cast<uint64_t>(x.sizes[d]), &inner)) {
      return false;
    }
  }
  uint64_t elements = 0;
  return checked_mul(static_cast<uint64_t>(start), inner, &elements) &&
         checked_mul(elements, bits / 8, byte_offset);
}

}  // namespace

bool view_byte_offset(const Graph& graph, const Node& node, size_t output_index,
                      uint64_t* byte_offset) {
  if (output_index >= node.outputs.size()) return false;
  const Value* x = arg_value(graph, node, 0);
  const int out_id = node.outputs[output_index];
  if (x == nullptr || out_id < 0 || static_cast<size_t>(out_id) >= graph.values.size()) {
    return false;
  }
  const Value& out = graph.values[static_cast<size_t>(out_id)];
  if (!x->is_tensor() || !out.is_tensor()) return false;

  if (is_view_op(node.op)) {
    if (node.outputs.size() != 1) return false;
    uint64_t x_bytes = 0, out_bytes = 0;
    if (!shape_nbytes(x->dtype, x->sizes, &x_bytes) ||
        !shape_nbytes(out.dtype, out.sizes, &out_bytes) || x_bytes != out_bytes) {
      return false;  // not a pure reinterpretation: the kernel copies
    }
    *byte_offset = 0;
    return true;
  }
  size_t dim = 0;
  int64_t raw_dim = 0;
  if (node.op == "tern::slice") {
    // x, dim, start: Int or None, end: Int or None, step: Int.
    int64_t step = 0;
    if (node.outputs.size() != 1 || !int_attr(graph, node, 1, &raw_dim) ||
        !wrap_dim(raw_dim, x->sizes.size(), &dim) || !int_attr(graph, node, 4, &step) ||
        step < 1) {
      return false;
    }
    const int64_t size = x->sizes[dim];
    int64_t bound[2] = {0, std::numeric_limits<int64_t>::max()};
    for (size_t k = 0; k < 2; ++k) {
      const Value* a = arg_value(graph, node, 2 + k);
      if (a == nullptr) return false;
      if (a->kind == Value::Kind::Int) {
        bound[k] = a->int_value;
      } else if (a->kind != Value::Kind::None) {
        return false;
      }
    }
    // ATen: negative bounds count from the end, then both are clamped into [0, size] and
    // end below start means an empty slice.
    int64_t start = bound[0], end = bound[1];
    if (start < 0) start = start < -size ? 0 : start + size;
    if (end < 0) end = end < -size ? 0 : end + size;
    start = std::min(start, size);
    end = std::min(std::max(end, start), size);
    const int64_t len = end == start ? 0 : (end - start - 1) / step + 1;
    if (step != 1 && len > 1) return false;  // every step-th element: not one run
    return contiguous_piece(*x, out, dim, start, len, false, byte_offset);
  }
  if (node.op == "tern::select") {
    // x, dim, index.
    int64_t index = 0;
    if (node.outputs.size() != 1 || !int_attr(graph, node, 1, &raw_dim) ||
        !wrap_dim(raw_dim, x->sizes.size(), &dim) || !int_attr(graph, node, 2, &index)) {
      return false;
    }
    const int64_t size = x->sizes[dim];
    if (index < -size || index >= size) return false;
    if (index < 0) index += size;
    return contiguous_piece(*x, out, dim, index, 1, true, byte_offset);
  }
  if (node.op == "tern::split") {
    // x, split_sizes: IntList, dim -> one output per piece.
    const Value* sizes = arg_value(graph, node, 1);
    if (sizes == nullptr || sizes->kind != Value::Kind::IntList ||
        !int_attr(graph, node, 2, &raw_dim) || !wrap_dim(raw_dim, x->sizes.size(), &dim)) {
      return false;
    }
    int64_t start = 0, len = 0;
    if (!portable::split_piece(sizes->ints.data(), sizes->ints.size(), x->sizes[dim],
                               node.outputs.size(), output_index, &start, &len)) {
      return false;
    }
    return contiguous_piece(*x, out, dim, start, len, false, byte_offset);
  }
  return false;
}

namespace {

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
  plan.alias_offset.assign(n, 0);
  plan.lifetimes.assign(n, Lifetime{});

  // Positions: node i runs at position i, the nodes of a delegated region included (in the
  // order its portable fallback runs them), so values internal to a region live only as long as
  // the fallback needs them. What the delegate needs is added below.
  const int num_positions = static_cast<int>(graph.nodes.size());
  const int end = num_positions - 1;  // the last position (-1 for a method without nodes)

  // Views share their root's bytes, at an offset for contiguous pieces. alias_of always names
  // the root (chains are followed as they are made) and offsets accumulate along a chain.
  auto root_of = [&](int id) { return plan.alias_of[id] >= 0 ? plan.alias_of[id] : id; };
  // A delegated region writes each of its outputs, views included, into the output's bytes:
  // an output that is a view of a constant gets bytes of its own, never the constant's (those
  // are the program's, read-only: RWKV's slice of a constant state, delegated to vulkan, wrote
  // into the mapped file and crashed).
  std::vector<bool> region_output(n, false);
  for (const DelegateRegion& region : graph.delegates) {
    for (int id : region.outputs) region_output[static_cast<size_t>(id)] = true;
  }
  for (const Node& node : graph.nodes) {
    if (node.args.empty()) continue;
    const int src = node.args[0];
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int out = node.outputs[k];
      uint64_t piece = 0;
      if (src == out || graph.values[out].is_state ||
          !view_byte_offset(graph, node, k, &piece)) {
        continue;
      }
      const int root = root_of(src);
      const Value& rv = graph.values[root];
      if (rv.caller_bound || rv.is_state) continue;  // caller memory / never shared
      if (rv.is_constant && region_output[static_cast<size_t>(out)]) continue;
      // A piece of a dynamic tensor starts at an offset that moves with the actual sizes, so
      // only whole-tensor views (same bytes, prefix of the planned capacity) alias it.
      if (!is_view_op(node.op) &&
          (graph.values[src].is_dynamic() || graph.values[out].is_dynamic())) {
        continue;
      }
      plan.alias_of[out] = root;
      plan.alias_offset[out] = plan.alias_offset[src] + piece;  // within root's bytes
    }
  }

  // Which values get their own arena bytes.
  std::vector<bool> planned(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Value& v = graph.values[i];
    // Shared state lives in the caller's shared state buffer (format 1.2), not the arena.
    planned[i] = v.is_tensor() && !v.is_constant && !v.caller_bound && v.shared_state.empty() &&
                 plan.alias_of[i] < 0;
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
  // Method inputs are bound before the first node and keep their bytes to the last: a caller
  // may execute again without setting them again (benchmarks, a frame re-run), and nothing
  // the method writes may land on them. The cost is one input's bytes of arena reuse.
  for (int id : graph.inputs) {
    touch(id, -1);
    touch(id, std::max(end, -1));
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const int p = static_cast<int>(i);
    for (int a : graph.nodes[i].args) touch(a, p);
    for (int o : graph.nodes[i].outputs) touch(o, p);
  }
  // A delegate reads its region's inputs and writes its outputs at any time during the call and
  // touches nothing else. So every input (its root, for a view) stays live to the region's last
  // position: no internal value the fallback writes, and no region output, may take its bytes.
  // Outputs need nothing more: each is read after the region, is a method output or is state,
  // so it is live at the region's last position too, where every input still is; internal
  // values are never touched by the delegate, so sharing bytes with them is harmless.
  for (const DelegateRegion& region : graph.delegates) {
    for (int id : region.inputs) touch(id, region.nodes.back());
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

  // Greedy best fit over a few orders (largest first; longest-lived first; earliest first;
  // largest size x lifetime first): for each tensor, among the gaps between already placed
  // tensors whose lifetimes overlap, take the smallest that fits, else go above all of them.
  // The order with the smallest arena wins (ties: the first), which keeps the arena near the
  // lower bound on graphs where one order fragments.
  auto span_of = [](const Item& it) { return it.life.last - it.life.first; };
  auto by_size = [&](const Item& a, const Item& b) {
    if (a.size != b.size) return a.size > b.size;
    if (span_of(a) != span_of(b)) return span_of(a) > span_of(b);
    return a.id < b.id;
  };
  auto by_span = [&](const Item& a, const Item& b) {
    if (span_of(a) != span_of(b)) return span_of(a) > span_of(b);
    return by_size(a, b);
  };
  auto by_first_use = [&](const Item& a, const Item& b) {
    if (a.life.first != b.life.first) return a.life.first < b.life.first;
    return by_size(a, b);
  };
  auto by_area = [&](const Item& a, const Item& b) {
    const long double area_a = static_cast<long double>(a.size) * (span_of(a) + 1);
    const long double area_b = static_cast<long double>(b.size) * (span_of(b) + 1);
    if (area_a != area_b) return area_a > area_b;
    return by_size(a, b);
  };

  struct Placed {
    uint64_t offset, end;
    Lifetime life;
  };
  // Places `order` and returns the arena size; offsets go to `offsets` (indexed by value id).
  auto place = [&](const std::vector<Item>& order, std::vector<int64_t>& offsets) {
    std::vector<Placed> placed;
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    uint64_t arena = 0;
    for (const Item& it : order) {
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
      offsets[it.id] = static_cast<int64_t>(offset);
      arena = std::max(arena, item_end);
    }
    return arena;
  };

  bool have_best = false;
  std::vector<int64_t> candidate = plan.offsets;
  for (int strategy = 0; strategy < 4; ++strategy) {
    std::vector<Item> order = items;
    switch (strategy) {
      case 0: std::stable_sort(order.begin(), order.end(), by_size); break;
      case 1: std::stable_sort(order.begin(), order.end(), by_span); break;
      case 2: std::stable_sort(order.begin(), order.end(), by_first_use); break;
      default: std::stable_sort(order.begin(), order.end(), by_area); break;
    }
    const uint64_t arena = place(order, candidate);
    if (!have_best || arena < plan.arena_size) {
      have_best = true;
      plan.arena_size = arena;
      plan.offsets = candidate;
    }
    if (plan.arena_size == plan.lower_bound) break;  // cannot do better
  }

  // Views of planned roots lie at the root's offset plus their own (views of constants keep -1).
  for (size_t i = 0; i < n; ++i) {
    const int r = plan.alias_of[i];
    if (r >= 0) {
      plan.offsets[i] = plan.offsets[r] < 0
                            ? -1
                            : plan.offsets[r] + static_cast<int64_t>(plan.alias_offset[i]);
      plan.lifetimes[i] = plan.lifetimes[r];
    }
  }
  return plan;
}

}  // namespace tern::compiler
