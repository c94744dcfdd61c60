// The cpu backend's compile half, node by node: which blob nodes a region becomes (tern's packed
// GEMM, direct, grouped and Winograd convs, the fused bottleneck, XNNPACK for tiny products)
// and which activations, residual adds and batch norms fold into them; the stage plan's
// workspace sharing. (The blob format and its corruptions: cpu_blob_test.cpp.)
#include "tests/backends/cpu/cpu_blob_test_util.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tern::cpu_test {
namespace {

TEST_F(CpuBlobTest, LinearIsPackedForTernsGemmWithTheReluFolded) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = linear_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // the relu became the fc's lower bound
  cpu::BlobNode node;
  std::memcpy(&node, blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue),
              sizeof(node));
  EXPECT_EQ(node.op, static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  EXPECT_EQ(node.params[0], 18u);
  EXPECT_EQ(node.params[1], 20u);
  EXPECT_EQ(node.fparams[0], 0.0f);
  cpu::BlobValue packed;
  std::memcpy(&packed, blob.data() + sizeof(h) + node.inputs[1] * sizeof(cpu::BlobValue),
              sizeof(packed));
  // Two panels of 16 columns, each 16 bias floats then 20 rows of 16 (docs: README blob format),
  // made at prepare by a PackFc recipe from the program's w and b.
  ASSERT_EQ(packed.dims[0], 2u * 16u * 21u);
  ASSERT_EQ(packed.kind, static_cast<uint32_t>(cpu::ValueKind::Derived));
  cpu::BlobRecipe r;
  std::memcpy(&r,
              blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                  h.num_nodes * sizeof(cpu::BlobNode) + packed.recipe * sizeof(cpu::BlobRecipe),
              sizeof(r));
  EXPECT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackFc));
  EXPECT_EQ(r.params[0], 18u);
  EXPECT_EQ(r.params[1], 20u);
  const auto floats = [&](int arg) {
    const auto& v = g.values[static_cast<size_t>(g.nodes[0].args[static_cast<size_t>(arg)])];
    std::vector<float> f(v.data.size() / 4);
    std::memcpy(f.data(), v.data.data(), v.data.size());
    return f;
  };
  const std::vector<float> w = floats(1), bias = floats(2);
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r, packed.dims[0], &shape, &why)) << why;
  cpu::RecipeSource src[cpu::kRecipeSources];
  src[0].data = w.data();
  src[1].data = bias.data();
  std::vector<float> got(static_cast<size_t>(packed.dims[0]), -1.0f);
  cpu::run_recipe(r, shape, src, got.data());
  for (size_t col = 0; col < 32; ++col) {
    const size_t panel = col / 16, lane = col % 16, base = panel * 16 * 21;
    EXPECT_EQ(got[base + lane], col < 18 ? f32_at(bias, col) : 0.0f) << "bias " << col;
    for (size_t r = 0; r < 20; ++r) {
      EXPECT_EQ(got[base + 16 * (r + 1) + lane], col < 18 ? f32_at(w, col * 20 + r) : 0.0f)
          << "column " << col << " row " << r;
    }
  }
}

