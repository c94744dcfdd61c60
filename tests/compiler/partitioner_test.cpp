// The partitioner: maximal regions, clustering by reordering, boundaries, backend priority,
// vetoes and errors on hand-worked graphs; then partition -> compile -> load with a runtime
// backend, checked against the unpartitioned program, a naive reference and the fallback.
#include "tools/compiler/partitioner.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tools/compiler/backend_compiler.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"

namespace tern::compiler {
namespace {

const std::vector<int64_t> kShape = {2, 3};

// A backend compiler that supports a fixed set of ops. Its blob is a small program for the
// "interp" runtime backend below: "io <inputs> <outputs>", then one "op <name> <refs> <ref>"
// line per node, where a ref is i<k> (boundary input k), o<k> (boundary output k) or t<k>
// (a temporary "temp <k> <numel>"). It records the regions it lowered.
class OpSetCompiler : public BackendCompiler {
 public:
  OpSetCompiler(std::string name, std::set<std::string> ops, size_t min_nodes = 1)
      : name_(std::move(name)), ops_(std::move(ops)), min_nodes_(min_nodes) {}

  std::string name() const override { return name_; }
  bool supports(const Graph&, const Node& node) const override {
    return ops_.count(node.op.substr(node.op.find("::") + 2)) > 0;
  }
  bool accepts_region(const Graph&, const std::vector<int>& nodes) const override {
    return nodes.size() >= min_nodes_;
  }
  LoweredRegion lower(const Graph& graph, const DelegateRegion& region) const override {
    if (fail_lowering)
      throw std::invalid_argument("node " + std::to_string(region.nodes[0]) + " is odd");
    lowered.push_back(region);
    std::map<int, std::string> ref;
    std::ostringstream out;
    out << "io " << region.inputs.size() << " " << region.outputs.size() << "\n";
    for (size_t k = 0; k < region.inputs.size(); ++k)
      ref[region.inputs[k]] = "i" + std::to_string(k);
    for (size_t k = 0; k < region.outputs.size(); ++k)
      ref[region.outputs[k]] = "o" + std::to_string(k);
    int temps = 0;
    for (int n : region.nodes) {
      const Node& node = graph.nodes[n];
      for (int o : node.outputs) {
        if (ref.count(o)) continue;
        ref[o] = "t" + std::to_string(temps);
        int64_t numel = 1;
        for (int64_t s : graph.values[o].sizes) numel *= s;
        out << "temp " << temps++ << " " << numel << "\n";
      }
      out << "op " << node.op.substr(node.op.find("::") + 2);
      for (int a : node.args) {
        if (graph.values[a].kind != Value::Kind::TensorList) {
          out << " " << ref.at(a);
          continue;
        }
        // A list is written as its elements' refs: each must be bound (made inside or an
        // input), which is what a backend needs to run it.
        out << " [";
        for (size_t k = 0; k < graph.values[a].tensors.size(); ++k) {
          out << (k ? "," : "") << ref.at(graph.values[a].tensors[k]);
        }
        out << "]";
      }
      out << " " << ref.at(node.outputs.at(0)) << "\n";
    }
    LoweredRegion r;
    const std::string text = out.str();
    r.blob.assign(text.begin(), text.end());
    r.compile_specs.push_back({"nodes", {static_cast<uint8_t>(region.nodes.size())}});
    return r;
  }

  bool fail_lowering = false;
  mutable std::vector<DelegateRegion> lowered;

 private:
  std::string name_;
  std::set<std::string> ops_;
  size_t min_nodes_;
};

// Registers a fresh OpSetCompiler (replacing one of the same name) and returns it.
OpSetCompiler* install(const std::string& name, std::set<std::string> ops, size_t min_nodes = 1) {
  auto owned = std::make_unique<OpSetCompiler>(name, std::move(ops), min_nodes);
  OpSetCompiler* raw = owned.get();
  register_backend_compiler(std::move(owned));
  return raw;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.debug_name);
  return ops;
}

// x, y inputs, c constant, all f32 [2, 3]:
//   n0 s = add(x, y)   n1 m = mul(s, c)   n2 r = relu(s)
//   n3 p = mul(m, c)   n4 q = add(r, c)   n5 out = mul(p, q)
// For a backend of {add, relu}, the candidates n0, n2, n4 form three runs in this order, and
// one after moving n2 and n4 up: s, r, q, m, p, out.
Graph interleaved() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int y = b.input("y", DType::F32, kShape);
  const int c = b.constant_f32("c", kShape, {1, 2, 3, 4, 5, 6});
  const int s = b.op("tern::add", {x, y}, DType::F32, kShape, "s");
  const int m = b.op("tern::mul", {s, c}, DType::F32, kShape, "m");
  const int r = b.op("tern::relu", {s}, DType::F32, kShape, "r");
  const int p = b.op("tern::mul", {m, c}, DType::F32, kShape, "p");
  const int q = b.op("tern::add", {r, c}, DType::F32, kShape, "q");
  const int out = b.op("tern::mul", {p, q}, DType::F32, kShape, "out");
  b.output(out);
  return b.build();
}

