// plan_memory on hand-worked cases: each expected offset and size worked out from the graph by
// hand. (Random graphs against an independent checker: memory_planner_property_test.cpp.)
#include "tools/compiler/memory_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tools/compiler/graph_builder.h"

namespace tern::compiler {
namespace {

// ---------------------------------------------------------------- hand-worked cases

TEST(MemoryPlanner, ChainReusesMemory) {
  // x -> a -> b -> c, each f32[16] = 64 bytes. Positions 0, 1, 2.
  // Lifetimes: x [-1, 2] (a method input keeps its bytes to the end), a [0, 1], b [1, 2],
  // c [2, 2] (output). Live bytes: pos -1: x = 64; pos 0: x a = 128; pos 1: x a b = 192;
  // pos 2: x b c = 192. c takes a's bytes (a is dead after position 1).
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {a}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  g.output(c);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lower_bound, 192u);
  EXPECT_EQ(plan.arena_size, 192u);  // three tensors' worth for four tensors
  EXPECT_EQ(plan.lifetimes[x].first, -1);
  EXPECT_EQ(plan.lifetimes[x].last, 2);
  EXPECT_EQ(plan.lifetimes[a].first, 0);
  EXPECT_EQ(plan.lifetimes[a].last, 1);
  EXPECT_EQ(plan.lifetimes[b].first, 1);
  EXPECT_EQ(plan.lifetimes[b].last, 2);
  EXPECT_EQ(plan.lifetimes[c].first, 2);
  EXPECT_EQ(plan.lifetimes[c].last, 2);
  EXPECT_NE(plan.offsets[x], plan.offsets[a]);
  EXPECT_NE(plan.offsets[a], plan.offsets[b]);
  EXPECT_NE(plan.offsets[b], plan.offsets[c]);
  for (int v : {a, b, c}) EXPECT_NE(plan.offsets[x], plan.offsets[v]) << v;
  EXPECT_EQ(plan.offsets[a], plan.offsets[c]);
}

TEST(MemoryPlanner, InputKeepsItsBytesForTheNextExecute) {
  // x f32[64] = 256 bytes is read only by node 0; a, b (f32[64]) and the output c (f32[16])
  // follow. Were x freed after node 0, b would take its bytes and a second execute without
  // set_input would read b's values as x. Live: -1: x; 0: x a; 1: x a b; 2: x b c.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {64});
  const int a = g.op("tern::relu", {x}, DType::F32, {64});
  const int b = g.op("tern::relu", {a}, DType::F32, {64});
  const int c = g.op("tern::sum", {b}, DType::F32, {16});
  g.output(c);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[x].last, 2);
  for (int v : {a, b, c}) {
    const bool apart = plan.offsets[v] + 256 <= plan.offsets[x] || plan.offsets[x] + 256 <= plan.offsets[v];
    EXPECT_TRUE(apart) << "value " << v << " at " << plan.offsets[v] << " overlaps input x at "
                       << plan.offsets[x];
  }
  EXPECT_EQ(plan.lower_bound, 256u * 3);
}

TEST(MemoryPlanner, SizesAreAligned) {
  // f32[1] = 4 bytes occupies 64; with alignment 128 it occupies 128.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1});
  const int y = g.op("tern::relu", {x}, DType::F32, {1});
  g.output(y);
  const MemoryPlan p64 = plan_memory(g.build());
  EXPECT_EQ(p64.arena_size, 128u);
  EXPECT_EQ(p64.lower_bound, 128u);
  PlannerOptions o;
  o.alignment = 128;
  const MemoryPlan p128 = plan_memory(g.build(), o);
  EXPECT_EQ(p128.alignment, 128u);
  EXPECT_EQ(p128.arena_size, 256u);
  EXPECT_EQ(p128.offsets[x] % 128, 0);
  EXPECT_EQ(p128.offsets[y] % 128, 0);
  o.alignment = 48;
  EXPECT_THROW(plan_memory(g.build(), o), std::invalid_argument);
}

