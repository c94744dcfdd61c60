// validate_graph and is_view_op: every structural error is reported with the node, op and value.
#include "tools/compiler/graph.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "tools/compiler/graph_builder.h"

namespace tern::compiler {
namespace {

// Expects validate_graph(g) to throw std::invalid_argument whose message contains every
// fragment.
void expect_invalid(const Graph& g, std::initializer_list<const char*> fragments) {
  try {
    validate_graph(g);
    ADD_FAILURE() << "validate_graph accepted an invalid graph";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    for (const char* f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
    }
  }
}

// x -> relu -> y, a valid base graph.
GraphBuilder relu_graph() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 3});
  const int y = b.op("tern::relu", {x}, DType::F32, {2, 3}, "act");
  b.output(y);
  return b;
}

TEST(IsViewOp, ClassifiesViewOps) {
  for (const char* op : {"tern::reshape", "tern::view", "tern::squeeze", "tern::unsqueeze",
                         "tern::flatten", "tern::alias"}) {
    EXPECT_TRUE(is_view_op(op)) << op;
  }
  for (const char* op : {"tern::relu", "tern::permute", "tern::clone", "reshape", ""}) {
    EXPECT_FALSE(is_view_op(op)) << op;
  }
}

TEST(ValidateGraph, AcceptsValidGraph) {
  GraphBuilder b = relu_graph();
  EXPECT_NO_THROW(validate_graph(b.graph()));
}

TEST(ValidateGraph, ArgOutOfRange) {
  GraphBuilder b = relu_graph();
  b.graph().nodes[0].args[0] = 42;
  expect_invalid(b.graph(), {"method 'forward'", "node 0 (tern::relu)", "arg 0", "value 42",
                             "out of range", "2 values"});
}

TEST(ValidateGraph, NegativeOutputId) {
  GraphBuilder b = relu_graph();
  b.graph().nodes[0].outputs[0] = -1;
  expect_invalid(b.graph(), {"node 0 (tern::relu)", "output 0", "value -1", "out of range"});
}

TEST(ValidateGraph, UseBeforeProduce) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4});
  const int t = b.tensor("t", DType::F32, {4});
  const int y = b.op("tern::add", {x, t}, DType::F32, {4});
  b.op_into("tern::relu", {x}, {t});
  b.output(y);
  expect_invalid(b.graph(),
                 {"node 0 (tern::add)", "arg 1", "value 1 't'", "used before it is produced"});
}

TEST(ValidateGraph, ProducedTwice) {
  GraphBuilder b = relu_graph();
  b.op_into("tern::neg", {0}, {1});
  expect_invalid(b.graph(), {"node 1 (tern::neg)", "output 0", "value 1", "produced twice"});
}

TEST(ValidateGraph, NeverProduced) {
  GraphBuilder b = relu_graph();
  b.tensor("orphan", DType::F32, {1});
  expect_invalid(b.graph(), {"value 2 'orphan'", "never produced"});
}

TEST(ValidateGraph, WritesConstant) {
  GraphBuilder b = relu_graph();
  const int c = b.constant_f32("w", {1}, {1.0f});
  b.op_into("tern::relu", {0}, {c});
  expect_invalid(b.graph(), {"node 1 (tern::relu)", "'w'", "constant"});
}

TEST(ValidateGraph, WritesInput) {
  GraphBuilder b = relu_graph();
  b.op_into("tern::relu", {1}, {0});
  expect_invalid(b.graph(), {"node 1", "value 0 'x'", "method input"});
}

TEST(ValidateGraph, StateMayBeWrittenRepeatedly) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4});
  const int s = b.state("cache", DType::F32, {4});
  b.op_into("tern::copy_", {x}, {s});
  b.op_into("tern::add_", {s, x}, {s});
  b.output(s);
  EXPECT_NO_THROW(validate_graph(b.graph()));
}