// Value ids of interleaved(): x 0, y 1, c 2, s 3, m 4, r 5, p 6, q 7, out 8.
enum : int { kX = 0, kY, kC, kS, kM, kR, kP, kQ, kOut };

TEST(Partition, ClustersCandidatesIntoOneMaximalRegion) {
  OpSetCompiler* a = install("pt_a", {"add", "relu"});
  Graph g = interleaved();
  partition(g, {"pt_a"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"s", "r", "q", "m", "p", "out"}));
  ASSERT_EQ(g.delegates.size(), 1u);
  const DelegateRegion& d = g.delegates[0];
  EXPECT_EQ(d.backend, "pt_a");
  EXPECT_EQ(d.nodes, (std::vector<int>{0, 1, 2}));
  // Read from outside in first-use order: x, y (by s), then c (by q); the constant is a
  // boundary input. s is read by m outside; q by out; r stays inside.
  EXPECT_EQ(d.inputs, (std::vector<int>{kX, kY, kC}));
  EXPECT_EQ(d.outputs, (std::vector<int>{kS, kQ}));
  EXPECT_EQ(std::string(d.blob.begin(), d.blob.end()),
            "io 3 2\nop add i0 i1 o0\ntemp 0 6\nop relu o0 t0\nop add t0 i2 o1\n");
  ASSERT_EQ(d.compile_specs.size(), 1u);
  EXPECT_EQ(d.compile_specs[0].first, "nodes");
  ASSERT_EQ(a->lowered.size(), 1u);
  EXPECT_EQ(a->lowered[0].inputs, d.inputs);  // lower() saw the boundary already set
}

TEST(Partition, LeavesAnAlreadyClusteredOrderAsItIs) {
  // n0 u = neg(x), n1 v = relu(y), n2 w = neg(y): one candidate run (v) either way; a
  // schedule that moves the other neg up would not reduce the run count, so nothing moves.
  install("pt_relu", {"relu"});
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int y = b.input("y", DType::F32, kShape);
  const int u = b.op("tern::neg", {x}, DType::F32, kShape, "u");
  const int v = b.op("tern::relu", {y}, DType::F32, kShape, "v");
  const int w = b.op("tern::neg", {y}, DType::F32, kShape, "w");
  for (int o : {u, v, w}) b.output(o);
  Graph g = b.build();
  partition(g, {"pt_relu"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"u", "v", "w"}));
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{1}));
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{y}));
  EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{v}));  // a method output
}

TEST(Partition, DependenciesLimitClustering) {
  // n0 a = relu(x), n1 b = neg(a), n2 c = relu(b): the unsupported neg sits between two
  // candidates it connects, so they stay two regions.
  install("pt_relu", {"relu"});
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int a = b.op("tern::relu", {x}, DType::F32, kShape, "a");
  const int n = b.op("tern::neg", {a}, DType::F32, kShape, "b");
  const int c = b.op("tern::relu", {n}, DType::F32, kShape, "c");
  b.output(c);
  Graph g = b.build();
  partition(g, {"pt_relu"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(g.delegates.size(), 2u);
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{0}));
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{x}));
  EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{a}));
  EXPECT_EQ(g.delegates[1].nodes, (std::vector<int>{2}));
  EXPECT_EQ(g.delegates[1].inputs, (std::vector<int>{n}));
  EXPECT_EQ(g.delegates[1].outputs, (std::vector<int>{c}));
}