TEST(MemoryPlanner, ViewAliasesRootAndExtendsItsLifetime) {
  // x -> a = relu(x) -> v = reshape(a) -> w = relu(x) -> y = add(v, w).
  // a's lifetime runs to y's node (3) through its view v.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {4, 4});
  const int a = g.op("tern::relu", {x}, DType::F32, {4, 4});
  const int shape = g.int_list({16});
  const int v = g.op("tern::reshape", {a, shape}, DType::F32, {16});
  const int w = g.op("tern::relu", {x}, DType::F32, {16});
  const int y = g.op("tern::add", {v, w}, DType::F32, {16});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[v], a);
  EXPECT_EQ(plan.alias_of[a], -1);
  EXPECT_EQ(plan.offsets[v], plan.offsets[a]);
  EXPECT_EQ(plan.lifetimes[a].first, 0);
  EXPECT_EQ(plan.lifetimes[a].last, 3);
  EXPECT_NE(plan.offsets[w], plan.offsets[a]);  // w (pos 2) lives while a does
  // Live: -1: x; 0: x a; 1: x a; 2: x a w; 3: x a w y -> 4 tensors of 64 bytes.
  EXPECT_EQ(plan.lower_bound, 256u);
  EXPECT_EQ(plan.arena_size, 256u);
}

TEST(MemoryPlanner, ViewChainsFollowTheRoot) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {2, 8});
  const int a = g.op("tern::relu", {x}, DType::F32, {2, 8});
  const int v1 = g.op("tern::flatten", {a}, DType::F32, {16});
  const int v2 = g.op("tern::unsqueeze", {v1}, DType::F32, {1, 16});
  g.output(v2);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[v1], a);
  EXPECT_EQ(plan.alias_of[v2], a);
  EXPECT_EQ(plan.offsets[v2], plan.offsets[a]);
  EXPECT_EQ(plan.lifetimes[a].last, 2);
}

TEST(MemoryPlanner, ViewsOfConstantsAndCallerBoundInputs) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {4});
  g.graph().values[x].caller_bound = true;
  const int w = g.constant_f32("w", {2, 2}, {1, 2, 3, 4});
  const int wv = g.op("tern::view", {w}, DType::F32, {4});
  const int xv = g.op("tern::view", {x}, DType::F32, {4});
  const int y = g.op("tern::add", {wv, xv}, DType::F32, {4});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.offsets[x], -1);  // caller-bound: not planned
  EXPECT_EQ(plan.offsets[w], -1);  // constant: not planned
  EXPECT_EQ(plan.alias_of[wv], w);
  EXPECT_EQ(plan.offsets[wv], -1);
  EXPECT_EQ(plan.alias_of[xv], -1);  // caller memory is not ours to alias: a copy, planned
  EXPECT_GE(plan.offsets[xv], 0);
  EXPECT_GE(plan.offsets[y], 0);
  EXPECT_EQ(plan.arena_size, 128u);
}

TEST(MemoryPlanner, ReshapeChangingByteSizeIsNotAnAlias) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {4});
  const int v = g.op("tern::reshape", {x}, DType::F16, {4});
  g.output(v);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[v], -1);
}

// ---------------------------------------------------------------- offset aliases

// Offsets below are worked by hand: f32 elements are 4 bytes; a piece along dim d of a tensor
// whose leading dims are 1 starts at (first index) x (product of the sizes after d) elements.

TEST(MemoryPlanner, ContiguousSliceIsAnOffsetAlias) {
  // x f32[1, 8, 3]; s = x[:, 2:7, :] starts 2 x 3 = 6 elements = 24 bytes in.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1, 8, 3});
  const int s = g.op("tern::slice", {x, g.int_value(1), g.int_value(2), g.int_value(7),
                                     g.int_value(1)},
                     DType::F32, {1, 5, 3});
  const int y = g.op("tern::relu", {s}, DType::F32, {1, 5, 3});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[s], x);
  EXPECT_EQ(plan.alias_offset[s], 24u);
  EXPECT_EQ(plan.offsets[s], plan.offsets[x] + 24);
  EXPECT_EQ(plan.alias_offset[x], 0u);
  EXPECT_EQ(plan.lifetimes[x].last, 1);  // x lives while its piece is read
  EXPECT_NE(plan.offsets[y], plan.offsets[x]);
}