/// XNNPACK and own-kernel stages alternating: conv 3x3 (own) -> sigmoid (XNNPACK) -> conv 1x1
/// (own) -> sigmoid -> global pool -> flatten (XNNPACK) -> linear (own) -> softmax (XNNPACK).
TEST_F(CpuBlobTest, StagesAlternateAndLiveWorkspaceValuesNeverShareBytes) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 32, 16, 16});
  const int w1 = b.constant_f32("w1", {32, 32, 3, 3}, random_floats(9216, 7, -0.3f, 0.3f));
  const int c1 = b.op("tern::conv2d",
                      {x, w1, b.none(), b.int_list({1, 1}), b.int_list({1, 1}),
                       b.int_list({1, 1}), b.int_value(1)},
                      DType::F32, {1, 32, 16, 16});
  // abs: no epilogue of the (Winograd) conv before it, so an XNNPACK stage between the two.
  const int s1 = b.op("tern::abs", {c1}, DType::F32, {1, 32, 16, 16});
  const int w2 = b.constant_f32("w2", {32, 32, 1, 1}, random_floats(1024, 8, -0.3f, 0.3f));
  const int c2 = b.op("tern::conv2d",
                      {s1, w2, b.none(), b.int_list({1, 1}), b.int_list({0, 0}),
                       b.int_list({1, 1}), b.int_value(1)},
                      DType::F32, {1, 32, 16, 16});
  const int s2 = b.op("tern::sigmoid", {c2}, DType::F32, {1, 32, 16, 16});
  const int p = b.op("tern::adaptive_avg_pool2d", {s2, b.int_list({1})}, DType::F32, {1, 32, 1, 1});
  const int f = b.op("tern::flatten", {p, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 32});
  const int w3 = b.constant_f32("w3", {5000, 32}, random_floats(160000, 9, -0.3f, 0.3f));
  const int l = b.op("tern::linear", {f, w3, b.none()}, DType::F32, {1, 5000});
  b.output(b.op("tern::softmax", {l, b.int_value(-1)}, DType::F32, {1, 5000}));
  delegate_cpu(b, 0, 7);
  const compiler::Graph g = b.build();
  const std::vector<uint8_t>& blob = g.delegates[0].blob;
  std::vector<uint64_t> store(blob.size() / 8 + 1);
  std::memcpy(store.data(), blob.data(), blob.size());
  cpu::BlobPlan plan;
  ASSERT_EQ(cpu::parse_blob(Span<const uint8_t>(reinterpret_cast<uint8_t*>(store.data()),
                                                blob.size()),
                            &plan),
            Error::Ok)
      << last_error_message();
  cpu::StagePlan stages;
  ASSERT_EQ(cpu::plan_stages(plan, 64, 16, &stages), Error::Ok);
  // own conv | abs | own conv | sigmoid, pool, reshape | own linear | softmax
  ASSERT_EQ(stages.num_stages, 6u);
  const bool own[6] = {true, false, true, false, true, false};
  for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(stages.stages[i].own_kernel, own[i]) << i;
  // Independent lifetimes: the stage of each node, per value its maker and last reader.
  std::vector<int> stage_of(plan.header.num_nodes);
  for (uint32_t s = 0; s < stages.num_stages; ++s) {
    for (uint32_t n = stages.stages[s].first_node; n < stages.stages[s].end_node; ++n) {
      stage_of[n] = static_cast<int>(s);
    }
  }
  const uint32_t nv = plan.header.num_values;
  std::vector<int> first(nv, -1), last(nv, -1);
  for (uint32_t n = 0; n < plan.header.num_nodes; ++n) {
    first[plan.nodes[n].output] = stage_of[n];
    for (uint32_t j = 0; j < plan.nodes[n].num_inputs; ++j) {
      last[plan.nodes[n].inputs[j]] = std::max(last[plan.nodes[n].inputs[j]], stage_of[n]);
    }
  }
  int workspace_values = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    if (stages.homes[i] != cpu::ValueHome::Workspace) continue;
    ++workspace_values;
    const uint64_t bi = cpu::value_numel(plan.values[i]) * 4;
    EXPECT_EQ(stages.workspace_offsets[i] % 64, 0u);
    EXPECT_LE(stages.workspace_offsets[i] + bi + 16, stages.workspace_bytes);
    for (uint32_t j = i + 1; j < nv; ++j) {
      if (stages.homes[j] != cpu::ValueHome::Workspace) continue;
      const int li = std::max(last[i], first[i]), lj = std::max(last[j], first[j]);
      if (li < first[j] || lj < first[i]) continue;  // never live together
      const uint64_t bj = cpu::value_numel(plan.values[j]) * 4;
      const uint64_t oi = stages.workspace_offsets[i], oj = stages.workspace_offsets[j];
      EXPECT_TRUE(oi + bi + 16 <= oj || oj + bj + 16 <= oi)
          << "values " << i << " and " << j << " overlap while both live";
    }
  }
  EXPECT_EQ(workspace_values, 5);  // c1, s1 (read by the conv), c2, flatten, linear
  cpu::free_stage_plan(&stages);
  cpu::free_blob_plan(&plan);
}

