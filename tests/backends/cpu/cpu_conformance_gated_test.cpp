// Conformance of gated products in the cpu delegate against the portable kernels (harness:
// cpu_conformance_util.h): mul(g, m) where g is made by tern's GEMM (op 17: a linear or a 1x1
// conv) folds into that GEMM as its multiplier (blob version 24, params[3]), applied to each
// finished tile after its clamp and activation. StarNet's block relu6(f1(x)) · f2(x) (the
// relu6 folds into f1 although f2 is lowered between them), a SwiGLU MLP silu(gate(x)) · up(x),
// the operands in either order, a residual before the multiplier, a region input as the gate;
// what must not fold (broadcasting, a GEMM output read twice, a square); and every field of the
// multiplier the reader refuses. Also the square activation (6): pow(y, 2) or y · y of a GEMM
// output read by nothing else (PoolFormerV2's StarReLU).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr double kGemm = 1e-10;
// Products of more than 2^17 multiply-adds: smaller ones run on XNNPACK's fully-connected node.
constexpr uint32_t kFc = static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected);

int relu6(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::hardtanh", {x, b.double_value(0.0), b.double_value(6.0)}, DType::F32, s);
}

int linear(GraphBuilder& b, int x, std::vector<int64_t> out, int64_t in, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {out.back(), in}, seed);
  const int bias = constant(b, "b" + std::to_string(seed), {out.back()}, seed + 1);
  return b.op("tern::linear", {x, w, bias}, DType::F32, std::move(out));
}

/// StarNet's block from x [n, 24, 9, 11]: f1, f2 1x1 convs to 96 channels, relu6(f1) · f2
/// (operands in `f2_first` order), then g back to 24 channels.
void star_block(GraphBuilder& b, bool f2_first) {
  const std::vector<int64_t> xs{2, 24, 9, 11}, hs{2, 96, 9, 11};
  const int x = b.input("x", DType::F32, xs);
  const int f1 = conv(b, x, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 11);
  const int f2 = conv(b, x, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 13);
  const int a = relu6(b, f1, hs);
  const int p = f2_first ? b.op("tern::mul", {f2, a}, DType::F32, hs)
                         : b.op("tern::mul", {a, f2}, DType::F32, hs);
  b.output(conv(b, p, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 15));
}