TEST(MemoryPlanner, WholeDimAndSingleIndexPiecesAreAliases) {
  // x f32[2, 3, 2]: x[:, 0:3] is all of x (offset 0); x[1:2:5] (step 5 picks row 1 only)
  // starts 6 elements = 24 bytes in; select(dim 2) of x2 f32[2, 1] index 0 is all of x2.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {2, 3, 2});
  const int x2 = g.input("x2", DType::F32, {2, 1});
  const int one = g.int_value(1);
  const int a = g.op("tern::slice", {x, one, g.int_value(0), g.int_value(3), one}, DType::F32,
                     {2, 3, 2});
  const int b = g.op("tern::slice", {x, g.int_value(0), one, g.none(), g.int_value(5)},
                     DType::F32, {1, 3, 2});
  const int c = g.op("tern::select", {x2, one, g.int_value(0)}, DType::F32, {2});
  for (int v : {a, b, c}) g.output(v);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[a], x);
  EXPECT_EQ(plan.alias_offset[a], 0u);
  EXPECT_EQ(plan.alias_of[b], x);
  EXPECT_EQ(plan.alias_offset[b], 24u);
  EXPECT_EQ(plan.alias_of[c], x2);
  EXPECT_EQ(plan.alias_offset[c], 0u);
}

TEST(MemoryPlanner, SliceBoundsAreClampedLikeATen) {
  // x f32[6, 4]: x[-100:3] is rows 0..2 (offset 0); x[4:None] rows 4..5 (offset 64);
  // x[-2:100] rows 4..5 too.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {6, 4});
  const int zero = g.int_value(0), one = g.int_value(1);
  const int a = g.op("tern::slice", {x, zero, g.int_value(-100), g.int_value(3), one},
                     DType::F32, {3, 4});
  const int b = g.op("tern::slice", {x, zero, g.int_value(4), g.none(), one}, DType::F32, {2, 4});
  const int c = g.op("tern::slice", {x, g.int_value(-2), g.int_value(-2), g.int_value(100), one},
                     DType::F32, {2, 4});
  for (int v : {a, b, c}) g.output(v);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[a], x);
  EXPECT_EQ(plan.alias_offset[a], 0u);
  EXPECT_EQ(plan.alias_of[b], x);
  EXPECT_EQ(plan.alias_offset[b], 64u);
  EXPECT_EQ(plan.alias_of[c], x);
  EXPECT_EQ(plan.alias_offset[c], 64u);
}

TEST(MemoryPlanner, NonContiguousPiecesAreCopies) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {2, 8});
  const int one = g.int_value(1);
  // Along dim 1 with a leading dim of 2: two separate runs.
  const int a = g.op("tern::slice", {x, one, g.int_value(2), g.int_value(5), one}, DType::F32,
                     {2, 3});
  // Step 2 along a dim with leading 1s.
  const int x1 = g.input("x1", DType::F32, {1, 8});
  const int b = g.op("tern::slice", {x1, one, g.none(), g.none(), g.int_value(2)}, DType::F32,
                     {1, 4});
  const int c = g.op("tern::select", {x, one, g.int_value(3)}, DType::F32, {2});
  // Declared sizes that are not what the op computes: left to the kernel to reject.
  const int d = g.op("tern::select", {x, g.int_value(0), g.int_value(1)}, DType::F32, {4});
  // Another dtype.
  const int e = g.op("tern::select", {x, g.int_value(0), g.int_value(1)}, DType::I32, {8});
  for (int v : {a, b, c, d, e}) g.output(v);
  const MemoryPlan plan = plan_memory(g.build());
  for (int v : {a, b, c, d, e}) {
    EXPECT_EQ(plan.alias_of[v], -1) << v;
    EXPECT_EQ(plan.alias_offset[v], 0u) << v;
    EXPECT_GE(plan.offsets[v], 0) << v;
  }
}