TEST_F(CpuBlobTest, TinyProductsStayInXnnpackLargeOnesGoToTernsKernels) {
  const auto ops_of = [](int64_t rows, int64_t in, int64_t out) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {rows, in});
    const int w = b.constant_f32("w", {out, in}, random_floats(size_t(out * in), 3, -1.0f, 1.0f));
    b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {rows, out}));
    delegate_cpu(b, 0, 0);
    return blob_node(b.graph().delegates[0].blob, 0).op;
  };
  // Below 4 rows up to 2^15 multiply-adds: 1 x 16 -> 96 (a squeeze-excitation fc of a small
  // block) stays; 1 x 576 -> 144 (MobileNetV3's, 82,944) and an LSTM's recurrent 1 x 128 ->
  // 512 (65,536) go to tern's GEMM (the snapshot's 1-row kernel waits on FMA latency).
  EXPECT_EQ(ops_of(1, 16, 96), static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  EXPECT_EQ(ops_of(1, 576, 144), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  EXPECT_EQ(ops_of(1, 128, 512), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  // From 4 rows up to 2^17: 8 x 64 -> 128 (65,536) stays.
  EXPECT_EQ(ops_of(8, 64, 128), static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  // 1 x 576 -> 1024 (MobileNetV3's classifier): 589,824 > 2^17.
  EXPECT_EQ(ops_of(1, 576, 1024), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
}

TEST_F(CpuBlobTest, HardsigmoidFoldsIntoTheLayerBeforeIt) {
  // linear -> hardsigmoid: one node (weights scaled at compile time, clamp [0, 1]), where the
  // unfused form is four (fc, add 3, clamp, divide by 6). Values: cpu_conformance_test.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 12});
  const int w = b.constant_f32("w", {20, 12}, random_floats(240, 5, -1.0f, 1.0f));
  const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 20});
  b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {1, 20}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
}

TEST_F(CpuBlobTest, GeluFoldsIntoTheGemmOrRunsOnItsOwnNode) {
  {  // After tern's GEMM: its epilogue activation (params[2] = 3, GELU tanh).
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {64, 64});
    const int w = b.constant_f32("w", {64, 64}, random_floats(4096, 5, -1.0f, 1.0f));
    const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {64, 64});
    b.output(b.op("tern::gelu", {y, b.string_value("tanh")}, DType::F32, {64, 64}));
    delegate_cpu(b, 0, 1);
    ASSERT_EQ(blob_ops(b), (std::vector<uint32_t>{
                               static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)}));
    EXPECT_EQ(blob_node(b.graph().delegates[0].blob, 0).params[2], 3u);
  }
  // After XNNPACK's fc (a tiny product): tern's own gelu node.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 16});
  const int w = b.constant_f32("w", {64, 16}, random_floats(1024, 5, -1.0f, 1.0f));
  const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {4, 64});
  b.output(b.op("tern::gelu", {y, b.string_value("tanh")}, DType::F32, {4, 64}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  EXPECT_EQ(ops[1], static_cast<uint32_t>(cpu::NodeOp::Gelu));
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode node = blob_node(blob, 1);
  EXPECT_EQ(node.params[0], 1u);  // the tanh form
  node.params[0] = 2;             // no such form
  set_blob_node(&blob, 1, node);
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("form 2, expected 0 (erf) or 1 (tanh)"), std::string::npos) << message;
}

TEST_F(CpuBlobTest, ResidualAddFoldsIntoTheGemmUnlessItBroadcasts) {
  const auto ops_of = [](int64_t out) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {64, 32});
    const int h = b.input("h", DType::F32, {64, 256});
    const int w = b.constant_f32("w", {out, 256},
                                 random_floats(size_t(out * 256), 5, -1.0f, 1.0f));
    const int y = b.op("tern::linear", {h, w, b.none()}, DType::F32, {64, out});
    b.output(b.op("tern::add", {y, x}, DType::F32, {64, 32}));
    delegate_cpu(b, 0, 1);
    return blob_ops(b);
  };
  // [64, 32] + [64, 32]: one node, the GEMM with x as its residual.
  EXPECT_EQ(ops_of(32), (std::vector<uint32_t>{
                            static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)}));
  // [64, 1] + [64, 32] broadcasts: the add stays.
  EXPECT_EQ(ops_of(1).size(), 2u);
}