TEST(Partition, WorkNeedingNoCandidateRunsFirst) {
  // n0 a = relu(x), n1 k = neg(c) of a constant, n2 d = add(a, k): the neg needs no candidate,
  // so it moves before the relu and the two candidates are one region (k, a, d), not two
  // (RWKV's and RecurrentGemma's slices of constant states behind an embedding of the ids).
  install("pt_relu_add", {"relu", "add"});
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int c = b.constant_f32("c", kShape, {1, 2, 3, 4, 5, 6});
  const int a = b.op("tern::relu", {x}, DType::F32, kShape, "a");
  const int k = b.op("tern::neg", {c}, DType::F32, kShape, "k");
  const int d = b.op("tern::add", {a, k}, DType::F32, kShape, "d");
  b.output(d);
  Graph g = b.build();
  partition(g, {"pt_relu_add"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"k", "a", "d"}));
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{x, k}));
}

TEST(Partition, StateReadsAndWritesKeepTheirOrder) {
  // n0 r0 = add(x, S) reads the old state, n1 S = clone(x) writes it, n2 r1 = add(r0, S)
  // reads the new one: neither add may cross the write, so the adds stay two regions.
  install("pt_add", {"add"});
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int st = b.state("S", DType::F32, kShape);
  const int r0 = b.op("tern::add", {x, st}, DType::F32, kShape, "r0");
  b.op_into("tern::clone", {x}, {st}, "write");
  const int r1 = b.op("tern::add", {r0, st}, DType::F32, kShape, "r1");
  b.output(r1);
  Graph g = b.build();
  partition(g, {"pt_add"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"r0", "write", "r1"}));
  ASSERT_EQ(g.delegates.size(), 2u);
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{x, st}));
  EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{r0}));
  EXPECT_EQ(g.delegates[1].inputs, (std::vector<int>{r0, st}));
  EXPECT_EQ(g.delegates[1].outputs, (std::vector<int>{r1}));
}

TEST(Partition, ScalarAttributesAndConstantsAreBoundaryInputs) {
  // n0 h = leaky_relu(x, 0.1), n1 o = add(h, w): both inside; the scalar and the constant are
  // read from outside the region, so both are inputs (after x, in first-use order).
  install("pt_ew", {"leaky_relu", "add"});
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int w = b.constant_f32("w", kShape, {1, 1, 1, 1, 1, 1});
  const int slope = b.double_value(0.1);
  const int h = b.op("tern::leaky_relu", {x, slope}, DType::F32, kShape, "h");
  const int o = b.op("tern::add", {h, w}, DType::F32, kShape, "o");
  b.output(o);
  Graph g = b.build();
  partition(g, {"pt_ew"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{x, slope, w}));
  EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{o}));
}

// x, y inputs, c constant:
//   n0 s = add(x, y)   n1 m = mul(s, c)   n2 r = relu(s)
//   n3 p = mul(m, c)   n4 q = neg(r)      n5 out = mul(p, q)
Graph priority_graph() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int y = b.input("y", DType::F32, kShape);
  const int c = b.constant_f32("c", kShape, {1, 2, 3, 4, 5, 6});
  const int s = b.op("tern::add", {x, y}, DType::F32, kShape, "s");
  const int m = b.op("tern::mul", {s, c}, DType::F32, kShape, "m");
  const int r = b.op("tern::relu", {s}, DType::F32, kShape, "r");
  const int p = b.op("tern::mul", {m, c}, DType::F32, kShape, "p");
  const int q = b.op("tern::neg", {r}, DType::F32, kShape, "q");
  const int out = b.op("tern::mul", {p, q}, DType::F32, kShape, "out");
  b.output(out);
  return b.build();
}