TEST(MemoryPlanner, SelectAndSplitPieces) {
  // x f32[1, 9, 2]: select(dim 1, index -1) is element 8 x 2 = 16 -> 64 bytes.
  // split([2, 3, 4], dim 1): pieces at elements 0, 4, 10 -> bytes 0, 16, 40.
  // split([4], dim -2) (chunks 4, 4, 1): elements 0, 8, 16 -> bytes 0, 32, 64.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1, 9, 2});
  const int sel = g.op("tern::select", {x, g.int_value(1), g.int_value(-1)}, DType::F32, {1, 2});
  const int sizes = g.int_list({2, 3, 4});
  const int p0 = g.tensor("p0", DType::F32, {1, 2, 2});
  const int p1 = g.tensor("p1", DType::F32, {1, 3, 2});
  const int p2 = g.tensor("p2", DType::F32, {1, 4, 2});
  g.op_into("tern::split", {x, sizes, g.int_value(1)}, {p0, p1, p2});
  const int q0 = g.tensor("q0", DType::F32, {1, 4, 2});
  const int q1 = g.tensor("q1", DType::F32, {1, 4, 2});
  const int q2 = g.tensor("q2", DType::F32, {1, 1, 2});
  g.op_into("tern::split", {x, g.int_list({4}), g.int_value(-2)}, {q0, q1, q2});
  for (int v : {sel, p0, p1, p2, q0, q1, q2}) g.output(v);
  const MemoryPlan plan = plan_memory(g.build());
  const std::pair<int, uint64_t> expected[] = {{sel, 64}, {p0, 0}, {p1, 16}, {p2, 40},
                                               {q0, 0},   {q1, 32}, {q2, 64}};
  for (const auto& [v, offset] : expected) {
    EXPECT_EQ(plan.alias_of[v], x) << v;
    EXPECT_EQ(plan.alias_offset[v], offset) << v;
    EXPECT_EQ(plan.offsets[v], plan.offsets[x] + static_cast<int64_t>(offset)) << v;
  }
  EXPECT_EQ(plan.arena_size, 128u);  // only x (72 bytes, aligned to 128) is placed
}

TEST(MemoryPlanner, OffsetsAccumulateAlongViewChains) {
  // x f32[10, 4]; a = x[2:8] (32 bytes in); b = a[1:3] (16 more: 48); c = reshape(b) [8];
  // d = unsqueeze(c) [1, 8]; e = d[:, 4:] (4 elements more: 64). All alias x.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {10, 4});
  const int zero = g.int_value(0), one = g.int_value(1);
  const int a = g.op("tern::slice", {x, zero, g.int_value(2), g.int_value(8), one}, DType::F32,
                     {6, 4});
  const int b = g.op("tern::slice", {a, zero, one, g.int_value(3), one}, DType::F32, {2, 4});
  const int c = g.op("tern::reshape", {b, g.int_list({8})}, DType::F32, {8});
  const int d = g.op("tern::unsqueeze", {c, zero}, DType::F32, {1, 8});
  const int e = g.op("tern::slice", {d, one, g.int_value(4), g.none(), one}, DType::F32, {1, 4});
  const int y = g.op("tern::relu", {e}, DType::F32, {1, 4});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  const std::pair<int, uint64_t> expected[] = {{a, 32}, {b, 48}, {c, 48}, {d, 48}, {e, 64}};
  for (const auto& [v, offset] : expected) {
    EXPECT_EQ(plan.alias_of[v], x) << v;
    EXPECT_EQ(plan.alias_offset[v], offset) << v;
    EXPECT_EQ(plan.offsets[v], plan.offsets[x] + static_cast<int64_t>(offset)) << v;
  }
  EXPECT_EQ(plan.lifetimes[x].last, 5);  // the relu of the last view
}

