// Conformance of the leaky ReLU as an epilogue of tern's GEMM and convs (activation 7 with its
// slope in the node, since blob version 27) against the portable kernels (harness:
// cpu_conformance_util.h): DarkNet's conv + leaky ReLU(0.1) on the direct conv (stride 2), the
// Winograd conv (3x3/1) with the residual add after it, a 1x1 conv (the GEMM) and a linear at
// PyTorch's default slope 0.01; a slope above 1 (1.5: still max-free, x > 0 ? x : 1.5x); one the
// node cannot hold (3: XNNPACK's multiply and minimum, as before) and one after a conv3d (no
// slot for a slope there). Then the blob's activation codes and slopes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int leaky(GraphBuilder& b, int x, double slope, const std::vector<int64_t>& s) {
  return b.op("tern::leaky_relu", {x, b.double_value(slope)}, DType::F32, s);
}

/// How many nodes of `blob` carry activation 7 with slope `slope` (ops 17, 18, 19).
size_t leaky_epilogues(const std::vector<uint8_t>& blob, float slope) {
  uint32_t bits = 0;
  std::memcpy(&bits, &slope, 4);
  size_t count = 0;
  const std::vector<uint32_t> ops = blob_ops(blob);
  for (uint32_t k = 0; k < ops.size(); ++k) {
    const cpu::BlobNode n = blob_node(blob, k);
    if (ops[k] == static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)) {
      count += n.params[2] == cpu::kLeakyReluActivation && n.params[cpu::kFcActivationAlpha] == bits;
    } else if (ops[k] == static_cast<uint32_t>(cpu::NodeOp::PackedConv2d) ||
               ops[k] == static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d)) {
      count += n.params[cpu::kPackedActivation] == cpu::kLeakyReluActivation &&
               n.params[cpu::kPackedActivationAlpha] == bits;
    }
  }
  return count;
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase dark = {"darknet_block", [](GraphBuilder& b) {
                   const std::vector<int64_t> s0{1, 8, 36, 40}, s1{1, 32, 18, 20};
                   const int x = b.input("x", DType::F32, s0);
                   // Downsample: 3x3 stride 2 (the direct conv), leaky.
                   const int d = leaky(b, conv(b, x, s0, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 3),
                                       0.1, s1);
                   // Residual block: 1x1 (the GEMM), leaky, 3x3/1 (Winograd), leaky, + d.
                   const int h = leaky(b, conv(b, d, s1, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 5),
                                       0.1, {1, 16, 18, 20});
                   const int y = leaky(b, conv(b, h, {1, 16, 18, 20}, 32, 3, 3, {1, 1}, {1, 1},
                                               {1, 1}, 1, true, 7),
                                       0.1, s1);
                   b.output(b.op("tern::add", {d, y}, DType::F32, s1));
                 }, 1e-10};
  dark.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(leaky_epilogues(blob, 0.1f), 3u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedWinogradConv2d), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Maximum), 0u);
  };
  c.push_back(dark);
  OpCase lin = {"linear_default_slope_and_above_one", [](GraphBuilder& b) {
                  const int x = b.input("x", DType::F32, {96, 64});
                  const int w = constant(b, "w", {40, 64}, 11);
                  const int h = leaky(b, b.op("tern::linear", {x, w, constant(b, "bias", {40}, 12)},
                                              DType::F32, {96, 40}),
                                      0.01, {96, 40});
                  const int w2 = constant(b, "w2", {48, 40}, 13);
                  b.output(leaky(b, b.op("tern::linear", {h, w2, b.none()}, DType::F32, {96, 48}),
                                 1.5, {96, 48}));
                }, 1e-10};
  lin.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(leaky_epilogues(blob, 0.01f), 1u);
    EXPECT_EQ(leaky_epilogues(blob, 1.5f), 1u);
  };
  c.push_back(lin);
  OpCase steep = {"slope_the_node_cannot_hold_stays", [](GraphBuilder& b) {
                    const int x = b.input("x", DType::F32, {20, 48});
                    const int w = constant(b, "w", {32, 48}, 21);
                    b.output(leaky(b, b.op("tern::linear", {x, w, b.none()}, DType::F32, {20, 32}),
                                   3.0, {20, 32}));
                  }, 1e-10};
  steep.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(leaky_epilogues(blob, 3.0f), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Minimum), 1u);
  };
  c.push_back(steep);
  OpCase video = {"after_a_conv3d_stays", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{1, 4, 3, 6, 6};
                    const int x = b.input("x", DType::F32, xs);
                    const int w = constant(b, "w3", {8, 4, 3, 3, 3}, 31);
                    const int y = b.op("tern::conv3d",
                                       {x, w, b.none(), b.int_list({1, 1, 1}),
                                        b.int_list({1, 1, 1}), b.int_list({1, 1, 1}),
                                        b.int_value(1)},
                                       DType::F32, {1, 8, 3, 6, 6});
                    b.output(leaky(b, y, 0.2, {1, 8, 3, 6, 6}));
                  }, 1e-10};
  video.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedConv3d), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Maximum), 1u);
  };
  c.push_back(video);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceLeakyRelu, cases());

}  // namespace
}  // namespace tern::cpu_test
