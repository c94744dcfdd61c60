// plan_memory against random graphs: an independent checker recomputes naive lifetimes from
// the graph and checks every pair of simultaneously live values for overlap; the checker is
// itself tested on plans broken by hand. (Hand-worked cases: memory_planner_test.cpp.)
#include "tools/compiler/memory_planner.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tools/compiler/graph_builder.h"

namespace tern::compiler {
namespace {

// The indices a Python slice start:end:step (step > 0) picks from range(size): the test's
// own statement of ATen's clamping (negative bounds count from the end, then clamp).
std::vector<int64_t> python_slice(int64_t size, bool has_start, int64_t start, bool has_end,
                                  int64_t end, int64_t step) {
  auto clamp_bound = [&](int64_t v) {
    if (v < 0) v += size;
    return std::max<int64_t>(0, std::min(v, size));
  };
  const int64_t lo = has_start ? clamp_bound(start) : 0;
  const int64_t hi = has_end ? clamp_bound(end) : size;
  std::vector<int64_t> picked;
  for (int64_t i = lo; i < hi; i += step) picked.push_back(i);
  return picked;
}

// For output `k` of a slice/select/split node: the flat source element index of every output
// element in row-major order, found by walking coordinates one by one. False when the
// node is not a piece op or its attributes are malformed. Select's output drops the dim, which
// leaves the row-major order unchanged.
bool piece_source_indices(const Graph& g, const Node& nd, size_t k, std::vector<int64_t>* flat) {
  const Value& x = g.values[static_cast<size_t>(nd.args.at(0))];
  const int rank = static_cast<int>(x.sizes.size());
  auto attr = [&](size_t i) -> const Value& { return g.values[static_cast<size_t>(nd.args.at(i))]; };
  if (rank == 0) return false;
  std::vector<int64_t> picked;  // source indices along dim, one per output position
  int dim = 0;
  if (nd.op == "tern::slice" && nd.args.size() == 5) {
    dim = static_cast<int>(attr(1).int_value);
    if (dim < 0) dim += rank;
    const int64_t size = x.sizes[static_cast<size_t>(dim)];
    picked = python_slice(size, attr(2).kind == Value::Kind::Int, attr(2).int_value,
                          attr(3).kind == Value::Kind::Int, attr(3).int_value, attr(4).int_value);
  } else if (nd.op == "tern::select" && nd.args.size() == 3) {
    dim = static_cast<int>(attr(1).int_value);
    if (dim < 0) dim += rank;
    const int64_t size = x.sizes[static_cast<size_t>(dim)];
    int64_t index = attr(2).int_value;
    if (index < 0) index += size;
    picked = {index};
  } else if (nd.op == "tern::split" && nd.args.size() == 3) {
    dim = static_cast<int>(attr(2).int_value);
    if (dim < 0) dim += rank;
    const int64_t size = x.sizes[static_cast<size_t>(dim)];
    std::vector<int64_t> lens = attr(1).ints;
    if (lens.size() == 1 && nd.outputs.size() != 1) {  // one chunk size
      lens.clear();
      for (int64_t at = 0; at < size; at += attr(1).ints[0]) {
        lens.push_back(std::min(attr(1).ints[0], size - at));
      }
    }
    int64_t start = 0;
    for (size_t i = 0; i < k; ++i) start += lens.at(i);
    for (int64_t i = 0; i < lens.at(k); ++i) picked.push_back(start + i);
  } else {
    return false;
  }
  // Walk every source coordinate whose dim-coordinate is picked, in output order.
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * x.sizes[static_cast<size_t>(d) + 1];
  }
  std::vector<int64_t> out_sizes = x.sizes;
  out_sizes[static_cast<size_t>(dim)] = static_cast<int64_t>(picked.size());
  uint64_t total = 1;
  for (int64_t s : out_sizes) total *= static_cast<uint64_t>(s);
  flat->clear();
  for (uint64_t n = 0; n < total; ++n) {
    uint64_t rest = n;
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const uint64_t sz = static_cast<uint64_t>(out_sizes[static_cast<size_t>(d)]);
      int64_t c = static_cast<int64_t>(rest % sz);
      rest /= sz;
      if (d == dim) c = picked[static_cast<size_t>(c)];
      offset += c * strides[static_cast<size_t>(d)];
    }
    flat->push_back(offset);
  }
  return true;
}