TEST(MemoryPlanner, RegionOutputThatIsAPieceOfAConstantGetsItsOwnBytes) {
  // A slice of a constant made inside a delegated region and read after it: the delegate
  // writes the region's outputs, so this one must not lie in the constant's (read-only)
  // segment; the same slice outside a region still aliases the constant.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1, 3, 2});
  const int w = g.constant_f32("w", {1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const int r = g.op("tern::relu", {x}, DType::F32, {1, 3, 2});
  const int s = g.op("tern::slice", {w, g.int_value(1), g.int_value(1), g.int_value(4),
                                     g.int_value(1)}, DType::F32, {1, 3, 2});
  const int y = g.op("tern::add", {r, s}, DType::F32, {1, 3, 2});
  const int t = g.op("tern::slice", {w, g.int_value(1), g.int_value(0), g.int_value(3),
                                     g.int_value(1)}, DType::F32, {1, 3, 2});
  const int z = g.op("tern::mul", {y, s}, DType::F32, {1, 3, 2});
  g.output(g.op("tern::add", {z, t}, DType::F32, {1, 3, 2}));
  g.delegate("vulkan", 0, 2);  // relu, slice, add: outputs y and s
  const Graph graph = g.build();
  const std::vector<int>& outs = graph.delegates.at(0).outputs;
  ASSERT_NE(std::find(outs.begin(), outs.end(), s), outs.end());
  const MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(plan.alias_of[s], -1);
  EXPECT_GE(plan.offsets[s], 0);
  EXPECT_EQ(plan.alias_of[t], w);  // outside any region: a view of the constant, no bytes
  EXPECT_EQ(plan.offsets[t], -1);
}

TEST(MemoryPlanner, PiecesOfConstantsAndCallerBoundInputs) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {4, 2});
  g.graph().values[x].caller_bound = true;
  const int w = g.constant_f32("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const int ws = g.op("tern::select", {w, g.int_value(0), g.int_value(2)}, DType::F32, {2});
  const int xs = g.op("tern::select", {x, g.int_value(0), g.int_value(2)}, DType::F32, {2});
  const int y = g.op("tern::add", {ws, xs}, DType::F32, {2});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[ws], w);
  EXPECT_EQ(plan.alias_offset[ws], 16u);
  EXPECT_EQ(plan.offsets[ws], -1);  // in the constant's segment
  EXPECT_EQ(plan.alias_of[xs], -1);  // caller memory: a planned copy
  EXPECT_EQ(plan.alias_offset[xs], 0u);
  EXPECT_GE(plan.offsets[xs], 0);
}

TEST(MemoryPlanner, ViewByteOffsetOfMalformedNodes) {
  // Missing or mistyped attributes never alias (the kernel reports them).
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {1, 8});
  const int a = g.op("tern::slice", {x}, DType::F32, {1, 8});
  const int b = g.op("tern::slice", {x, g.int_value(1), g.double_value(1.0), g.none(),
                                     g.int_value(1)},
                     DType::F32, {1, 7});
  const int c = g.op("tern::select", {x, g.int_value(5), g.int_value(0)}, DType::F32, {8});
  const int p0 = g.tensor("p0", DType::F32, {1, 3});
  const int p1 = g.tensor("p1", DType::F32, {1, 4});
  g.op_into("tern::split", {x, g.int_list({3, 4}), g.int_value(1)}, {p0, p1});  // sums to 7
  for (int v : {a, b, c, p0, p1}) g.output(v);
  const Graph graph = g.build();
  const MemoryPlan plan = plan_memory(graph);
  for (int v : {a, b, c, p0, p1}) EXPECT_EQ(plan.alias_of[v], -1) << v;
  uint64_t offset = 0;
  EXPECT_FALSE(view_byte_offset(graph, graph.nodes[3], 2, &offset));  // no third output
}

TEST(MemoryPlanner, StateIsNeverShared) {
  // s is only touched at node 0 but lives for the whole method; b and c could otherwise reuse it.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int s = g.state("s", DType::F32, {16});
  g.op_into("tern::copy_", {x}, {s});
  const int b = g.op("tern::relu", {x}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  g.output(c);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[s].first, -1);
  EXPECT_EQ(plan.lifetimes[s].last, 2);
  for (int other : {x, b, c}) EXPECT_NE(plan.offsets[other], plan.offsets[s]);
  // Live: -1: x s; 0: x s; 1: x s b; 2: x s b c -> 256.
  EXPECT_EQ(plan.lower_bound, 256u);
  EXPECT_EQ(plan.arena_size, 256u);
}

// Delegated regions: each node keeps its position (the fallback's order); the region's inputs
// live to its last node (the delegate may read them until it returns). f32[16] = 64 bytes.

TEST(MemoryPlanner, RegionOutputDoesNotAliasRegionInput) {
  // in -> x -> a -> b -> c with nodes 1..2 delegated (input x, internal a, output b):
  // positions 0..3. Lifetimes: in [-1, 3] (method input), x [0, 2] (to the region's end, not
  // just node 1), a [1, 2], b [2, 3], c [3, 3]. Live: 0: in x; 1: in x a; 2: in x a b;
  // 3: in b c -> 256. Without the region x would end at 1 and b could share its bytes (192),
  // which the delegate would overwrite while reading x.
  GraphBuilder g;
  const int in = g.input("in", DType::F32, {16});
  const int x = g.op("tern::relu", {in}, DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {a}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  g.output(c);
  g.delegate("cpu", 1, 2);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[x].first, 0);
  EXPECT_EQ(plan.lifetimes[x].last, 2);
  EXPECT_EQ(plan.lifetimes[a].first, 1);
  EXPECT_EQ(plan.lifetimes[a].last, 2);
  EXPECT_EQ(plan.lifetimes[b].first, 2);
  EXPECT_EQ(plan.lifetimes[b].last, 3);
  EXPECT_EQ(plan.lifetimes[c].first, 3);
  EXPECT_EQ(plan.lower_bound, 256u);
  EXPECT_EQ(plan.arena_size, 256u);
  EXPECT_NE(plan.offsets[x], plan.offsets[b]);
}