TEST(Partition, EarlierBackendHasPriority) {
  install("pt_a", {"add", "relu", "mul"});
  install("pt_b", {"mul", "neg"});
  {
    // pt_a first: s..p is already one run (moving things would not reduce runs), then out;
    // pt_b gets the neg between them.
    Graph g = priority_graph();
    partition(g, {"pt_a", "pt_b"});
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"s", "m", "r", "p", "q", "out"}));
    ASSERT_EQ(g.delegates.size(), 3u);
    EXPECT_EQ(g.delegates[0].backend, "pt_a");
    EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{kX, kY, kC}));
    EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{kR, kP}));
    EXPECT_EQ(g.delegates[1].backend, "pt_b");
    EXPECT_EQ(g.delegates[1].nodes, (std::vector<int>{4}));
    EXPECT_EQ(g.delegates[2].backend, "pt_a");
    EXPECT_EQ(g.delegates[2].nodes, (std::vector<int>{5}));
    EXPECT_EQ(g.delegates[2].inputs, (std::vector<int>{kP, kQ}));
    EXPECT_EQ(g.delegates[2].outputs, (std::vector<int>{kOut}));
  }
  {
    // pt_b first takes every mul and the neg (r moves up so they form one run); pt_a gets
    // add + relu.
    Graph g = priority_graph();
    partition(g, {"pt_b", "pt_a"});
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"s", "r", "m", "p", "q", "out"}));
    ASSERT_EQ(g.delegates.size(), 2u);
    EXPECT_EQ(g.delegates[0].backend, "pt_a");
    EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{0, 1}));
    EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{kX, kY}));
    EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{kS, kR}));
    EXPECT_EQ(g.delegates[1].backend, "pt_b");
    EXPECT_EQ(g.delegates[1].nodes, (std::vector<int>{2, 3, 4, 5}));
    EXPECT_EQ(g.delegates[1].inputs, (std::vector<int>{kS, kC, kR}));
    EXPECT_EQ(g.delegates[1].outputs, (std::vector<int>{kOut}));
  }
}

TEST(Partition, VetoedRegionGoesToTheNextBackend) {
  // pt_a refuses regions of fewer than 2 nodes: the lone "out" mul goes to pt_b, joining q.
  install("pt_a", {"add", "relu", "mul"}, /*min_nodes=*/2);
  install("pt_b", {"mul", "neg"});
  Graph g = priority_graph();
  partition(g, {"pt_a", "pt_b"});
  ASSERT_EQ(g.delegates.size(), 2u);
  EXPECT_EQ(g.delegates[0].backend, "pt_a");
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.delegates[1].backend, "pt_b");
  EXPECT_EQ(g.delegates[1].nodes, (std::vector<int>{4, 5}));
  EXPECT_EQ(g.delegates[1].inputs, (std::vector<int>{kR, kP}));
  EXPECT_EQ(g.delegates[1].outputs, (std::vector<int>{kOut}));
}

TEST(Partition, VetoedEverywhereStaysPortable) {
  install("pt_big", {"add", "relu"}, /*min_nodes=*/10);
  Graph g = interleaved();
  partition(g, {"pt_big"});
  EXPECT_TRUE(g.delegates.empty());
}

TEST(Partition, ExistingRegionsAreKeptAndMoveAsOneUnit) {
  // Region {m} (backend "given") is kept; pt_a still clusters s, r, q around it.
  install("pt_a", {"add", "relu"});
  Graph g = interleaved();
  DelegateRegion given;
  given.backend = "given";
  given.nodes = {1};
  given.inputs = {kS, kC};
  given.outputs = {kM};
  g.delegates.push_back(given);
  partition(g, {"pt_a"});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"s", "r", "q", "m", "p", "out"}));
  ASSERT_EQ(g.delegates.size(), 2u);
  EXPECT_EQ(g.delegates[0].backend, "pt_a");
  EXPECT_EQ(g.delegates[1].backend, "given");
  EXPECT_EQ(g.delegates[1].nodes, (std::vector<int>{3}));
}

