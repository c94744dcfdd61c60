// The cpu backend's GroupedMatmul (tern's own node, op 46, since blob version 23: grouped_mm,
// each group of x's rows, cut by run-time ends, times its own constant matrix; mixture-of-experts
// layers sorted by expert). Conformance against the portable kernels (harness:
// cpu_conformance_util.h; the ends are sorted integers in [0, index_bound), so groups come empty
// and rows after the last end are zeros), values worked by hand, ends that go backwards or past
// the rows failing the execution (naming them), what the compile half refuses and the reader's
// checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {out, xs.back()}, seed, 0.5f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, b.none()}, DType::F32, ys);
}

int grouped_mm(GraphBuilder& b, int x, int w, int ends, int64_t rows, int64_t n) {
  return b.op("tern::grouped_mm", {x, w, ends}, DType::F32, {rows, n});
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  // A gated MoE MLP: a projection, both grouped products around silu(gate) * up.
  OpCase moe = {"moe_mlp_int32_ends", [](GraphBuilder& b) {
                  const int x = b.input("x", DType::F32, {12, 16});
                  const int h = linear(b, x, {12, 16}, 16, 3);
                  const int ends = b.input("ends", DType::I32, {4});
                  const int gate_up = constant(b, "gate_up", {4, 16, 48}, 5);
                  const int gu = grouped_mm(b, h, gate_up, ends, 12, 48);
                  const int gate = b.op("tern::split", {gu, b.int_list({24, 24}), b.int_value(-1)},
                                        DType::F32, {12, 24});
                  b.graph().values.push_back(b.graph().values[static_cast<size_t>(gate)]);
                  const int up = static_cast<int>(b.graph().values.size()) - 1;
                  b.graph().nodes.back().outputs.push_back(up);
                  const int act = b.op("tern::silu", {gate}, DType::F32, {12, 24});
                  const int prod = b.op("tern::mul", {act, up}, DType::F32, {12, 24});
                  const int down = constant(b, "down", {4, 24, 16}, 7);
                  b.output(grouped_mm(b, prod, down, ends, 12, 16));
                }};
  moe.index_bound = 13;  // ends in [0, 12]
  moe.sorted_ints = true;
  moe.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupedMatmul), 2u);
  };
  c.push_back(moe);
  // int64 ends, N not a multiple of the 16-column panels, more rows than one tile.
  OpCase wide = {"int64_ends_ragged_columns", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {37, 40});
                   const int h = linear(b, x, {37, 40}, 40, 9);
                   const int ends = b.input("ends", DType::I64, {3});
                   const int w = constant(b, "w", {3, 40, 70}, 11);
                   b.output(grouped_mm(b, h, w, ends, 37, 70));
                 }};
  wide.index_bound = 38;
  wide.sorted_ints = true;
  c.push_back(wide);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceGroupedMm, cases());

/// x [4, 2] -> grouped_mm(x, w [3, 2, 3], ends) as a one-node delegate (after a linear that
/// copies x: the identity), loaded as a program.
struct HandProgram {
  std::vector<uint8_t> pte;
  compiler::Graph graph;
};

HandProgram hand_program() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 2});
  const int eye = b.constant_f32("eye", {2, 2}, {1, 0, 0, 1});
  const int h = b.op("tern::linear", {x, eye, b.none()}, DType::F32, {4, 2});
  const int ends = b.input("ends", DType::I32, {3});
  // w[0] = [[1, 2, 3], [4, 5, 6]], w[1] = 10 w[0], w[2] = -w[0].
  std::vector<float> w;
  for (float s : {1.0f, 10.0f, -1.0f}) {
    for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) w.push_back(s * v);
  }
  const int wv = b.constant_f32("w", {3, 2, 3}, w);
  b.output(grouped_mm(b, h, wv, ends, 4, 3));
  delegate_cpu(b, 0, 1);
  HandProgram p;
  p.graph = b.build();
  p.pte = testing::compile_graph(p.graph);
  return p;
}