TEST(MemoryPlanner, InternalValuesOfARegionShareBytes) {
  // x -> a1 -> ... -> a10, all 10 nodes one region, a10 the method output. Node k (position k)
  // reads a_k (x for k = 0) and makes a_{k+1}: a_k lives [k - 1, k], a10 [9, 9], x [-1, 9]
  // (the region's input). Live at position p: x, a_p, a_{p+1} -> 3 x 64 = 192, as on the
  // portable kernels plus x. As one position all 11 tensors were live at once: 704.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  std::vector<int> a = {x};
  for (int k = 0; k < 10; ++k) a.push_back(g.op("tern::relu", {a.back()}, DType::F32, {16}));
  g.output(a.back());
  g.delegate("cpu", 0, 9);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[x].last, 9);
  for (int k = 1; k < 10; ++k) {
    EXPECT_EQ(plan.lifetimes[a[k]].first, k - 1) << k;
    EXPECT_EQ(plan.lifetimes[a[k]].last, k) << k;
  }
  EXPECT_EQ(plan.lower_bound, 192u);
  EXPECT_EQ(plan.arena_size, 192u);
  for (int k = 1; k <= 10; ++k) EXPECT_NE(plan.offsets[a[k]], plan.offsets[x]) << k;
}

TEST(MemoryPlanner, RegionInputIsNotReusedInsideTheRegion) {
  // in -> x -> a -> b -> c -> d with nodes 1..3 delegated; x is read only by node 1 but is the
  // region's input, so it lives [0, 3]. in [-1, 4], a [1, 2], b [2, 3] (internal), c [3, 4]
  // (output), d [4, 4]. Live: 1: in x a; 2: in x a b; 3: in x b c; 4: in c d -> 256. Without
  // the region b would take x's bytes at position 2 (arena 192) and the fallback would
  // overwrite the input the delegate may still read.
  GraphBuilder g;
  const int in = g.input("in", DType::F32, {16});
  const int x = g.op("tern::relu", {in}, DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {a}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  const int d = g.op("tern::relu", {c}, DType::F32, {16});
  g.output(d);
  g.delegate("cpu", 1, 3);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[x].last, 3);
  EXPECT_EQ(plan.lower_bound, 256u);
  EXPECT_EQ(plan.arena_size, 256u);
  for (int v : {a, b, c}) EXPECT_NE(plan.offsets[v], plan.offsets[x]) << v;
}

TEST(MemoryPlanner, RegionInputThatIsAViewKeepsItsRootLive) {
  // x -> a = relu(x) -> v = reshape(a) (alias of a) | region: b = relu(v), c = relu(b),
  // d = relu(c) | e = relu(d). Nodes 0..5; the region is nodes 2..4 with input v, so its root a
  // lives [0, 4]. b [2, 3], c [3, 4], d [4, 5], e [5, 5], x [-1, 5] (method input).
  // Live: -1: x; 0: x a; 1: x a; 2: x a b; 3: x a b c; 4: x a c d; 5: x d e -> 256.
  // Without the region a would end at 2 and c could take its bytes (192).
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {4, 4});
  const int a = g.op("tern::relu", {x}, DType::F32, {4, 4});
  const int v = g.op("tern::reshape", {a, g.int_list({16})}, DType::F32, {16});
  const int b = g.op("tern::relu", {v}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  const int d = g.op("tern::relu", {c}, DType::F32, {16});
  const int e = g.op("tern::relu", {d}, DType::F32, {16});
  g.output(e);
  g.delegate("cpu", 2, 4);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.alias_of[v], a);
  EXPECT_EQ(plan.lifetimes[a].first, 0);
  EXPECT_EQ(plan.lifetimes[a].last, 4);
  EXPECT_EQ(plan.lifetimes[v].last, 4);
  EXPECT_EQ(plan.lower_bound, 256u);
  EXPECT_EQ(plan.arena_size, 256u);
  for (int w : {b, c, d}) EXPECT_NE(plan.offsets[w], plan.offsets[a]) << w;
}