// A random DAG: inputs (some caller-bound), constants, state tensors, ops with 1-3 args and
// 1-2 outputs, views (same bytes, and some byte-changing "views" that must be copies), state
// updates, tensor lists, multi-use values, outputs, and some delegate regions.
Graph random_graph(std::mt19937& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](int percent) { return uni(0, 99) < percent; };
  auto random_numel = [&]() -> int64_t {
    if (chance(3)) return 0;
    if (chance(50)) return uni(1, 64);
    return int64_t(uni(1, 64)) * uni(1, 64);
  };
  GraphBuilder b;
  std::vector<int> avail;  // tensors usable as args
  std::vector<int> states;
  const int num_inputs = uni(1, 3);
  for (int i = 0; i < num_inputs; ++i) {
    const int id = b.input("in" + std::to_string(i), DType::F32, {random_numel()});
    if (chance(20)) b.graph().values[id].caller_bound = true;
    avail.push_back(id);
  }
  for (int i = uni(0, 2); i > 0; --i) {
    const int64_t n = uni(1, 16);
    avail.push_back(b.constant("c" + std::to_string(i), DType::F32, {n},
                               std::vector<uint8_t>(static_cast<size_t>(n) * 4)));
  }
  for (int i = uni(0, 2); i > 0; --i) {
    states.push_back(b.state("s" + std::to_string(i), DType::F32, {random_numel()}));
  }
  const int num_nodes = uni(3, 40);
  std::vector<int> produced;
  for (int n = 0; n < num_nodes; ++n) {
    // Recent values are likelier args, so lifetimes vary from short to long.
    auto pick = [&]() {
      const int sz = static_cast<int>(avail.size());
      const int back = chance(70) ? uni(0, std::min(sz - 1, 3)) : uni(0, sz - 1);
      return avail[static_cast<size_t>(sz - 1 - back)];
    };
    const int kind = uni(0, 99);
    if (kind < 6) {
      // A piece of a random tensor: slice / select / split, contiguous or not.
      const int src = pick();
      const Value sv = b.graph().values[static_cast<size_t>(src)];
      if (sv.sizes.empty()) continue;
      const int rank = static_cast<int>(sv.sizes.size());
      const int dim_index = uni(0, rank - 1);
      const int64_t size = sv.sizes[static_cast<size_t>(dim_index)];
      const int dim = b.int_value(chance(30) ? dim_index - rank : dim_index);
      std::vector<int64_t> out_sizes = sv.sizes;
      const int which = uni(0, 2);
      if (which == 0) {
        const bool has_start = chance(80), has_end = chance(80);
        const int64_t start = uni(-static_cast<int>(size) - 2, static_cast<int>(size) + 2);
        const int64_t end = uni(-static_cast<int>(size) - 2, static_cast<int>(size) + 2);
        const int64_t step = chance(75) ? 1 : uni(2, 3);
        out_sizes[static_cast<size_t>(dim_index)] = static_cast<int64_t>(
            python_slice(size, has_start, start, has_end, end, step).size());
        const int v = b.op("tern::slice",
                           {src, dim, has_start ? b.int_value(start) : b.none(),
                            has_end ? b.int_value(end) : b.none(), b.int_value(step)},
                           DType::F32, out_sizes);
        avail.push_back(v);
        produced.push_back(v);
      } else if (which == 1 && size > 0) {
        out_sizes.erase(out_sizes.begin() + dim_index);
        const int v = b.op("tern::select",
                           {src, dim, b.int_value(uni(-static_cast<int>(size),
                                                      static_cast<int>(size) - 1))},
                           DType::F32, out_sizes);
        avail.push_back(v);
        produced.push_back(v);
      } else {
        // Random cut points (sizes per output) or, sometimes, one chunk size.
        std::vector<int64_t> pieces;
        int64_t left = size;
        while (left > 0 && pieces.size() < 3) {
          const int64_t p = uni(0, static_cast<int>(left));
          pieces.push_back(p);
          left -= p;
        }
        pieces.push_back(left);
        std::vector<int64_t> split_sizes = pieces;
        if (size > 0 && chance(30)) {
          const int64_t chunk = uni(1, static_cast<int>(size));
          split_sizes = {chunk};
          pieces.clear();
          for (int64_t at = 0; at < size; at += chunk) pieces.push_back(std::min(chunk, size - at));
        }
        std::vector<int> outs;
        for (int64_t p : pieces) {
          out_sizes[static_cast<size_t>(dim_index)] = p;
          outs.push_back(b.tensor("piece", DType::F32, out_sizes));
        }
        b.op_into("tern::split", {src, b.int_list(split_sizes), dim}, outs);
        for (int o : outs) {
          avail.push_back(o);
          produced.push_back(o);
        }
      }
    } else if (kind < 9) {
      // A multi-dim tensor (leading 1s are common) for pieces to cut.
      std::vector<int64_t> sizes;
      for (int d = uni(1, 3); d > 0; --d) sizes.push_back(chance(50) ? 1 : uni(0, 6));
      const int v = b.op("tern::op", {pick()}, DType::F32, sizes);
      avail.push_back(v);
      produced.push_back(v);
    } else if (kind < 15) {
      // A view of a random tensor: same byte size (an alias) or, rarely, not.
      const int src = pick();
      uint64_t numel = 1;
      for (int64_t s : b.graph().values[src].sizes) numel *= static_cast<uint64_t>(s);
      const DType dt = chance(10) ? DType::F16 : DType::F32;
      static const char* kViews[] = {"tern::reshape",   "tern::view",    "tern::squeeze",
                                     "tern::unsqueeze", "tern::flatten", "tern::alias"};
      const int v = b.op(kViews[uni(0, 5)], {src}, dt, {1, static_cast<int64_t>(numel)});
      avail.push_back(v);
      produced.push_back(v);
    } else if (kind < 22 && !states.empty()) {
      const int s = states[static_cast<size_t>(uni(0, static_cast<int>(states.size()) - 1))];
      b.op_into("tern::update_", {s, pick()}, {s});
    } else if (kind < 27 && avail.size() >= 2) {
      Value list;
      list.kind = Value::Kind::TensorList;
      list.tensors = {pick(), pick()};
      b.graph().values.push_back(list);
      const int l = static_cast<int>(b.graph().values.size() - 1);
      const int v = b.op("tern::cat", {l}, DType::F32, {random_numel()});
      avail.push_back(v);
      produced.push_back(v);
    } else {
      std::vector<int> args;
      for (int a = uni(1, 3); a > 0; --a) args.push_back(pick());
      if (chance(20)) args.push_back(b.int_value(uni(0, 3)));
      if (chance(15)) {
        const int o1 = b.tensor("o1", DType::F32, {random_numel()});
        const int o2 = b.tensor("o2", DType::F32, {random_numel()});
        b.op_into("tern::split2", args, {o1, o2});
        for (int o : {o1, o2}) {
          avail.push_back(o);
          produced.push_back(o);
        }
      } else {
        const int v = b.op("tern::op", args, DType::F32, {random_numel()});
        avail.push_back(v);
        produced.push_back(v);
      }
    }
  }
  if (produced.empty()) produced.push_back(b.op("tern::op", {avail[0]}, DType::F32, {4}));
  b.output(produced.back());
  for (int i = uni(0, 2); i > 0; --i) {
    b.output(produced[static_cast<size_t>(uni(0, static_cast<int>(produced.size()) - 1))]);
  }
  for (size_t i = 0; i < states.size(); ++i) {
    if (chance(30)) b.output(states[i]);
  }
  // Some delegate regions over disjoint node ranges (after all nodes and outputs exist).
  const int total = static_cast<int>(b.num_nodes());
  int next = 0;
  while (next < total && chance(30)) {
    const int first = uni(next, total - 1);
    const int last = uni(first, std::min(total - 1, first + (chance(30) ? 12 : 4)));
    b.delegate("cpu", first, last);
    next = last + 1;
  }
  return b.build();
}