TEST_F(CpuBlobTest, ShallowConvsRunOnTernsDirectConv) {
  const auto first_op = [](int64_t c, int64_t k) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, c, 16, 16});
    const int w =
        b.constant_f32("w", {32, c, k, k}, random_floats(size_t(32 * c * k * k), 7, -1.0f, 1.0f));
    b.output(b.op("tern::conv2d",
                  {x, w, b.none(), b.int_list({2, 2}), b.int_list({k / 2, k / 2}),
                   b.int_list({1, 1}), b.int_value(1)},
                  DType::F32, {1, 32, 8, 8}));
    delegate_cpu(b, 0, 0);
    return blob_ops(b)[0];
  };
  // 3x3 on RGB: 27 taps per output, under 32: op 18, run as the direct shallow conv.
  EXPECT_EQ(first_op(3, 3), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  // ResNet's 7x7 stem on RGB: 147 taps: op 18 too (the implicit GEMM).
  EXPECT_EQ(first_op(3, 7), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
}

TEST_F(CpuBlobTest, GroupedConvsRunOnTernsConvWithTheirGroups) {
  // RegNet's grouped 3x3 (group width 8): op 18 with C = O = 32 and 4 groups; its packed
  // weight is 4 packed [8, 72] matrices.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 32, 8, 8});
  const int w = b.constant_f32("w", {32, 8, 3, 3}, random_floats(2304, 12, -1.0f, 1.0f));
  b.output(b.op("tern::conv2d",
                {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                 b.int_value(4)},
                DType::F32, {1, 32, 8, 8}));
  delegate_cpu(b, 0, 0);
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode n = blob_node(blob, 0);
  ASSERT_EQ(n.op, static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  EXPECT_EQ(n.params[cpu::kPackedInChannels], 32u);
  EXPECT_EQ(n.params[cpu::kPackedOutChannels], 32u);
  EXPECT_EQ(n.params[cpu::kPackedGroups], 4u);
  std::string message;
  ASSERT_EQ(parse_result(blob, &message), Error::Ok) << message;
  // The recipe packs each group's 8 filters as a [8, 72] matrix of its own (one panel of 16
  // lanes, 16 bias floats then 72 rows): filter OIHW element [o=9, i=2, h=1, w=2] is group 1's
  // row (1 * 3 + 2) * 8 + 2 = 42, lane 1.
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobRecipe r;
  std::memcpy(&r, blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                      h.num_nodes * sizeof(cpu::BlobNode),
              sizeof(r));
  ASSERT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackConv));
  EXPECT_EQ(std::vector<uint32_t>(r.params, r.params + 5),
            (std::vector<uint32_t>{32, 8, 3, 3, 4}));
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r, 4 * 16 * 73, &shape, &why)) << why;
  EXPECT_EQ(shape.out_floats, 4u * 16u * 73u);
  const compiler::Graph g = b.build();
  const auto& wv = g.values[static_cast<size_t>(g.nodes[0].args[1])];
  cpu::RecipeSource src[cpu::kRecipeSources];
  src[0].data = wv.data.data();
  std::vector<float> packed(4 * 16 * 73, -1.0f);
  cpu::run_recipe(r, shape, src, packed.data());
  float want;
  std::memcpy(&want, wv.data.data() + 4 * (((9 * 8 + 2) * 3 + 1) * 3 + 2), 4);
  EXPECT_EQ(packed[16 * 73 + 16 * (1 + 42) + 1], want);
  EXPECT_EQ(packed[16 * 73 + 9], 0.0f);  // lanes past a group's 8 filters are zero
  cpu::BlobRecipe bad = r;
  bad.params[4] = 5;
  EXPECT_FALSE(cpu::recipe_shape(bad, 4 * 16 * 73, &shape, &why));
  EXPECT_STREQ(why, "groups do not divide O");
  // 3 groups do not divide 32 channels.
  n.params[cpu::kPackedGroups] = 3;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("3 groups do not divide 32 input and 32 output channels"),
            std::string::npos)
      << message;
  // 8 groups divide them, but the weight holds 4 groups' panels (4 x 16 x 73 floats), not 8 x 16 x 37.
  n.params[cpu::kPackedGroups] = 8;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("is not [4736] (32 out channels x 3x3x4, 8 groups)"), std::string::npos)
      << message;
}