TEST(Partition, UnknownBackendListsTheRegisteredOnes) {
  install("pt_a", {"add"});
  Graph g = interleaved();
  try {
    partition(g, {"pt_a", "no_such_backend"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'no_such_backend'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("registered: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("pt_a"), std::string::npos) << msg;
  }
  EXPECT_TRUE(g.delegates.empty());  // nothing was partitioned
  EXPECT_THROW(partition(g, {"pt_a", "pt_a"}), std::invalid_argument);
  CompileOptions options;
  options.backends = {"no_such_backend"};
  ProgramGraph p;
  p.methods.push_back(interleaved());
  EXPECT_THROW(compile_program(p, options), std::invalid_argument);
}

TEST(Partition, LoweringFailureNamesMethodAndBackend) {
  OpSetCompiler* a = install("pt_fail", {"add"});
  a->fail_lowering = true;
  Graph g = interleaved();
  try {
    partition(g, {"pt_fail"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'forward'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'pt_fail'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is odd"), std::string::npos) << msg;
  }
}

// x input, all f32 [2, 3] but the cat:
//   n0 a = neg(x)   n1 b = relu(x)   n2 c = cat([a, b], 0) [4, 3]   n3 out = relu(c)
// A backend of {relu, cat} takes b, c and out; the list [a, b] mixes a tensor made outside (a)
// with one made inside (b).
Graph cat_across_boundary() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, kShape);
  const int a = b.op("tern::neg", {x}, DType::F32, kShape, "a");
  const int r = b.op("tern::relu", {x}, DType::F32, kShape, "b");
  Value list;
  list.kind = Value::Kind::TensorList;
  list.tensors = {a, r};
  b.graph().values.push_back(list);
  const int l = static_cast<int>(b.graph().values.size()) - 1;
  const int c = b.op("tern::cat", {l, b.int_value(0)}, DType::F32, {4, 3}, "c");
  b.output(b.op("tern::relu", {c}, DType::F32, {4, 3}, "out"));
  return b.build();
}

TEST(Partition, TensorListElementsCrossTheBoundaryOneByOne) {
  OpSetCompiler* cc = install("pt_cat", {"relu", "cat"});
  Graph g = cat_across_boundary();
  const int x = 0, a = 1, r = 2, list = 3, dim = 4;
  ASSERT_EQ(g.values[list].kind, Value::Kind::TensorList);
  ASSERT_EQ(g.values[dim].kind, Value::Kind::Int);
  partition(g, {"pt_cat"});
  ASSERT_EQ(g.delegates.size(), 1u);
  const DelegateRegion& d = g.delegates[0];
  EXPECT_EQ(d.nodes, (std::vector<int>{1, 2, 3}));
  // x (by relu), then the list's element made outside (a), never the list itself; b is made
  // inside and stays internal.
  EXPECT_EQ(d.inputs, (std::vector<int>{x, a, dim}));
  EXPECT_EQ(d.outputs, (std::vector<int>{6}));
  ASSERT_EQ(cc->lowered.size(), 1u);
  // Every element of the list is bound in the blob: i1 (the input a) and t0 (b, internal).
  EXPECT_EQ(std::string(d.blob.begin(), d.blob.end()),
            "io 3 1\ntemp 0 6\nop relu i0 t0\ntemp 1 12\nop cat [i1,t0] i2 t1\n"
            "op relu t1 o0\n");
  (void)r;
}

TEST(Partition, TensorListFullyOutsideIsPassedElementByElement) {
  // Only the cat and the last relu are taken: both elements of [a, b] come from outside, and
  // each is an input of its own.
  install("pt_cat_only", {"cat", "relu"});
  Graph g = cat_across_boundary();
  DelegateRegion given;  // b's relu handed to another backend first
  given.backend = "given";
  given.nodes = {1};
  given.inputs = {0};
  given.outputs = {2};
  g.delegates.push_back(given);
  partition(g, {"pt_cat_only"});
  ASSERT_EQ(g.delegates.size(), 2u);
  const DelegateRegion& d = g.delegates[1];
  EXPECT_EQ(d.backend, "pt_cat_only");
  EXPECT_EQ(d.nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(d.inputs, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(d.outputs, (std::vector<int>{6}));
}

TEST(Partition, TensorListElementsMadeInsideAreOutputsOneByOne) {
  // pt_relu takes b (and out, in a region of its own); the cat outside reads b through the
  // list, so b leaves the region as a plain tensor output.
  install("pt_relu", {"relu"});
  Graph g = cat_across_boundary();
  partition(g, {"pt_relu"});
  ASSERT_EQ(g.delegates.size(), 2u);
  EXPECT_EQ(g.delegates[0].nodes, (std::vector<int>{1}));
  EXPECT_EQ(g.delegates[0].inputs, (std::vector<int>{0}));
  EXPECT_EQ(g.delegates[0].outputs, (std::vector<int>{2}));
}

TEST(Partition, DeclaredListInputIsRefusedElementsAccepted) {
  // A graph that declares a region's boundary must list the elements, as derived.
  Graph g = cat_across_boundary();
  DelegateRegion d;
  d.backend = "given";
  d.nodes = {2};
  d.inputs = {3, 4};  // the list, as the boundary rule had it before elements crossed alone
  d.outputs = {5};
  g.delegates.push_back(d);
  try {
    validate_graph(g);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("crosses the region boundary"), std::string::npos)
        << e.what();
  }
  g.delegates[0].inputs = {1, 2, 4};
  EXPECT_NO_THROW(validate_graph(g));
}

// A node on a bounded-dynamic value (docs/dynamic-shapes.md) stays on the portable kernels
// unless its backend's supports_dynamic_shapes() says otherwise (none does yet).
TEST(Partition, DynamicShapedNodesStayPortable) {
  OpSetCompiler* a = install("pt_dyn", {"add", "relu", "mul"});
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 4);
  const int x = b.input("x", DType::F32, {4, 3});
  b.dynamic_dims(x, {seq, -1});
  const int y = b.input("y", DType::F32, {2, 3});
  const int r = b.op("tern::relu", {x}, DType::F32, {4, 3}, "dyn_relu");
  b.dynamic_dims(r, {seq, -1});
  const int s = b.op("tern::add", {y, y}, DType::F32, {2, 3}, "static_add");
  const int m = b.op("tern::mul", {s, s}, DType::F32, {2, 3}, "static_mul");
  b.output(r);
  b.output(m);
  Graph g = b.build();
  EXPECT_TRUE(node_touches_dynamic(g, g.nodes[0]));
  EXPECT_FALSE(node_touches_dynamic(g, g.nodes[1]));
  partition(g, {"pt_dyn"});
  ASSERT_EQ(g.delegates.size(), 1u);
  ASSERT_EQ(a->lowered.size(), 1u);
  for (int n : g.delegates[0].nodes) EXPECT_NE(g.nodes[n].debug_name, "dyn_relu");
  EXPECT_EQ(g.delegates[0].nodes.size(), 2u);
}

TEST(Partition, HandWrittenRegionWithADynamicNodeIsRefused) {
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 4);
  const int x = b.input("x", DType::F32, {4, 3});
  b.dynamic_dims(x, {seq, -1});
  const int r = b.op("tern::relu", {x}, DType::F32, {4, 3}, "dyn_relu");
  b.dynamic_dims(r, {seq, -1});
  b.output(r);
  b.delegate("pt_dyn", 0, 0);
  try {
    b.build();
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("touches a dynamic-shaped value"), std::string::npos)
        << e.what();
  }
}

TEST(Partition, NoBackendsChangesNothing) {
  Graph g = interleaved();
  partition(g, {});
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"s", "m", "r", "p", "q", "out"}));
  EXPECT_TRUE(g.delegates.empty());
}