TEST(ValidateGraph, NonTensorOutputOfNode) {
  GraphBuilder b = relu_graph();
  const int i = b.int_value(3);
  b.op_into("tern::relu", {0}, {i});
  expect_invalid(b.graph(), {"node 1 (tern::relu)", "output 0", "is a int", "expected a tensor"});
}

TEST(ValidateGraph, ConstantByteSize) {
  GraphBuilder b = relu_graph();
  b.constant("w", DType::F32, {2, 2}, std::vector<uint8_t>(15));
  expect_invalid(b.graph(), {"value 2 'w'", "needs 16 bytes, has 15"});
}

TEST(ValidateGraph, Nf4ConstantRoundsUpToWholeBytes) {
  GraphBuilder b = relu_graph();
  const int w = b.constant("w", DType::NF4, {3}, std::vector<uint8_t>(2));
  const int absmax = b.constant("absmax", DType::F32, {1}, std::vector<uint8_t>(4));
  b.graph().values[w].quant.scheme = QuantSpec::Scheme::NF4;
  b.graph().values[w].quant.block_size = 32;
  b.graph().values[w].quant.absmax = absmax;
  EXPECT_NO_THROW(validate_graph(b.graph()));
}

TEST(ValidateGraph, NegativeSize) {
  GraphBuilder b = relu_graph();
  b.graph().values[1].sizes = {2, -3};
  expect_invalid(b.graph(), {"value 1", "[2, -3]", "negative"});
}

TEST(ValidateGraph, OutputOutOfRange) {
  GraphBuilder b = relu_graph();
  b.output(7);
  expect_invalid(b.graph(), {"output 1", "value 7", "out of range"});
}

TEST(ValidateGraph, InputMustBeTensorOrScalar) {
  GraphBuilder b = relu_graph();
  const int s = b.string_value("hi");
  b.graph().inputs.push_back(s);
  expect_invalid(b.graph(), {"input 1", "string", "expected a tensor"});
}

TEST(ValidateGraph, CallerBoundMustBeInput) {
  GraphBuilder b = relu_graph();
  b.graph().values[1].caller_bound = true;
  expect_invalid(b.graph(), {"value 1", "caller-bound but not a method input"});
}

TEST(ValidateGraph, TensorListElements) {
  GraphBuilder b = relu_graph();
  const int i = b.int_value(1);
  Value list;
  list.kind = Value::Kind::TensorList;
  list.tensors = {0, i};
  b.graph().values.push_back(list);
  expect_invalid(b.graph(), {"value 3", "element 1", "expected a tensor"});
}

TEST(ValidateGraph, QuantReferenceMustBeConstant) {
  GraphBuilder b = relu_graph();
  const int w = b.constant("w", DType::NF4, {64}, std::vector<uint8_t>(32));
  b.graph().values[w].quant.scheme = QuantSpec::Scheme::NF4;
  b.graph().values[w].quant.absmax = 0;  // the input x, not a constant
  expect_invalid(b.graph(), {"'w'", "quant.absmax", "constant tensor"});
  b.graph().values[w].quant.absmax = 99;
  expect_invalid(b.graph(), {"quant.absmax", "value 99 out of range"});
}