TEST_F(CpuBlobTest, HardswishFoldsIntoTernsConv) {
  // MobileNetV3's stem: conv 3x3/2 on RGB then hardswish: one op-18 node with activation 1.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 3, 16, 16});
  const int w = b.constant_f32("w", {16, 3, 3, 3}, random_floats(432, 8, -1.0f, 1.0f));
  const int c = b.op("tern::conv2d",
                     {x, w, b.none(), b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_value(1)},
                     DType::F32, {1, 16, 8, 8});
  b.output(b.op("tern::hardswish", {c}, DType::F32, {1, 16, 8, 8}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[cpu::kPackedActivation], 1u);
  n.params[cpu::kPackedActivation] = 8;  // no such activation
  set_blob_node(&blob, 0, n);
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("activation 8"), std::string::npos) << message;
  // The leaky ReLU (7) with a negative slope (its sign bit puts the bits above every
  // parameter's bound), and a slope with another activation.
  n.params[cpu::kPackedActivation] = 7;
  const float negative = -0.1f;
  std::memcpy(&n.params[cpu::kPackedActivationAlpha], &negative, 4);
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("parameter 14 is 3184315597, above"), std::string::npos) << message;
  n.params[cpu::kPackedActivation] = 1;
  n.params[cpu::kPackedActivationAlpha] = 0x3dcccccd;  // 0.1
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("with activation 1, expected 0"), std::string::npos) << message;
}

/// The first node of a one-conv region (x [batch, 16, h, w] -> 3x3 16->16, pad 1) lowered with
/// `options`: its op and, for a Winograd conv, its tile field (else -1).
std::pair<uint32_t, int64_t> first_conv(int64_t batch, int64_t h, int64_t w, int64_t stride,
                                        const std::string& options = "") {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {batch, 16, h, w});
  const int wt = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 9, -1.0f, 1.0f));
  const int64_t oh = (h + 2 - 3) / stride + 1, ow = (w + 2 - 3) / stride + 1;
  b.output(b.op("tern::conv2d",
                {x, wt, b.none(), b.int_list({stride, stride}), b.int_list({1, 1}),
                 b.int_list({1, 1}), b.int_value(1)},
                DType::F32, {batch, 16, oh, ow}));
  delegate_cpu(b, 0, 0, options);
  const std::vector<uint8_t>& blob = b.graph().delegates[0].blob;
  const uint32_t op = cpu_test::blob_ops(blob)[0];
  const bool winograd = op == static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d);
  return {op, winograd ? int64_t{blob_node(blob, 0).params[cpu::kWinogradTile]} : -1};
}

TEST_F(CpuBlobTest, LargeThreeByThreeConvsGoToWinograd) {
  const std::pair<uint32_t, int64_t> f2{static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d),
                                        cpu::kWinogradTileF2x2};
  const std::pair<uint32_t, int64_t> f4{static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d),
                                        cpu::kWinogradTileF4x4};
  const std::pair<uint32_t, int64_t> direct{static_cast<uint32_t>(cpu::NodeOp::PackedConv2d), -1};
  // By default (winograd=f2): 20x20 output, 100 tiles of 2x2: F(2x2, 3x3); 28x28 too.
  EXPECT_EQ(first_conv(1, 20, 20, 1), f2);
  EXPECT_EQ(first_conv(1, 28, 28, 1), f2);
  EXPECT_EQ(first_conv(1, 28, 28, 1, "winograd=f2"), f2);
  // 8x8: 16 tiles of 2x2 (under 32), too few to reuse the transformed weight: the direct conv.
  EXPECT_EQ(first_conv(1, 8, 8, 1), direct);
  // Stride 2: the direct conv.
  EXPECT_EQ(first_conv(1, 40, 40, 2), direct);
  // winograd=f4: F(4x4, 3x3) from 49 tiles of 4x4 covering at most 15 % more than the output.
  const std::string f4_opt = "winograd=f4";
  // 20x20: 25 tiles of 4x4 (under 49): F(2x2, 3x3).
  EXPECT_EQ(first_conv(1, 20, 20, 1, f4_opt), f2);
  // 28x28: 49 tiles covering the output exactly.
  EXPECT_EQ(first_conv(1, 28, 28, 1, f4_opt), f4);
  // 27x27: 49 tiles covering 784 outputs for 729 (7.5 % more).
  EXPECT_EQ(first_conv(1, 27, 27, 1, f4_opt), f4);
  // 29x29: 64 tiles covering 1024 for 841 (22 % more): F(2x2, 3x3).
  EXPECT_EQ(first_conv(1, 29, 29, 1, f4_opt), f2);
  // 14x14 at batch 4: 64 tiles, but 256 outputs computed for 196: F(2x2, 3x3).
  EXPECT_EQ(first_conv(4, 14, 14, 1, f4_opt), f2);
  // 16x16 at batch 4: 64 whole tiles.
  EXPECT_EQ(first_conv(4, 16, 16, 1, f4_opt), f4);
  // 8x8 and stride 2: still the direct conv.
  EXPECT_EQ(first_conv(1, 8, 8, 1, f4_opt), direct);
  EXPECT_EQ(first_conv(1, 40, 40, 2, f4_opt), direct);
  // winograd=off: every conv direct.
  EXPECT_EQ(first_conv(1, 28, 28, 1, "winograd=off"), direct);
  EXPECT_EQ(first_conv(1, 20, 20, 1, "winograd=off"), direct);
}