/// Checks that the region has no Clamp or Multiply node and `gated` GEMMs with a multiplier.
void expect_folded(const std::vector<uint8_t>& blob, size_t gated) {
  EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 0u) << "the product is an epilogue";
  EXPECT_EQ(count_op(blob, cpu::NodeOp::Clamp), 0u) << "the relu6 folds into its GEMM";
  size_t found = 0;
  const std::vector<uint32_t> ops = blob_ops(blob);
  for (uint32_t i = 0; i < ops.size(); ++i) {
    if (ops[i] != kFc) continue;
    const cpu::BlobNode n = blob_node(blob, i);
    if (n.params[cpu::kFcEpilogueFlags] == cpu::kFcMultiplier) ++found;
  }
  EXPECT_EQ(found, gated);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase star{"starnet_block_relu6_times_f2", [](GraphBuilder& b) { star_block(b, false); }, kGemm};
  star.check_blob = [](const std::vector<uint8_t>& blob) {
    expect_folded(blob, 1);
    // f1 (node 0) clamps to [0, 6]; f2 (node 1) reads f1's output as its multiplier.
    const cpu::BlobNode f1 = blob_node(blob, 0), f2 = blob_node(blob, 1);
    ASSERT_EQ(f1.op, kFc);
    ASSERT_EQ(f2.op, kFc);
    EXPECT_EQ(f1.fparams[0], 0.0f);
    EXPECT_EQ(f1.fparams[1], 6.0f);
    EXPECT_EQ(f2.num_inputs, 3u);
    EXPECT_EQ(f2.inputs[2], f1.output);
  };
  c.push_back(star);
  OpCase star2{"starnet_block_f2_times_relu6", [](GraphBuilder& b) { star_block(b, true); },
               kGemm};
  star2.check_blob = [](const std::vector<uint8_t>& blob) { expect_folded(blob, 1); };
  c.push_back(star2);
  // StarNet's whole block: dw 7x7, f1 / f2, relu6(f1) · f2, g, dw 7x7, + x. g and the second
  // depthwise conv are one PackedBottleneck (no project) that adds x after its depthwise stage.
  OpCase full{"starnet_block_with_its_residual",
              [](GraphBuilder& b) {
                const std::vector<int64_t> xs{1, 24, 14, 14}, hs{1, 96, 14, 14};
                const int x = b.input("x", DType::F32, xs);
                const int d = conv(b, x, xs, 24, 7, 7, {1, 1}, {3, 3}, {1, 1}, 24, true, 101);
                const int f1 = conv(b, d, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 103);
                const int f2 = conv(b, d, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 105);
                const int p = b.op("tern::mul", {relu6(b, f1, hs), f2}, DType::F32, hs);
                const int g = conv(b, p, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 107);
                const int d2 = conv(b, g, xs, 24, 7, 7, {1, 1}, {3, 3}, {1, 1}, 24, false, 109);
                b.output(b.op("tern::add", {x, d2}, DType::F32, xs));
              },
              kGemm};
  full.check_blob = [](const std::vector<uint8_t>& blob) {
    expect_folded(blob, 1);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Add), 0u) << "the residual is the bottleneck's";
    const cpu::BlobNode n = blob_node(blob, last_node_of(blob, cpu::NodeOp::PackedBottleneck));
    EXPECT_EQ(n.num_inputs, 3u);
    EXPECT_EQ(n.params[cpu::kBottleneckFlags], cpu::kBottleneckHasExpand);
  };
  c.push_back(full);
  OpCase swiglu{"swiglu_mlp",  // down(silu(gate(x)) · up(x)) over rows of a 3-D x
                [](GraphBuilder& b) {
                  const int x = b.input("x", DType::F32, {2, 7, 64});
                  const int g = linear(b, x, {2, 7, 160}, 64, 21);
                  const int s = b.op("tern::silu", {g}, DType::F32, {2, 7, 160});
                  const int u = linear(b, x, {2, 7, 160}, 64, 23);
                  const int p = b.op("tern::mul", {s, u}, DType::F32, {2, 7, 160});
                  b.output(linear(b, p, {2, 7, 64}, 160, 25));
                },
                kGemm};
  swiglu.check_blob = [](const std::vector<uint8_t>& blob) {
    expect_folded(blob, 1);
    const cpu::BlobNode gate = blob_node(blob, 0);
    EXPECT_EQ(gate.params[2], 4u) << "SiLU in the gate's epilogue";
  };
  c.push_back(swiglu);
  OpCase res{"residual_then_multiplier",  // (linear(h) + r) · m: both fold, in that order
             [](GraphBuilder& b) {
               const int h = b.input("h", DType::F32, {64, 96});
               const int r = b.input("r", DType::F32, {64, 80});
               const int m = b.input("m", DType::F32, {64, 80});
               const int y = linear(b, h, {64, 80}, 96, 31);
               const int s = b.op("tern::add", {y, r}, DType::F32, {64, 80});
               b.output(b.op("tern::mul", {m, s}, DType::F32, {64, 80}));
             },
             kGemm};
  res.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kFc});
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.num_inputs, 4u);
    EXPECT_EQ(n.params[cpu::kFcEpilogueFlags], cpu::kFcMultiplier);
  };
  c.push_back(res);
  OpCase late{"clamp_after_multiplier_stays",  // relu(linear(h) · m): the clamp must not fold
              [](GraphBuilder& b) {
                const int h = b.input("h", DType::F32, {64, 96});
                const int m = b.input("m", DType::F32, {64, 80});
                const int y = linear(b, h, {64, 80}, 96, 41);
                const int p = b.op("tern::mul", {y, m}, DType::F32, {64, 80});
                b.output(b.op("tern::relu", {p}, DType::F32, {64, 80}));
              },
              kGemm};
  late.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Clamp), 1u);
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[cpu::kFcEpilogueFlags], cpu::kFcMultiplier);
    EXPECT_EQ(n.fparams[0], -std::numeric_limits<float>::infinity());
  };
  c.push_back(late);
  OpCase bcast{"broadcast_gate_not_folded",  // linear(h) · m[64, 1]: a real multiply
               [](GraphBuilder& b) {
                 const int h = b.input("h", DType::F32, {64, 96});
                 const int m = b.input("m", DType::F32, {64, 1});
                 const int y = linear(b, h, {64, 80}, 96, 51);
                 b.output(b.op("tern::mul", {y, m}, DType::F32, {64, 80}));
               },
               kGemm};
  bcast.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 1u);
  };
  c.push_back(bcast);
  OpCase twice{"gemm_output_read_twice_not_folded",  // y · m + y
               [](GraphBuilder& b) {
                 const int h = b.input("h", DType::F32, {64, 96});
                 const int m = b.input("m", DType::F32, {64, 80});
                 const int y = linear(b, h, {64, 80}, 96, 61);
                 const int p = b.op("tern::mul", {y, m}, DType::F32, {64, 80});
                 b.output(b.op("tern::add", {p, y}, DType::F32, {64, 80}));
               },
               kGemm};
  twice.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 1u);
  };
  c.push_back(twice);
  OpCase square{"square_of_linear_is_its_activation",  // y · y: activation 6, not a multiplier
                [](GraphBuilder& b) {
                  const int h = b.input("h", DType::F32, {64, 96});
                  const int y = linear(b, h, {64, 80}, 96, 71);
                  b.output(b.op("tern::mul", {y, y}, DType::F32, {64, 80}));
                },
                kGemm};
  square.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kFc});
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[2], 6u) << "the square activation";
    EXPECT_EQ(n.params[cpu::kFcEpilogueFlags], 0u);
  };
  c.push_back(square);
  // PoolFormerV2's StarReLU after the exporter's fold: conv 1x1 -> relu -> pow 2 -> conv 1x1;
  // the relu is fc1's clamp, the square its activation.
  OpCase star_relu{"star_relu_square_after_conv",
                   [](GraphBuilder& b) {
                     const std::vector<int64_t> xs{1, 32, 10, 9}, hs{1, 128, 10, 9};
                     const int x = b.input("x", DType::F32, xs);
                     const int f = conv(b, x, xs, 128, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 81);
                     const int r = b.op("tern::relu", {f}, DType::F32, hs);
                     const int s = b.op("tern::pow", {r, b.double_value(2.0)}, DType::F32, hs);
                     b.output(conv(b, s, hs, 32, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 83));
                   },
                   kGemm};
  star_relu.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Clamp), 0u);
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[2], 6u) << "the square activation";
    EXPECT_EQ(n.fparams[0], 0.0f) << "after the relu's clamp";
  };
  c.push_back(star_relu);
  OpCase shared_square{"square_of_a_shared_output_not_folded",  // y · y + y
                       [](GraphBuilder& b) {
                         const int h = b.input("h", DType::F32, {64, 96});
                         const int y = linear(b, h, {64, 80}, 96, 91);
                         const int s = b.op("tern::mul", {y, y}, DType::F32, {64, 80});
                         b.output(b.op("tern::add", {s, y}, DType::F32, {64, 80}));
                       },
                       kGemm};
  shared_square.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 1u);
  };
  c.push_back(shared_square);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuGatedConformance, cases());