// Quant parameters are checked as the runtime's loader checks them (a fuzz finding: an FP8
// weight whose scale was another tensor's, 5 per-channel scales for a 2x2-tile weight, compiled
// into a program Program::load refused).
TEST(ValidateGraph, QuantParametersMustFitTheTensor) {
  GraphBuilder b = relu_graph();
  const int w = b.constant("w", DType::FP8E5M2, {8, 24}, std::vector<uint8_t>(8 * 24));
  const int five = b.constant("five", DType::F32, {5}, std::vector<uint8_t>(20));
  const int four = b.constant("four", DType::F32, {4}, std::vector<uint8_t>(16));
  const int eight = b.constant("eight", DType::F32, {8}, std::vector<uint8_t>(32));
  QuantSpec& q = b.graph().values[w].quant;
  expect_invalid(b.graph(), {"'w'", "fp8_e5m2 tensor without quantization parameters"});
  q.scheme = QuantSpec::Scheme::FP8;
  q.granularity = QuantSpec::Granularity::Block2D;
  q.block_rows = 4;
  q.block_cols = 16;  // ceil(8 / 4) x ceil(24 / 16) = 4 tiles
  q.scale = five;
  expect_invalid(b.graph(), {"'w'", "quant scale", "'five'", "has 5 elements, expected 4"});
  q.scale = four;
  EXPECT_NO_THROW(validate_graph(b.graph()));
  q.granularity = QuantSpec::Granularity::PerChannel;  // 8 rows: 8 scales
  expect_invalid(b.graph(), {"quant scale", "has 4 elements, expected 8"});
  q.scale = eight;
  EXPECT_NO_THROW(validate_graph(b.graph()));
  q.scale = -1;
  expect_invalid(b.graph(), {"quant.scale", "missing"});
  q.scale = eight;
  q.scheme = QuantSpec::Scheme::NF4;
  expect_invalid(b.graph(), {"'w'", "NF4 quantization on a fp8_e5m2 tensor"});

  const int n = b.constant("n", DType::NF4, {4, 32}, std::vector<uint8_t>(64));
  QuantSpec& nq = b.graph().values[n].quant;
  nq.scheme = QuantSpec::Scheme::NF4;
  nq.block_size = 48;
  nq.absmax = four;
  b.graph().values[w].quant.scheme = QuantSpec::Scheme::FP8;
  expect_invalid(b.graph(), {"'n'", "NF4 block size 48 is not a power of two"});
  nq.block_size = 32;  // 128 codes: 4 blocks
  EXPECT_NO_THROW(validate_graph(b.graph()));
  nq.block_size = 64;
  expect_invalid(b.graph(), {"'n'", "quant absmax", "has 4 elements, expected 2"});
}

// x -> a -> b -> c, region over nodes 1..2.
GraphBuilder chain_with_region() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {8});
  const int a = b.op("tern::relu", {x}, DType::F32, {8});
  const int bb = b.op("tern::neg", {a}, DType::F32, {8});
  const int c = b.op("tern::relu", {bb}, DType::F32, {8});
  b.output(c);
  b.delegate("cpu", 1, 2);
  return b;
}

TEST(ValidateGraph, DelegateRegionDerivedBoundary) {
  GraphBuilder b = chain_with_region();
  const DelegateRegion& r = b.graph().delegates[0];
  EXPECT_EQ(r.inputs, std::vector<int>({1}));
  EXPECT_EQ(r.outputs, std::vector<int>({3}));
  EXPECT_NO_THROW(b.build());
}

TEST(ValidateGraph, DelegateRegionNotContiguous) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {8});
  int v = x;
  for (int i = 0; i < 3; ++i) v = b.op("tern::relu", {v}, DType::F32, {8});
  b.output(v);
  DelegateRegion r;
  r.backend = "cpu";
  r.nodes = {0, 2};
  b.graph().delegates.push_back(r);
  expect_invalid(b.graph(), {"delegate 0 (cpu)", "ascending and contiguous", "0 then 2"});
}

TEST(ValidateGraph, DelegateRegionNodeOutOfRange) {
  GraphBuilder b = chain_with_region();
  b.graph().delegates[0].nodes = {2, 3};
  expect_invalid(b.graph(), {"delegate 0 (cpu)", "node 3 out of range"});
}

TEST(ValidateGraph, DelegateRegionsOverlap) {
  GraphBuilder b = chain_with_region();
  b.graph().delegates.push_back(b.graph().delegates[0]);
  expect_invalid(b.graph(), {"delegate 1", "already belongs to delegate 0"});
}