uint64_t nbytes_of(const Value& v) {
  uint64_t numel = 1;
  for (int64_t s : v.sizes) numel *= static_cast<uint64_t>(s);
  return numel * (v.dtype == DType::F16 ? 2 : 4);
}

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

// The independent checker. Returns the checker's own lower bound.
uint64_t check_plan(const Graph& g, const MemoryPlan& plan, const std::string& tag) {
  const size_t n = g.values.size();
  EXPECT_EQ(plan.offsets.size(), n) << tag;
  EXPECT_EQ(plan.alias_of.size(), n) << tag;
  EXPECT_EQ(plan.alias_offset.size(), n) << tag;

  // Positions: every node its own, delegated or not (the order the fallback runs them).
  const int last_pos = static_cast<int>(g.nodes.size()) - 1;

  // Value-level lifetimes straight from the graph.
  const int kUnset = 1 << 30;
  std::vector<int> first(n, kUnset), last(n, -kUnset);
  auto touch = [&](int id, int at) {
    std::vector<int> ids = {id};
    if (g.values[static_cast<size_t>(id)].kind == Value::Kind::TensorList) {
      ids = g.values[static_cast<size_t>(id)].tensors;
    }
    for (int t : ids) {
      first[static_cast<size_t>(t)] = std::min(first[static_cast<size_t>(t)], at);
      last[static_cast<size_t>(t)] = std::max(last[static_cast<size_t>(t)], at);
    }
  };
  // Method inputs live through the whole method (a second execute may reuse them unset).
  for (int id : g.inputs) {
    touch(id, -1);
    touch(id, last_pos);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int a : g.nodes[i].args) touch(a, static_cast<int>(i));
    for (int o : g.nodes[i].outputs) touch(o, static_cast<int>(i));
  }
  // A region's inputs, derived here from its nodes (not from the declared boundary): every
  // tensor its nodes read (list elements one by one) that no earlier node of it made lives to
  // its last node, since the delegate may read it until it returns.
  for (const DelegateRegion& d : g.delegates) {
    std::set<int> made;
    for (int node : d.nodes) {
      for (int a : g.nodes[static_cast<size_t>(node)].args) {
        std::vector<int> ids = {a};
        if (g.values[static_cast<size_t>(a)].kind == Value::Kind::TensorList) {
          ids = g.values[static_cast<size_t>(a)].tensors;
        }
        for (int t : ids) {
          if (!made.count(t)) touch(t, d.nodes.back());
        }
      }
      for (int o : g.nodes[static_cast<size_t>(node)].outputs) {
        made.insert(o);
        if (g.values[static_cast<size_t>(o)].kind == Value::Kind::TensorList) {
          for (int t : g.values[static_cast<size_t>(o)].tensors) made.insert(t);
        }
      }
    }
  }
  for (int id : g.outputs) touch(id, last_pos);
  for (size_t i = 0; i < n; ++i) {
    if (g.values[i].is_state) {
      touch(static_cast<int>(i), -1);
      touch(static_cast<int>(i), last_pos);
    }
  }

  // Who produced each value (for checking alias legality).
  std::vector<int> producer(n, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(i);
  }

  auto owner = [&](size_t i) -> int {  // the alias class of i
    return plan.alias_of[i] >= 0 ? plan.alias_of[i] : static_cast<int>(i);
  };
  // Pieces (slice/select/split outputs) whose elements form one run of their source, found by
  // enumerating element positions: they must be aliases at that run's start (unless their
  // root is caller-bound or state, or a constant and the piece a delegated region's output,
  // which the delegate writes); empty pieces may go either way.
  std::vector<bool> region_output(n, false);
  for (const DelegateRegion& r : g.delegates) {
    for (int id : r.outputs) region_output[static_cast<size_t>(id)] = true;
  }
  std::vector<int64_t> piece_first(n, -1);  // first source element of a one-run piece
  std::vector<size_t> output_index(n, 0);
  for (const Node& nd : g.nodes) {
    for (size_t k = 0; k < nd.outputs.size(); ++k) {
      output_index[static_cast<size_t>(nd.outputs[k])] = k;
      std::vector<int64_t> flat;
      if (!piece_source_indices(g, nd, k, &flat) || flat.empty()) continue;
      bool run = true;
      for (size_t e = 0; e < flat.size(); ++e) run = run && flat[e] == flat[0] + int64_t(e);
      if (!run) continue;
      const size_t o = static_cast<size_t>(nd.outputs[k]);
      piece_first[o] = flat[0];
      const int src = nd.args.at(0);
      const Value& root = g.values[static_cast<size_t>(owner(static_cast<size_t>(src)))];
      const bool same_dtype = g.values[o].dtype == g.values[static_cast<size_t>(src)].dtype;
      if (same_dtype && !root.caller_bound && !root.is_state && !g.values[o].is_state &&
          !(root.is_constant && region_output[o])) {
        EXPECT_GE(plan.alias_of[o], 0) << tag << ": piece " << o << " of " << nd.op
                                       << " is one run of its source but not an alias";
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const Value& v = g.values[i];
    const int a = plan.alias_of[i];
    if (a < 0) {
      EXPECT_EQ(plan.alias_offset[i], 0u) << tag << " value " << i;
    }
    if (a >= 0) {
      // Legal alias: produced by a view op of a value in a's class with the same byte size, or
      // a one-run piece of it; root is neither caller-bound nor state; the view is not state.
      const int node = producer[i];
      EXPECT_GE(node, 0) << tag << " alias " << i;
      if (node < 0) continue;
      const Node& nd = g.nodes[static_cast<size_t>(node)];
      const int src = nd.args.at(0);
      EXPECT_TRUE(src == a || plan.alias_of[static_cast<size_t>(src)] == a) << tag << " " << i;
      EXPECT_EQ(plan.alias_of[static_cast<size_t>(a)], -1) << tag << " root of root";
      const uint64_t src_offset = plan.alias_offset[static_cast<size_t>(src)];
      if (is_view_op(nd.op)) {
        EXPECT_EQ(nbytes_of(v), nbytes_of(g.values[static_cast<size_t>(src)])) << tag << " " << i;
        EXPECT_EQ(plan.alias_offset[i], src_offset) << tag << " " << i;
      } else if (nbytes_of(v) > 0) {
        EXPECT_GE(piece_first[i], 0) << tag << " value " << i << " aliased by " << nd.op
                                     << " output " << output_index[i];
        EXPECT_EQ(v.dtype, g.values[static_cast<size_t>(src)].dtype) << tag << " value " << i;
        EXPECT_EQ(plan.alias_offset[i], src_offset + uint64_t(piece_first[i]) * 4)  // f32
            << tag << " value " << i;
      } else {
        EXPECT_TRUE(nd.op == "tern::slice" || nd.op == "tern::select" || nd.op == "tern::split")
            << tag << " " << i;
      }
      EXPECT_LE(plan.alias_offset[i] + nbytes_of(v), nbytes_of(g.values[static_cast<size_t>(a)]))
          << tag << " value " << i << " reaches past its root";
      EXPECT_FALSE(g.values[static_cast<size_t>(a)].caller_bound) << tag;
      EXPECT_FALSE(g.values[static_cast<size_t>(a)].is_state) << tag;
      EXPECT_FALSE(v.is_state) << tag;
      EXPECT_FALSE(g.values[static_cast<size_t>(a)].is_constant && region_output[i])
          << tag << " region output " << i << " lies in a constant";
      const int64_t root_offset = plan.offsets[static_cast<size_t>(a)];
      EXPECT_EQ(plan.offsets[i],
                root_offset < 0 ? -1 : root_offset + static_cast<int64_t>(plan.alias_offset[i]))
          << tag << " " << i;
      continue;
    }
    const bool should_plan = v.is_tensor() && !v.is_constant && !v.caller_bound;
    if (should_plan) {
      EXPECT_GE(plan.offsets[i], 0) << tag << " value " << i;
    } else {
      EXPECT_EQ(plan.offsets[i], -1) << tag << " value " << i;
    }
  }

  // Extents and alignment.
  for (size_t i = 0; i < n; ++i) {
    if (plan.offsets[i] < 0) continue;
    if (plan.alias_of[i] < 0) {
      EXPECT_EQ(plan.offsets[i] % 64, 0) << tag << " value " << i;
    }
    EXPECT_LE(static_cast<uint64_t>(plan.offsets[i]) + nbytes_of(g.values[i]), plan.arena_size)
        << tag << " value " << i;
  }

  // Pairwise: simultaneously live tensors of different alias classes never share a byte.
  // State tensors share with nothing at all.
  for (size_t i = 0; i < n; ++i) {
    if (plan.offsets[i] < 0 || nbytes_of(g.values[i]) == 0) continue;
    for (size_t j = i + 1; j < n; ++j) {
      if (plan.offsets[j] < 0 || nbytes_of(g.values[j]) == 0) continue;
      if (owner(i) == owner(j)) continue;
      const bool state = g.values[i].is_state || g.values[j].is_state;
      const bool live_together = first[i] <= last[j] && first[j] <= last[i];
      if (!state && !live_together) continue;
      const uint64_t bi = static_cast<uint64_t>(plan.offsets[i]);
      const uint64_t bj = static_cast<uint64_t>(plan.offsets[j]);
      const bool disjoint = bi + nbytes_of(g.values[i]) <= bj || bj + nbytes_of(g.values[j]) <= bi;
      EXPECT_TRUE(disjoint) << tag << ": values " << i << " [" << first[i] << ", " << last[i]
                            << "] @" << bi << " and " << j << " [" << first[j] << ", " << last[j]
                            << "] @" << bj << " overlap";
    }
  }

  // The checker's own lower bound: per position, the aligned bytes of every live alias class.
  std::vector<int> cfirst(n, kUnset), clast(n, -kUnset);
  for (size_t i = 0; i < n; ++i) {
    if (plan.offsets[i] < 0 || first[i] == kUnset) continue;
    const size_t o = static_cast<size_t>(owner(i));
    cfirst[o] = std::min(cfirst[o], first[i]);
    clast[o] = std::max(clast[o], last[i]);
  }
  uint64_t bound = 0;
  for (int at = -1; at <= last_pos; ++at) {
    uint64_t live = 0;
    for (size_t i = 0; i < n; ++i) {
      if (cfirst[i] <= at && at <= clast[i]) live += align64(nbytes_of(g.values[i]));
    }
    bound = std::max(bound, live);
  }
  EXPECT_EQ(plan.lower_bound, bound) << tag;
  EXPECT_GE(plan.arena_size, plan.lower_bound) << tag;
  return bound;
}

TEST(MemoryPlannerProperty, CheckerCatchesABadPlan) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {a}, DType::F32, {16});
  g.output(b);
  const Graph graph = g.build();
  MemoryPlan plan = plan_memory(graph);
  check_plan(graph, plan, "good");
  plan.offsets[b] = plan.offsets[a];  // a and b are both live at node 1
  EXPECT_NONFATAL_FAILURE(check_plan(graph, plan, "bad"), "overlap");
  plan = plan_memory(graph);
  plan.offsets[b] = 136;  // misaligned, clear of a (which lies below 128)
  plan.arena_size = 1024;
  EXPECT_NONFATAL_FAILURE(check_plan(graph, plan, "bad"), "% 64");
}