TEST(MemoryPlanner, OneNodeRegionPlansLikeThePortableNode) {
  // x -> a -> b -> c with node 1 alone delegated: its input a already lives to node 1, so the
  // plan is the chain's (ChainReusesMemory): x [-1, 2], a [0, 1], b [1, 2], c [2, 2] -> 192,
  // c in a's bytes.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {a}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  g.output(c);
  g.delegate("cpu", 1, 1);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lower_bound, 192u);
  EXPECT_EQ(plan.arena_size, 192u);
  EXPECT_EQ(plan.offsets[a], plan.offsets[c]);
}

TEST(MemoryPlanner, ZeroByteTensorTakesNoSpace) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int e = g.op("tern::slice", {x}, DType::F32, {0, 16});
  const int y = g.op("tern::cat", {x, e}, DType::F32, {16});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_GE(plan.offsets[e], 0);
  EXPECT_EQ(plan.arena_size, 128u);
  EXPECT_EQ(plan.lower_bound, 128u);
}

TEST(MemoryPlanner, WorkedGreedyExample) {
  // Sizes in 64-byte units; lifetimes from the node order (positions 0..5):
  //   x 1u [-1, 5] (a method input lives to the end), p 2u [0, 2], q 1u [1, 3], r 4u [2, 5],
  //   s 1u [3, 5], t 1u [4, 5], y 1u [5, 5].
  // Live per position: -1: 1; 0: x p = 3; 1: x p q = 4; 2: x p q r = 8; 3: x q r s = 7;
  //   4: x r s t = 7; 5: x r s t y = 8 -> lower bound 8 units.
  // Greedy, largest first (ties: longer lifetime, then id): r -> 0; p -> 4 (above r);
  //   x -> 6; q -> 7; s fits the gap [4, 6) left by p (dead at 3) -> 4; t -> the rest of that
  //   gap, 5; y overlaps r s t x but not q (dead at 3) -> 7. Arena 8 units.
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int p = g.op("tern::make", {x}, DType::F32, {2 * 16});
  const int q = g.op("tern::make", {x}, DType::F32, {16});
  const int r = g.op("tern::use", {p, q}, DType::F32, {4 * 16});
  const int s = g.op("tern::use", {q, r}, DType::F32, {16});
  const int t = g.op("tern::use", {x}, DType::F32, {16});
  const int y = g.op("tern::sum", {r, s, t}, DType::F32, {16});
  g.output(y);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lower_bound, 8u * 64);
  EXPECT_EQ(plan.arena_size, 8u * 64);
  EXPECT_EQ(plan.offsets[r], 0 * 64);
  EXPECT_EQ(plan.offsets[p], 4 * 64);
  EXPECT_EQ(plan.offsets[x], 6 * 64);
  EXPECT_EQ(plan.offsets[q], 7 * 64);
  EXPECT_EQ(plan.offsets[s], 4 * 64);
  EXPECT_EQ(plan.offsets[t], 5 * 64);
  EXPECT_EQ(plan.offsets[y], 7 * 64);
}

TEST(MemoryPlanner, OutputsLiveToTheEnd) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  const int a = g.op("tern::relu", {x}, DType::F32, {16});
  const int b = g.op("tern::relu", {x}, DType::F32, {16});
  const int c = g.op("tern::relu", {b}, DType::F32, {16});
  g.output(a);
  g.output(c);
  const MemoryPlan plan = plan_memory(g.build());
  EXPECT_EQ(plan.lifetimes[a].last, 2);
  EXPECT_NE(plan.offsets[a], plan.offsets[c]);
}

TEST(MemoryPlanner, InvalidGraphThrows) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {16});
  g.op("tern::relu", {x + 10}, DType::F32, {16});
  EXPECT_THROW(plan_memory(g.graph()), std::invalid_argument);
}

}  // namespace
}  // namespace tern::compiler