TEST(ValidateGraph, DelegateRegionMissingInput) {
  GraphBuilder b = chain_with_region();
  b.graph().delegates[0].inputs.clear();
  expect_invalid(b.graph(), {"delegate 0 (cpu)", "value 1", "not a declared input"});
}

TEST(ValidateGraph, DelegateRegionExtraOutput) {
  GraphBuilder b = chain_with_region();
  b.graph().delegates[0].outputs.push_back(2);  // internal to the region
  expect_invalid(b.graph(), {"delegate 0 (cpu)", "declared output value 2", "does not cross"});
}

TEST(GraphBuilder, ValuesAndNodes) {
  GraphBuilder b("decode");
  const int x = b.input("x", DType::F32, {1, 4});
  const int w = b.constant_f32("w", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const int i = b.int_value(-5);
  const int d = b.double_value(0.25);
  const int t = b.bool_value(true);
  const int il = b.int_list({1, 2});
  const int dl = b.double_list({0.5});
  const int s = b.string_value("tanh");
  const int n = b.none();
  const int st = b.state("kv", DType::F16, {2}, {});
  const int y = b.op("tern::linear", {x, w, n}, DType::F32, {1, 2}, "fc");
  b.output(y);
  const Graph g = b.build();
  EXPECT_EQ(g.name, "decode");
  EXPECT_EQ(g.inputs, std::vector<int>({x}));
  EXPECT_EQ(g.outputs, std::vector<int>({y}));
  EXPECT_EQ(g.values.size(), 11u);
  EXPECT_TRUE(g.values[w].is_constant);
  EXPECT_EQ(g.values[w].data.size(), 32u);
  float third;
  std::memcpy(&third, g.values[w].data.data() + 8, 4);
  EXPECT_EQ(third, 3.0f);
  EXPECT_EQ(g.values[i].int_value, -5);
  EXPECT_EQ(g.values[d].double_value, 0.25);
  EXPECT_TRUE(g.values[t].bool_value);
  EXPECT_EQ(g.values[il].ints, std::vector<int64_t>({1, 2}));
  EXPECT_EQ(g.values[dl].doubles, std::vector<double>({0.5}));
  EXPECT_EQ(g.values[s].string_value, "tanh");
  EXPECT_EQ(g.values[n].kind, Value::Kind::None);
  EXPECT_TRUE(g.values[st].is_state);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "tern::linear");
  EXPECT_EQ(g.nodes[0].args, std::vector<int>({x, w, n}));
  EXPECT_EQ(g.nodes[0].outputs, std::vector<int>({y}));
  EXPECT_EQ(g.nodes[0].debug_name, "fc");
  EXPECT_EQ(g.values[y].sizes, std::vector<int64_t>({1, 2}));
  EXPECT_EQ(b.num_nodes(), 1u);
}

TEST(GraphBuilder, BuildThrowsOnInvalidGraph) {
  GraphBuilder b;
  b.tensor("never", DType::F32, {1});
  EXPECT_THROW(b.build(), std::invalid_argument);
}

TEST(GraphBuilder, DelegateOutputsFollowLaterUses) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {8});
  const int a = b.op("tern::relu", {x}, DType::F32, {8});
  const int c = b.op("tern::neg", {a}, DType::F32, {8});
  b.delegate("cpu", 0, 1);  // before anything reads a or c
  EXPECT_TRUE(b.graph().delegates[0].outputs.empty());
  const int d = b.op("tern::add", {a, x}, DType::F32, {8});
  b.output(c);
  b.output(d);
  EXPECT_EQ(b.graph().delegates[0].inputs, std::vector<int>({x}));
  EXPECT_EQ(b.graph().delegates[0].outputs, std::vector<int>({a, c}));
  EXPECT_NO_THROW(b.build());
}

TEST(GraphBuilder, DelegateBadRange) {
  GraphBuilder b = relu_graph();
  EXPECT_THROW(b.delegate("cpu", 0, 1), std::invalid_argument);
  EXPECT_THROW(b.delegate("cpu", -1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tern::compiler