TEST(MemoryPlannerProperty, CheckerCatchesABadOffsetAlias) {
  // s = x[:, 2:6] of x f32[1, 8] is one run 8 bytes into x.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1, 8});
  const int one = g.int_value(1);
  const int s = g.op("tern::slice", {x, one, g.int_value(2), g.int_value(6), one}, DType::F32,
                     {1, 4});
  const int y = g.op("tern::relu", {s}, DType::F32, {1, 4});
  g.output(y);
  const Graph graph = g.build();
  MemoryPlan plan = plan_memory(graph);
  check_plan(graph, plan, "good");
  plan.alias_offset[s] = 4;
  plan.offsets[s] = plan.offsets[x] + 4;
  EXPECT_NONFATAL_FAILURE(check_plan(graph, plan, "bad"), "alias_offset");
  plan = plan_memory(graph);
  plan.offsets[s] = plan.offsets[x];  // the offset list disagrees with alias_offset
  EXPECT_NONFATAL_FAILURE(check_plan(graph, plan, "bad"), "root_offset");
  plan = plan_memory(graph);
  plan.alias_of[s] = -1;  // a missed alias
  plan.alias_offset[s] = 0;
  plan.offsets[s] = 128;
  plan.arena_size = 192;
  plan.lower_bound = 192;  // x, s and y live together once s has bytes of its own
  EXPECT_NONFATAL_FAILURE(check_plan(graph, plan, "bad"), "not an alias");
}