// ---- end to end: partition -> compile -> load with a runtime backend ----

// Runs the blobs OpSetCompiler writes (f32 elementwise add, mul, relu, neg).
class InterpBackend final : public BackendInterface {
 public:
  struct Instr {
    std::string op;
    std::vector<std::string> refs;  // operands, then the result
  };
  struct Handle {
    size_t num_inputs = 0, num_outputs = 0;
    std::vector<std::vector<float>> temps;
    std::vector<Instr> code;
  };
  mutable int execute_calls = 0;

  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer blob_buffer,
                               Span<const CompileSpecView>) const override {
    const Span<const uint8_t> blob = blob_buffer.bytes();
    std::istringstream in(std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
    auto h = std::make_unique<Handle>();
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string kind;
      words >> kind;
      if (kind == "io") {
        words >> h->num_inputs >> h->num_outputs;
      } else if (kind == "temp") {
        size_t k = 0, numel = 0;
        words >> k >> numel;
        if (h->temps.size() <= k) h->temps.resize(k + 1);
        h->temps[k].assign(numel, 0.0f);
      } else if (kind == "op") {
        Instr instr;
        words >> instr.op;
        for (std::string r; words >> r;) instr.refs.push_back(r);
        h->code.push_back(instr);
      } else {
        return set_error_message(Error::DelegateInvalidCompatibility, "interp: bad line '%s'",
                                 line.c_str());
      }
    }
    return reinterpret_cast<DelegateHandle*>(h.release());
  }
  Error execute(BackendExecuteContext&, DelegateHandle* handle, Span<EValue*> args) const override {
    ++execute_calls;
    Handle* h = reinterpret_cast<Handle*>(handle);
    if (args.size() != h->num_inputs + h->num_outputs) {
      return set_error_message(Error::DelegateExecutionFailed, "interp: %zu args", args.size());
    }
    auto ptr = [&](const std::string& r) -> float* {
      const size_t k = std::stoul(r.substr(1));
      if (r[0] == 't') return h->temps.at(k).data();
      const size_t arg = r[0] == 'i' ? k : h->num_inputs + k;
      return static_cast<float*>(const_cast<void*>(args[arg]->to_tensor().data));
    };
    for (const Instr& ins : h->code) {
      float* out = ptr(ins.refs.back());
      const float* a = ptr(ins.refs[0]);
      const float* b = ins.refs.size() > 2 ? ptr(ins.refs[1]) : nullptr;
      for (size_t i = 0; i < 6; ++i) {  // every tensor of these tests has 6 elements
        if (ins.op == "add")
          out[i] = a[i] + b[i];
        else if (ins.op == "mul")
          out[i] = a[i] * b[i];
        else if (ins.op == "relu")
          out[i] = a[i] > 0 ? a[i] : 0.0f;
        else if (ins.op == "neg")
          out[i] = -a[i];
      }
    }
    return Error::Ok;
  }
  void destroy(DelegateHandle* handle) const override { delete reinterpret_cast<Handle*>(handle); }
};