TEST(CpuGroupedMm, ValuesWorkedByHandAndBadEnds) {
  register_all();
  const HandProgram hp = hand_program();
  testing::LoadedProgram lp(hp.pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  std::vector<float> xs{1, 0, 0, 1, 1, 1, 2, -1};
  std::vector<int64_t> sizes{4, 2}, esizes{3};
  ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, xs)), Error::Ok);
  std::vector<int32_t> ends{1, 1, 3};  // row 0: w[0]; group 1 empty; rows 1, 2: w[2]; row 3: 0
  TensorView ev;
  ev.dtype = DType::I32;
  ev.rank = 1;
  ev.sizes = esizes.data();
  ev.data = ends.data();
  ev.nbytes = ends.size() * sizeof(int32_t);
  ASSERT_EQ(method->set_input(1, ev), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  auto out = method->output(0);
  ASSERT_TRUE(out.ok());
  // row 0 [1, 0] · w0 = [1, 2, 3]; row 1 [0, 1] · -w0 = [-4, -5, -6];
  // row 2 [1, 1] · -w0 = [-5, -7, -9]; row 3 after the last end: zeros.
  const std::vector<float> want{1, 2, 3, -4, -5, -6, -5, -7, -9, 0, 0, 0};
  EXPECT_EQ(testing::to_vector(*out.get()), want);

  ends = {2, 1, 3};  // backwards
  ASSERT_EQ(method->set_input(1, ev), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find("ends[1] is 1, expected 2..4"), std::string::npos) << msg;
  ends = {1, 2, 5};  // past the 4 rows
  ASSERT_EQ(method->set_input(1, ev), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  msg = last_error_message();
  EXPECT_NE(msg.find("ends[2] is 5"), std::string::npos) << msg;
  ends = {0, 0, 4};  // every row times -w0 (row 3: [2, -1] · -w0); the method runs again
  ASSERT_EQ(method->set_input(1, ev), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  out = method->output(0);
  ASSERT_TRUE(out.ok());
  const std::vector<float> all_last{-1, -2, -3, -4, -5, -6, -5, -7, -9, 2, 1, 0};
  EXPECT_EQ(testing::to_vector(*out.get()), all_last);
}

std::string reason(GraphBuilder& b) {
  return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
}

TEST(CpuGroupedMm, WhatTheCompileHalfRefuses) {
  register_all();
  {  // constant ends
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 2});
    const int w = constant(b, "w", {2, 2, 3}, 1);
    const int ends = int64_constant(b, {2}, {1, 4});
    grouped_mm(b, x, w, ends, 4, 3);
    EXPECT_NE(reason(b).find("made at run time"), std::string::npos) << reason(b);
  }
  {  // a weight that is an activation
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 2});
    const int w = b.input("w", DType::F32, {2, 2, 3});
    const int ends = b.input("ends", DType::I32, {2});
    grouped_mm(b, x, w, ends, 4, 3);
    EXPECT_NE(reason(b).find("w"), std::string::npos) << reason(b);
  }
  {  // ends of another count than the experts
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 2});
    const int w = constant(b, "w", {2, 2, 3}, 1);
    const int ends = b.input("ends", DType::I32, {3});
    grouped_mm(b, x, w, ends, 4, 3);
    EXPECT_NE(reason(b).find("not [E]"), std::string::npos) << reason(b);
  }
}

TEST(CpuGroupedMmBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = hand_program().graph.delegates.at(0).blob;
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  const uint32_t at = last_node_of(blob, cpu::NodeOp::GroupedMatmul);
  ASSERT_LT(at, blob_ops(blob).size());
  const cpu::BlobNode node = blob_node(blob, at);
  expect_refused(
      blob, at,
      {{"E 0", [](cpu::BlobNode& n) { n.params[0] = 0; }, "parameter 0 is 0"},
       {"E 2: the ends' count", [](cpu::BlobNode& n) { n.params[0] = 2; }, "(grouped_matmul)"},
       {"K 3", [](cpu::BlobNode& n) { n.params[1] = 3; }, "(grouped_matmul)"},
       {"N 4", [](cpu::BlobNode& n) { n.params[2] = 4; }, "(grouped_matmul)"},
       {"N above 2^30", [](cpu::BlobNode& n) { n.params[2] = (1u << 30) + 1; }, "above"},
       {"a parameter", [](cpu::BlobNode& n) { n.params[3] = 1; }, "unused parameter 3 is 1"},
       {"bounds", [](cpu::BlobNode& n) { n.fparams[1] = 2.0f; }, "expected (-inf, +inf)"},
       {"x and ends swapped",
        [node](cpu::BlobNode& n) {
          n.inputs[0] = node.inputs[2];
          n.inputs[2] = node.inputs[0];
        },
        "int32 or int64"},
       {"two inputs",
        [](cpu::BlobNode& n) {
          n.num_inputs = 2;
          n.inputs[2] = cpu::kNoValue;
        },
        "(grouped_matmul): 2 inputs"}});
}

TEST(CpuGroupedMmBlob, TheWeightsRecipeIsTheNodesPacking) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 2});
  const int h = linear(b, x, {4, 2}, 2, 3);
  const int ends = b.input("ends", DType::I32, {2});
  b.output(grouped_mm(b, h, constant(b, "w", {2, 2, 16}, 5), ends, 4, 16));
  delegate_cpu(b, 0, 1);
  const std::vector<uint8_t> blob = b.build().delegates.at(0).blob;
  cpu::BlobHeader hd;
  std::memcpy(&hd, blob.data(), sizeof(hd));
  const size_t recipes = sizeof(hd) + hd.num_values * sizeof(cpu::BlobValue) +
                         hd.num_nodes * sizeof(cpu::BlobNode);
  // The linear's small weight is embedded; the experts' packing is the one recipe.
  ASSERT_EQ(hd.num_recipes, 1u);
  cpu::BlobRecipe r;
  std::memcpy(&r, blob.data() + recipes, sizeof(r));
  ASSERT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackGroupedKn));
  EXPECT_EQ(r.params[0], 2u);
  EXPECT_EQ(r.params[1], 2u);
  EXPECT_EQ(r.params[2], 16u);
  // One expert of 32 columns reads as many elements (64) and packs into as many floats (2
  // panels of 16 x 3): the sizes agree, but the node would read it as two [2, 16] matrices.
  std::vector<uint8_t> bad = blob;
  r.params[0] = 1;
  r.params[2] = 32;
  std::memcpy(bad.data() + recipes, &r, sizeof(r));
  std::string message;
  EXPECT_EQ(parse(bad, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("expected a pack_grouped_kn recipe of the node's E, K, N"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace tern::cpu_test