TEST(MemoryPlannerProperty, RandomGraphs) {
  std::mt19937 rng(20240611u);
  constexpr int kGraphs = 1500;
  double ratio_sum = 0;
  int counted = 0;
  double worst = 1.0;
  int aliases = 0, offset_aliases = 0, regions = 0, states = 0;
  for (int k = 0; k < kGraphs; ++k) {
    const Graph g = random_graph(rng);
    const MemoryPlan plan = plan_memory(g);
    const std::string tag = "graph " + std::to_string(k);
    regions += static_cast<int>(g.delegates.size());
    for (size_t i = 0; i < g.values.size(); ++i) {
      aliases += plan.alias_of[i] >= 0;
      offset_aliases += plan.alias_offset[i] > 0;
      states += g.values[i].is_state;
    }
    const uint64_t bound = check_plan(g, plan, tag);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing graph: " << k;
      return;
    }
    if (bound > 0) {
      const double r = static_cast<double>(plan.arena_size) / static_cast<double>(bound);
      ratio_sum += r;
      worst = std::max(worst, r);
      ++counted;
    } else {
      EXPECT_EQ(plan.arena_size, 0u) << tag;
    }
  }
  ASSERT_GT(counted, kGraphs / 2);
  EXPECT_GT(aliases, kGraphs / 2);  // the generator exercises views, regions and state
  EXPECT_GT(offset_aliases, kGraphs / 10);
  EXPECT_GT(regions, kGraphs / 4);
  EXPECT_GT(states, kGraphs / 2);
  const double mean = ratio_sum / counted;
  std::cout << "[ planner ] " << counted << " graphs: mean arena_size / lower_bound = " << mean
            << ", worst = " << worst << " (" << aliases << " aliases, " << offset_aliases
            << " at an offset, " << regions
            << " delegate regions, " << states << " state tensors)" << std::endl;
  ::testing::Test::RecordProperty("mean_arena_over_lower_bound", std::to_string(mean));
  ::testing::Test::RecordProperty("worst_arena_over_lower_bound", std::to_string(worst));
  EXPECT_LE(mean, 1.10);
}

}  // namespace
}  // namespace tern::compiler