InterpBackend g_interp;

// Runs forward(x, y) of `bytes`; sets *path to the first delegate call's path (if any).
std::vector<float> run_program(const std::vector<uint8_t>& bytes, std::vector<float> x,
                               std::vector<float> y, const MethodLoadOptions& options,
                               size_t* num_delegate_calls, DelegatePath* path) {
  testing::LoadedProgram lp(bytes);
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return {};
  std::vector<int64_t> sizes = kShape;
  EXPECT_EQ(method->set_input(0, testing::f32_view(sizes, x)), Error::Ok) << last_error_message();
  EXPECT_EQ(method->set_input(1, testing::f32_view(sizes, y)), Error::Ok) << last_error_message();
  EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
  *num_delegate_calls = method->num_delegate_calls();
  if (*num_delegate_calls > 0) *path = method->delegate_path(0).get();
  auto out = method->output(0);
  EXPECT_TRUE(out.ok()) << last_error_message();
  return out.ok() ? testing::to_vector(**out) : std::vector<float>{};
}

TEST(PartitionEndToEnd, DelegatedProgramMatchesPortableAndFallback) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  clear_backend_registry_for_testing();
  Backend entry;
  entry.name = "interp";
  entry.backend = &g_interp;
  ASSERT_EQ(register_backend(entry), Error::Ok) << last_error_message();
  install("interp", {"add", "relu", "neg"});

  ProgramGraph program;
  program.methods.push_back(interleaved());
  const std::vector<uint8_t> portable = compile_program(program).bytes;
  CompileOptions options;
  options.backends = {"interp"};
  const CompileResult delegated = compile_program(program, options);
  ASSERT_EQ(delegated.methods.size(), 1u);
  EXPECT_EQ(delegated.methods[0].num_delegates, 1u);
  EXPECT_TRUE(program.methods[0].delegates.empty());  // the input program is not modified

  const std::vector<float> x = {1, -2, 3, -4, 5, -6};
  const std::vector<float> y = {0.5f, 1, -4, 2, 0, 7};
  const std::vector<float> c = {1, 2, 3, 4, 5, 6};
  // out = ((x + y) * c * c) * (relu(x + y) + c), worked element by element.
  std::vector<float> expected(6);
  for (size_t i = 0; i < 6; ++i) {
    const float s = x[i] + y[i];
    const float p = s * c[i] * c[i];
    const float q = (s > 0 ? s : 0.0f) + c[i];
    expected[i] = p * q;
  }

  size_t calls = 0;
  DelegatePath path = DelegatePath::Fallback;
  EXPECT_EQ(run_program(portable, x, y, {}, &calls, &path), expected);
  EXPECT_EQ(calls, 0u);

  g_interp.execute_calls = 0;
  EXPECT_EQ(run_program(delegated.bytes, x, y, {}, &calls, &path), expected);
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(path, DelegatePath::Backend);
  EXPECT_EQ(g_interp.execute_calls, 1);

  const char* disabled[] = {"interp"};
  MethodLoadOptions no_interp;
  no_interp.disabled_backends = Span<const char* const>(disabled, 1);
  g_interp.execute_calls = 0;
  EXPECT_EQ(run_program(delegated.bytes, x, y, no_interp, &calls, &path), expected);
  EXPECT_EQ(path, DelegatePath::Fallback);
  EXPECT_EQ(g_interp.execute_calls, 0);

  // Without the runtime backend registered at all, the fallback runs too.
  clear_backend_registry_for_testing();
  EXPECT_EQ(run_program(delegated.bytes, x, y, {}, &calls, &path), expected);
  EXPECT_EQ(path, DelegatePath::Fallback);
}

}  // namespace
}  // namespace tern::compiler