/// The StarNet block's blob, for the reader tests.
std::vector<uint8_t> star_blob() {
  GraphBuilder b;
  star_block(b, false);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates.at(0).blob;
}

TEST(CpuGatedBlob, MultiplierFieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = star_blob();
  const cpu::BlobNode f1 = blob_node(blob, 0);
  const uint32_t residual_sized = f1.output;  // the output's dims too: a legal 4th input
  expect_refused(
      blob, 1,
      {
          // Flag 2 (the affine, since version 28) reads the last input as a constant.
          {"epilogue flags 2", [](cpu::BlobNode& n) { n.params[cpu::kFcEpilogueFlags] = 2; },
           "input 2 (value"},
          {"epilogue flags 3", [](cpu::BlobNode& n) { n.params[cpu::kFcEpilogueFlags] = 3; },
           "epilogue flags 3 with 3 inputs"},
          {"four inputs without the flag",
           [&](cpu::BlobNode& n) {
             n.params[cpu::kFcEpilogueFlags] = 0;
             n.inputs[3] = residual_sized;
             n.num_inputs = 4;
           },
           "epilogue flags 0 with 4 inputs"},
          {"the flag without a multiplier input",
           [](cpu::BlobNode& n) {
             n.inputs[2] = cpu::kNoValue;
             n.num_inputs = 2;
           },
           "epilogue flags 1 with 2 inputs"},
          {"a multiplier of other dims (x)", [](cpu::BlobNode& n) { n.inputs[2] = n.inputs[0]; },
           "multiplier value"},
          {"the weight as the multiplier", [](cpu::BlobNode& n) { n.inputs[2] = n.inputs[1]; },
           "must not be a constant"},
      });
}

}  // namespace
}  // namespace tern::cpu_test