TEST_F(CpuBlobTest, WinogradTileFieldsAreChecked) {
  // 28x28, 16 -> 16 with winograd=f4: F(4x4, 3x3), its weight 36 matrices of one panel (16
  // bias floats, 16 rows).
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 16, 28, 28});
  const int w = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 9, -1.0f, 1.0f));
  b.output(b.op("tern::conv2d",
                {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                 b.int_value(1)},
                DType::F32, {1, 16, 28, 28}));
  delegate_cpu(b, 0, 0, "winograd=f4");
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  std::string message;
  ASSERT_EQ(parse_result(blob, &message), Error::Ok) << message;
  cpu::BlobNode n = blob_node(blob, 0);
  ASSERT_EQ(n.op, static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d));
  ASSERT_EQ(n.params[cpu::kWinogradTile], cpu::kWinogradTileF4x4);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobValue packed;
  std::memcpy(&packed, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue),
              sizeof(packed));
  EXPECT_EQ(packed.dims[0], 36u * 16u * 17u);
  cpu::BlobRecipe r;
  std::memcpy(&r,
              blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                  h.num_nodes * sizeof(cpu::BlobNode) + packed.recipe * sizeof(cpu::BlobRecipe),
              sizeof(r));
  ASSERT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackWinograd));
  EXPECT_EQ(std::vector<uint32_t>(r.params, r.params + 3), (std::vector<uint32_t>{16, 16, 4}));
  // The recipe: its tile field 4 makes 36 matrices, 0 would make 16; others are refused.
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r, packed.dims[0], &shape, &why)) << why;
  EXPECT_EQ(shape.out_floats, 36u * 16u * 17u);
  cpu::BlobRecipe other = r;
  other.params[2] = cpu::kWinogradTileF2x2;
  ASSERT_TRUE(cpu::recipe_shape(other, 16 * 16 * 17, &shape, &why)) << why;
  EXPECT_EQ(shape.out_floats, 16u * 16u * 17u);
  other.params[2] = 2;
  EXPECT_FALSE(cpu::recipe_shape(other, 36 * 16 * 17, &shape, &why));
  EXPECT_STREQ(why, "tile field not 0 (F(2x2, 3x3)) or 4 (F(4x4, 3x3))");
  // The node: a tile field other than 0 or 4; 0 with the 36-matrix weight.
  n.params[cpu::kWinogradTile] = 3;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("node 0 (packed_winograd_conv2d): tile field 3, expected 0 "
                         "(F(2x2, 3x3)) or 4 (F(4x4, 3x3))"),
            std::string::npos)
      << message;
  n.params[cpu::kWinogradTile] = cpu::kWinogradTileF2x2;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("is not [4352] (16 out channels x 3x3x16, 1 groups)"), std::string::npos)
      << message;
}

TEST_F(CpuBlobTest, UnknownCpuOptionsAreRefusedByName) {
  const compiler::CpuBackendCompiler cpu;
  EXPECT_EQ(cpu.with_options("winograd=f2"), nullptr) << "the defaults: this compiler";
  ASSERT_NE(cpu.with_options("winograd=f4"), nullptr);
  ASSERT_NE(cpu.with_options("winograd=off"), nullptr);
  for (const auto& [options, expect] : std::vector<std::pair<std::string, std::string>>{
           {"fast", "unknown option 'fast' in 'cpu:fast' (options: winograd=f2|f4|off"},
           {"winograd=f6", "unknown value 'f6' of option 'winograd' in 'cpu:winograd=f6'"},
           {"winograd", "unknown value '' of option 'winograd'"},
           {"winograd=f2:threads=4", "unknown option 'threads=4' in 'cpu:winograd=f2:threads=4'"},
       }) {
    try {
      cpu.with_options(options);
      ADD_FAILURE() << options << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
}

TEST_F(CpuBlobTest, ResidualAddAndReluFoldIntoTheConv) {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 16, 8, 8};
  const int x = b.input("x", DType::F32, xs);
  const int w = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 11, -0.3f, 0.3f));
  const int c = b.op("tern::conv2d",
                     {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_value(1)},
                     DType::F32, xs);
  const int s = b.op("tern::add", {x, c}, DType::F32, xs);
  b.output(b.op("tern::relu", {s}, DType::F32, xs));
  delegate_cpu(b, 0, 2);
  const compiler::Graph g = b.build();
  std::vector<uint8_t> blob = g.delegates[0].blob;
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // conv + add + relu in one node
  const size_t node_at = sizeof(h) + h.num_values * sizeof(cpu::BlobValue);
  cpu::BlobNode node;
  std::memcpy(&node, blob.data() + node_at, sizeof(node));
  EXPECT_EQ(node.op, static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  ASSERT_EQ(node.num_inputs, 3u);
  EXPECT_EQ(node.inputs[2], node.inputs[0]);  // the residual is x itself
  EXPECT_EQ(node.fparams[0], 0.0f);
  // A residual pointing at the packed weight is refused: it must not be a constant.
  std::vector<uint8_t> bad = blob;
  const uint32_t weight = node.inputs[1];
  std::memcpy(bad.data() + node_at + offsetof(cpu::BlobNode, inputs) + 8, &weight, 4);
  cpu::BlobPlan plan;
  EXPECT_EQ(cpu::parse_blob(Span<const uint8_t>(bad.data(), bad.size()), &plan),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("must not be a constant"), std::string::npos)
      << last_error_message();
  cpu::free_blob_plan(&plan);
}

TEST_F(CpuBlobTest, BottleneckChainIsOneNode) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = bottleneck_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // 1x1, relu6, dw, relu6, 1x1, add: one node
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.op, static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck));
  ASSERT_EQ(n.num_inputs, 3u);
  EXPECT_EQ(n.inputs[2], n.inputs[0]);  // the residual is x
  EXPECT_EQ(n.params[cpu::kKernelH], 3u);
  EXPECT_EQ(n.params[cpu::kKernelW], 3u);
  EXPECT_EQ(n.params[cpu::kPadTop], 1u);
  EXPECT_EQ(n.params[cpu::kStrideH], 1u);
  EXPECT_EQ(n.params[cpu::kDilationH], 1u);
  EXPECT_EQ(n.params[cpu::kBottleneckInChannels], 16u);
  EXPECT_EQ(n.params[cpu::kBottleneckExpandedChannels], 64u);
  EXPECT_EQ(n.params[cpu::kBottleneckOutChannels], 16u);
  EXPECT_EQ(n.params[cpu::kBottleneckFlags],
            cpu::kBottleneckHasExpand | cpu::kBottleneckHasProject);
  EXPECT_EQ(n.params[cpu::kBottleneckExpandEpilogue],
            static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6));
  EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue],
            static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6));
  cpu::BlobValue w;
  std::memcpy(&w, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue), sizeof(w));
  EXPECT_EQ(w.kind, static_cast<uint32_t>(cpu::ValueKind::Derived));  // made at prepare
  ASSERT_EQ(w.rank, 1u);
  EXPECT_EQ(w.dims[0], cpu::bottleneck_weight_floats(true, true, 16, 64, 16, 3, 3));
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::Ok) << message;
  EXPECT_EQ(try_blob<BottleneckArgs>(blob, h.num_args, &message, &g), Error::Ok) << message;
  // Another model's arguments: prepare refuses them.
  EXPECT_EQ(try_blob(blob, h.num_args, &message, &g), Error::InvalidArgument) << message;
}

}  // namespace
}  // namespace tern::cpu_test
