// Conformance of the cpu (XNNPACK) backend against the portable kernels: every op the backend
// claims runs as a delegate and as its portable fallback on the same random inputs; outputs
// compare by NMSE under a per-op threshold, are finite, and (driving the backend interface
// directly) nothing is written past an output or into an input (guard bytes). The harness is
// cpu_conformance_util.h; SiLU, sigmoid and squeeze-excitation cases are in
// cpu_conformance_se_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  const double kConv = 1e-9, kEltwise = 1e-12, kTranscendental = 1e-9;
  // ---- conv2d ----
  c.push_back({"conv3x3_pad1_bias",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 12, 12});
                 b.output(conv(b, x, {1, 8, 12, 12}, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 1));
               },
               kConv});
  c.push_back({"conv_stride_pad_dilation_nobias",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 4, 11, 9});
                 b.output(conv(b, x, {2, 4, 11, 9}, 6, 3, 3, {2, 1}, {1, 2}, {2, 1}, 1, false, 3));
               },
               kConv});
  c.push_back({"conv_grouped",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 7, 7});
                 b.output(conv(b, x, {1, 8, 7, 7}, 12, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, true, 5));
               },
               kConv});
  c.push_back({"conv_depthwise",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 10, 10});
                 b.output(conv(b, x, {1, 8, 10, 10}, 8, 3, 3, {2, 2}, {1, 1}, {1, 1}, 8, true, 7));
               },
               kConv});
  c.push_back({"conv_depthwise_multiplier2",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 9, 9});
                 b.output(conv(b, x, {1, 4, 9, 9}, 8, 5, 5, {1, 1}, {2, 2}, {1, 1}, 4, false, 9));
               },
               kConv});
  // FastViT's patch embedding: 6 channels to 12 by a 7x7 and a 3x3 stride-2 depthwise conv of
  // multiplier 2, summed. x is copied once with each channel repeated twice (one StridedCopy
  // both convs read); the 7x7 (more than XNNPACK's 25 taps) runs on tern's depthwise kernel
  // (a PackedBottleneck with neither expand nor project), the 3x3 on XNNPACK's of multiplier 1.
  OpCase pe = {"conv_depthwise_multiplier2_fastvit_patch_embed",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 6, 17, 16};
                 const int x = b.input("x", DType::F32, xs);
                 const int l = conv(b, x, xs, 12, 7, 7, {2, 2}, {3, 3}, {1, 1}, 6, true, 15);
                 const int m = conv(b, x, xs, 12, 3, 3, {2, 2}, {1, 1}, {1, 1}, 6, true, 17);
                 b.output(b.op("tern::add", {l, m}, DType::F32, {2, 12, 9, 8}));
               },
               kConv};
  pe.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 1u) << "one repeat of x, shared";
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedBottleneck), 1u) << "the 7x7 on tern's kernel";
    ASSERT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 1u) << "the 3x3 on XNNPACK's";
    const cpu::BlobNode n = blob_node(blob, last_node_of(blob, cpu::NodeOp::DepthwiseConv2d));
    EXPECT_EQ(n.params[cpu::kGroups], 1u) << "multiplier 1 over the repeated channels";
    EXPECT_EQ(n.params[cpu::kGroupInChannels], 12u);
  };
  c.push_back(pe);
  // A small 7x7 depthwise conv (ConvNeXt's last stage at a small input): tern's kernel too.
  OpCase wide = {"conv_depthwise_7x7_small_output",
                 [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{1, 20, 7, 7};
                   const int x = b.input("x", DType::F32, xs);
                   b.output(conv(b, x, xs, 20, 7, 7, {1, 1}, {3, 3}, {1, 1}, 20, true, 19));
                 },
                 kConv};
  wide.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedBottleneck), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 0u);
  };
  c.push_back(wide);
  c.push_back({"conv1x1",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 16, 7, 7});
                 b.output(conv(b, x, {1, 16, 7, 7}, 32, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 11));
               },
               kConv});
  c.push_back({"conv_one_value_lists",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 9, 9});
                 const int w = constant(b, "w", {5, 3, 3, 3}, 13);
                 b.output(b.op("tern::conv2d",
                               {x, w, b.none(), b.int_list({2}), b.int_list({1}), b.int_list({1}),
                                b.int_value(1)},
                               DType::F32, {1, 5, 5, 5}));
               },
               kConv});
  // ---- linear ----
  c.push_back({"linear_2d_bias",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 32});
                 const int w = constant(b, "w", {10, 32}, 21), bias = constant(b, "b", {10}, 22);
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {4, 10}));
               },
               kConv});
  c.push_back({"linear_3d_nobias",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 16});
                 const int w = constant(b, "w", {8, 16}, 23);
                 b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 3, 8}));
               },
               kConv});
  // tern's own GEMM (PackedFullyConnected) between XNNPACK stages.
  c.push_back({"linear_gemv_edge_columns",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 700});
                 const int w = constant(b, "w", {270, 700}, 24), bias = constant(b, "b", {270}, 25);
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {1, 270}));
               },
               kConv});
  c.push_back({"linear_many_rows",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 70, 64});
                 const int w = constant(b, "w", {48, 64}, 26), bias = constant(b, "b", {48}, 27);
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {2, 70, 48}));
               },
               kConv});
  c.push_back({"linear_relu_linear_hardtanh",  // both clamps fold into the GEMMs
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 400});
                 const int w1 = constant(b, "w1", {330, 400}, 28), b1 = constant(b, "b1", {330}, 29);
                 const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {3, 330});
                 const int r = b.op("tern::relu", {h}, DType::F32, {3, 330});
                 const int w2 = constant(b, "w2", {170, 330}, 30);
                 const int y = b.op("tern::linear", {r, w2, b.none()}, DType::F32, {3, 170});
                 b.output(b.op("tern::hardtanh", {y, b.double_value(-0.1), b.double_value(0.1)},
                               DType::F32, {3, 170}));
               },
               kConv});
  // leaky_relu: max(x, slope·x) after a conv (YOLO's 0.1, TResNet's 0.001) and a linear, a
  // slope of 0 (a relu) and one above 1 (min(x, slope·x)).
  OpCase leaky = {"leaky_relu_slopes",
                  [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{1, 3, 6, 6}, ys{1, 8, 6, 6};
                    const int x = b.input("x", DType::F32, xs);
                    const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 35);
                    const int l = b.op("tern::leaky_relu", {y, b.double_value(0.1)}, DType::F32,
                                       ys);
                    const int z = conv(b, l, ys, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 37);
                    b.output(b.op("tern::leaky_relu", {z, b.double_value(0.001)}, DType::F32,
                                  {1, 4, 6, 6}));
                    const int v = b.input("v", DType::F32, {5, 12});
                    const int w = constant(b, "lw", {7, 12}, 39);
                    const int h = b.op("tern::linear", {v, w, b.none()}, DType::F32, {5, 7});
                    for (double slope : {0.0, 2.5}) {
                      b.output(b.op("tern::leaky_relu", {h, b.double_value(slope)}, DType::F32,
                                    {5, 7}));
                    }
                  },
                  1e-12};
  leaky.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    auto count = [&ops](cpu::NodeOp op) {
      return std::count(ops.begin(), ops.end(), static_cast<uint32_t>(op));
    };
    // The first is the direct conv's epilogue (activation 7, blob version 27); the tiny 1x1
    // conv's and the linear's stay XNNPACK's multiply and maximum.
    EXPECT_EQ(count(cpu::NodeOp::Maximum), 2);
    EXPECT_EQ(count(cpu::NodeOp::Minimum), 1);
  };
  c.push_back(leaky);
  c.push_back({"linear_output_also_read",  // an fc output that leaves and feeds a clamp
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 240});
                 const int w = constant(b, "w", {200, 240}, 31);
                 const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {5, 200});
                 b.output(h);
                 b.output(b.op("tern::relu", {h}, DType::F32, {5, 200}));
               },
               kConv});
  c.push_back({"pointwise_convs_on_own_gemm",  // 1x1 convs run as GEMMs over NHWC pixels
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 32, 10, 12};
                 const int x = b.input("x", DType::F32, xs);
                 const int p1 = conv(b, x, xs, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 37);
                 const int r = b.op("tern::relu", {p1}, DType::F32, {2, 40, 10, 12});
                 const int c3 =
                     conv(b, r, {2, 40, 10, 12}, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, 39);
                 b.output(conv(b, c3, xs, 48, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 40));
               },
               kConv});
  c.push_back({"basic_block_residual_fused",  // relu(conv(relu(conv(x))) + x): add + relu fold
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 32, 12, 12};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 43);
                 const int r1 = b.op("tern::relu", {c1}, DType::F32, xs);
                 const int c2 = conv(b, r1, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 44);
                 const int s = b.op("tern::add", {c2, x}, DType::F32, xs);
                 b.output(b.op("tern::relu", {s}, DType::F32, xs));
               },
               kConv});
  c.push_back({"residual_first_operand_and_downsample",  // add(identity, conv), strided 1x1
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 16, 10, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int d = conv(b, x, xs, 32, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false, 45);
                 const int c1 = conv(b, x, xs, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 46);
                 b.output(b.op("tern::add", {d, c1}, DType::F32, {2, 32, 5, 5}));
               },
               kConv});
  c.push_back({"squeeze_excitation_hardsigmoid_folds",  // MobileNetV3's SE block, tiny convs
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 5, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int m = b.op("tern::mean", {x, b.int_list({-1, -2}), b.bool_value(true)},
                                    DType::F32, {1, 16, 1, 1});
                 const int f1 = conv(b, m, {1, 16, 1, 1}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                     true, 48);
                 const int r = b.op("tern::relu", {f1}, DType::F32, {1, 8, 1, 1});
                 // No bias: the fold adds one (1/2).
                 const int f2 = conv(b, r, {1, 8, 1, 1}, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                     false, 50);
                 const int s = b.op("tern::hardsigmoid", {f2}, DType::F32, {1, 16, 1, 1});
                 b.output(b.op("tern::mul", {x, s}, DType::F32, xs));
               },
               kConv});
  c.push_back({"hardsigmoid_folds_into_tiny_linear_with_bias",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 24});
                 const int w = constant(b, "w", {40, 24}, 51, 4.0f);  // saturates both ends
                 const int bias = constant(b, "b", {40}, 52, 3.0f);
                 const int y = b.op("tern::linear", {x, w, bias}, DType::F32, {2, 40});
                 b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {2, 40}));
               },
               kConv});
  c.push_back({"hardsigmoid_folds_into_packed_linear_and_conv",  // tern's GEMM and conv
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {70, 64});
                 const int w = constant(b, "w", {37, 64}, 53, 2.0f);
                 const int bias = constant(b, "b", {37}, 54, 3.0f);
                 const int y = b.op("tern::linear", {x, w, bias}, DType::F32, {70, 37});
                 b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {70, 37}));
                 const std::vector<int64_t> xs{1, 8, 10, 10};
                 const int xi = b.input("xi", DType::F32, xs);
                 const int c3 = conv(b, xi, xs, 33, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 55);
                 b.output(b.op("tern::hardsigmoid", {c3}, DType::F32, {1, 33, 10, 10}));
               },
               kConv});
  // ---- Winograd F(2x2,3x3): 3x3 stride-1 convs with >= 100 output tiles ----
  c.push_back({"winograd_conv_relu_odd_width",  // 10 x 11 tiles, the last column half
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 20, 21};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 57);
                 b.output(b.op("tern::relu", {c1}, DType::F32, {1, 24, 20, 21}));
               },
               kConv});
  c.push_back({"winograd_no_padding_no_bias",  // 21 x 21 output: 11 x 11 tiles
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 17, 23, 23};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(conv(b, x, xs, 33, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, false, 59));
               },
               kConv});
  c.push_back({"winograd_basic_block_residual",  // relu(conv(relu(conv(x))) + x), batch 2
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 16, 15, 15};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 60);
                 const int r1 = b.op("tern::relu", {c1}, DType::F32, xs);
                 const int c2 = conv(b, r1, xs, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 61);
                 const int s = b.op("tern::add", {c2, x}, DType::F32, xs);
                 b.output(b.op("tern::relu", {s}, DType::F32, xs));
               },
               kConv});
  // ---- Winograd F(4x4,3x3) (cpu:winograd=f4): 49 or more 4x4 tiles covering at most 15 % more
  // than the output ----
  // Every PackedWinogradConv2d of the blob carries `tile` (cpu_blob_format.h's tile field).
  const auto winograd_tiles = [](uint32_t tile, size_t convs) {
    return [tile, convs](const std::vector<uint8_t>& blob) {
      ASSERT_EQ(count_op(blob, cpu::NodeOp::PackedWinogradConv2d), convs);
      const std::vector<uint32_t> ops = cpu_test::blob_ops(blob);
      for (uint32_t k = 0; k < ops.size(); ++k) {
        if (ops[k] != static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d)) continue;
        EXPECT_EQ(blob_node(blob, k).params[cpu::kWinogradTile], tile) << "node " << k;
      }
    };
  };
  OpCase f43_partial{"winograd_f43_partial_tiles",  // 27 x 27 output: 7 x 7 tiles, the last 3 wide
                     [](GraphBuilder& b) {
                       const std::vector<int64_t> xs{1, 19, 27, 27};
                       const int x = b.input("x", DType::F32, xs);
                       const int c1 = conv(b, x, xs, 21, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 90);
                       b.output(b.op("tern::relu", {c1}, DType::F32, {1, 21, 27, 27}));
                     },
                     kConv};
  f43_partial.check_blob = winograd_tiles(cpu::kWinogradTileF4x4, 1);
  f43_partial.cpu_options = "winograd=f4";
  c.push_back(f43_partial);
  OpCase f43_block{"winograd_f43_basic_block_residual",  // batch 2 at 28 x 28: 98 tiles
                   [](GraphBuilder& b) {
                     const std::vector<int64_t> xs{2, 16, 28, 28};
                     const int x = b.input("x", DType::F32, xs);
                     const int c1 = conv(b, x, xs, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 91);
                     const int r1 = b.op("tern::relu", {c1}, DType::F32, xs);
                     const int c2 = conv(b, r1, xs, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 92);
                     const int s = b.op("tern::add", {c2, x}, DType::F32, xs);
                     b.output(b.op("tern::relu", {s}, DType::F32, xs));
                   },
                   kConv};
  f43_block.check_blob = winograd_tiles(cpu::kWinogradTileF4x4, 2);
  f43_block.cpu_options = "winograd=f4";
  c.push_back(f43_block);
  OpCase f43_no_pad{"winograd_f43_no_padding_no_bias",  // 30 x 31 output: 8 x 8 tiles
                    [](GraphBuilder& b) {
                      const std::vector<int64_t> xs{1, 24, 32, 33};
                      const int x = b.input("x", DType::F32, xs);
                      b.output(conv(b, x, xs, 40, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, false, 93));
                    },
                    kConv};
  f43_no_pad.check_blob = winograd_tiles(cpu::kWinogradTileF4x4, 1);
  f43_no_pad.cpu_options = "winograd=f4";
  c.push_back(f43_no_pad);
  // The same 28x28 block by default: F(2x2, 3x3) (F(4x4) is opt-in).
  OpCase f43_default{"winograd_default_stays_f2_at_28x28",
                     [](GraphBuilder& b) {
                       const std::vector<int64_t> xs{1, 16, 28, 28};
                       const int x = b.input("x", DType::F32, xs);
                       b.output(conv(b, x, xs, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 94));
                     },
                     kConv};
  f43_default.check_blob = winograd_tiles(cpu::kWinogradTileF2x2, 1);
  c.push_back(f43_default);
  c.push_back({"mlp_gelu_erf_folds_into_gemm",  // linear -> gelu (the GEMM's epilogue) -> linear
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {40, 64});
                 const int w1 = constant(b, "w1", {600, 64}, 62, 2.0f);  // gelu's tails too
                 const int b1 = constant(b, "b1", {600}, 63);
                 const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {40, 600});
                 const int a = b.op("tern::gelu", {h}, DType::F32, {40, 600});
                 const int w2 = constant(b, "w2", {48, 600}, 64);
                 b.output(b.op("tern::linear", {a, w2, b.none()}, DType::F32, {40, 48}));
               },
               kConv});
  c.push_back({"gelu_tanh_folds_into_gemm",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 37, 50});
                 const int w = constant(b, "w", {70, 50}, 65, 3.0f);
                 const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {3, 37, 70});
                 b.output(b.op("tern::gelu", {h, b.string_value("tanh")}, DType::F32,
                               {3, 37, 70}));
               },
               kConv});
  c.push_back({"inverted_residual_add_folds_into_gemm",  // MobileNetV2: expand, dw, project + x
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 14, 14}, hs{1, 144, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 144, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 66);
                 const int r1 = b.op("tern::hardtanh", {e, b.double_value(0.0),
                                                        b.double_value(6.0)}, DType::F32, hs);
                 const int d = conv(b, r1, hs, 144, 3, 3, {1, 1}, {1, 1}, {1, 1}, 144, true, 67);
                 const int r2 = b.op("tern::hardtanh", {d, b.double_value(0.0),
                                                        b.double_value(6.0)}, DType::F32, hs);
                 const int p = conv(b, r2, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 68);
                 b.output(b.op("tern::add", {x, p}, DType::F32, xs));
               },
               kConv});
  c.push_back({"transformer_residual_folds_into_linear",  // x + linear(h), rows of 3-D
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 50, 64});
                 const int h = b.input("h", DType::F32, {1, 50, 96});
                 const int w = constant(b, "w", {64, 96}, 69), bias = constant(b, "b", {64}, 70);
                 const int y = b.op("tern::linear", {h, w, bias}, DType::F32, {1, 50, 64});
                 b.output(b.op("tern::add", {y, x}, DType::F32, {1, 50, 64}));
               },
               kConv});
  c.push_back({"broadcast_add_after_linear_not_folded",  // [50, 1] + [50, 64]: a real add
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {50, 64});
                 const int h = b.input("h", DType::F32, {50, 4000});
                 const int w = constant(b, "w", {1, 4000}, 71);
                 const int y = b.op("tern::linear", {h, w, b.none()}, DType::F32, {50, 1});
                 b.output(b.op("tern::add", {y, x}, DType::F32, {50, 64}));
               },
               kConv});
  c.push_back({"gelu_after_tiny_linear_on_own_kernel",  // XNNPACK's fc, then op 20 on the pool
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 24});
                 const int w = constant(b, "w", {40, 24}, 72, 3.0f);
                 const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 40});
                 b.output(b.op("tern::gelu", {h}, DType::F32, {2, 40}));
               },
               kConv});
  c.push_back({"expand_conv_hardswish_folds_into_gemm",  // MobileNetV3's expand 1x1 conv
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 73);
                 b.output(b.op("tern::hardswish", {e}, DType::F32, {1, 96, 14, 14}));
               },
               kConv});
  c.push_back({"clamp_after_folded_hardswish_stays_after",  // clamp(hardswish(x)), not reversed
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 74);
                 const int h = b.op("tern::hardswish", {e}, DType::F32, {1, 40, 14, 14});
                 b.output(b.op("tern::hardtanh", {h, b.double_value(-0.2), b.double_value(0.5)},
                               DType::F32, {1, 40, 14, 14}));
               },
               kConv});
  c.push_back({"shallow_stem_conv_relu6_wide",  // MobileNetV2's stem: tern's direct conv
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 33, 35}, ys{1, 32, 17, 18};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 57);
                 b.output(stage_act(b, "relu6", c1, ys));
               },
               kConv});
  c.push_back({"shallow_stem_conv_hardswish",  // 3x3/2 on RGB: 27 taps, tern's direct conv
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 17, 17};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 56);
                 b.output(b.op("tern::hardswish", {c1}, DType::F32, {1, 16, 9, 9}));
               },
               kConv});
  c.push_back({"conv_output_also_read_not_fused",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 9, 9};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 47);
                 b.output(b.op("tern::add", {c1, x}, DType::F32, xs));
                 b.output(b.op("tern::sigmoid", {c1}, DType::F32, xs));
               },
               kConv});
  c.push_back({"tiny_pointwise_conv_and_linear_stay_in_xnnpack",  // an SE block's shapes
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 1, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 41);
                 const int r = b.op("tern::relu", {c1}, DType::F32, {1, 8, 1, 1});
                 b.output(conv(b, r, {1, 8, 1, 1}, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 42));
               },
               kConv});
  // A tiny linear of depth 6 (not a multiple of 4) and 40 outputs: XNNPACK's fully-connected
  // node returns wrong columns past the first 16 for it on a multi-thread pool on some x86
  // hosts (region_lowering_internal.h, xnn_fc_is_exact), so it runs on tern's own GEMM; depth 8
  // stays.
  OpCase odd_depth{"tiny_linear_of_odd_depth_on_tern_gemm",
                   [](GraphBuilder& b) {
                     const int x = b.input("x", DType::F32, {2, 6});
                     const int w = constant(b, "w", {40, 6}, 61), bias = constant(b, "b", {40}, 62);
                     const int h = b.op("tern::linear", {x, w, bias}, DType::F32, {2, 40});
                     const int w2 = constant(b, "w2", {24, 40}, 63);
                     b.output(b.op("tern::linear", {h, w2, b.none()}, DType::F32, {2, 24}));
                   },
                   kConv};
  odd_depth.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
    EXPECT_EQ(ops[1], static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  };
  c.push_back(odd_depth);
  c.push_back({"conv_pool_linear_softmax",  // own conv -> XNNPACK; fc 6->40 on tern's GEMM (depth 6)
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 3, 8, 8};
                 const int x = b.input("x", DType::F32, xs);
                 const int c1 = conv(b, x, xs, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 32);
                 const int p = b.op("tern::adaptive_avg_pool2d", {c1, b.int_list({1})}, DType::F32,
                                    {2, 6, 1, 1});
                 const int f = b.op("tern::flatten", {p, b.int_value(1), b.int_value(-1)},
                                    DType::F32, {2, 6});
                 const int w1 = constant(b, "w1", {40, 6}, 34), b1 = constant(b, "b1", {40}, 35);
                 const int h = b.op("tern::linear", {f, w1, b1}, DType::F32, {2, 40});
                 const int s = b.op("tern::sigmoid", {h}, DType::F32, {2, 40});
                 const int w2 = constant(b, "w2", {9, 40}, 36);
                 const int y = b.op("tern::linear", {s, w2, b.none()}, DType::F32, {2, 9});
                 b.output(b.op("tern::softmax", {y, b.int_value(-1)}, DType::F32, {2, 9}));
               },
               kConv});
  // ---- PackedBottleneck (op 21): tern's fused inverted bottleneck ----
  c.push_back({"bottleneck_v2_residual",  // 1x1 16->64 + relu6, dw 3x3 + relu6, 1x1 64->16, + x
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 12, 12}, hs{1, 64, 12, 12};
                 const int x = b.input("x", DType::F32, xs);
                 // A large expand weight: many expanded values pass 6 (relu6, not relu).
                 const int we = constant(b, "we", {64, 16, 1, 1}, 101, 2.0f);
                 const int e = b.op("tern::conv2d",
                                    {x, we, constant(b, "be", {64}, 102), b.int_list({1, 1}),
                                     b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                                    DType::F32, hs);
                 const int r1 = stage_act(b, "relu6", e, hs);
                 const int d = conv(b, r1, hs, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 64, true, 103);
                 const int r2 = stage_act(b, "relu6", d, hs);
                 const int p = conv(b, r2, hs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 105);
                 b.output(b.op("tern::add", {p, x}, DType::F32, xs));
               },
               kConv, true});
  c.push_back({"bottleneck_stride2_odd_no_residual",  // 15x13 -> 8x7, relu stages
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 15, 13}, hs{1, 40, 15, 13},
                     ds{1, 40, 8, 7};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 107);
                 const int r1 = stage_act(b, "relu", e, hs);
                 const int d = conv(b, r1, hs, 40, 3, 3, {2, 2}, {1, 1}, {1, 1}, 40, true, 109);
                 const int r2 = stage_act(b, "relu", d, ds);
                 b.output(conv(b, r2, ds, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 111));
               },
               kConv, true});
  c.push_back({"bottleneck_v3_no_project_feeds_se",  // dw output read twice: no project folds
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 11, 11}, hs{1, 72, 11, 11},
                     ps{1, 72, 1, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 72, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 113);
                 const int r1 = stage_act(b, "hardswish", e, hs);
                 const int d = conv(b, r1, hs, 72, 5, 5, {1, 1}, {2, 2}, {1, 1}, 72, true, 115);
                 const int h = stage_act(b, "hardswish", d, hs);
                 const int m = b.op("tern::mean", {h, b.int_list({-1, -2}), b.bool_value(true)},
                                    DType::F32, ps);
                 const int s1 = conv(b, m, ps, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 117);
                 const int s2 = b.op("tern::relu", {s1}, DType::F32, {1, 24, 1, 1});
                 const int s3 =
                     conv(b, s2, {1, 24, 1, 1}, 72, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 119);
                 const int s4 = b.op("tern::hardsigmoid", {s3}, DType::F32, ps);
                 const int y = b.op("tern::mul", {h, s4}, DType::F32, hs);
                 b.output(conv(b, y, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 121));
               },
               kConv, true});
  c.push_back({"bottleneck_no_expand_relu6_project",  // MobileNetV2's first block: dw, 1x1
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 32, 12, 12};
                 const int x = b.input("x", DType::F32, xs);
                 const int d = conv(b, x, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 32, true, 123);
                 const int r = stage_act(b, "relu6", d, xs);
                 b.output(conv(b, r, xs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 125));
               },
               kConv, true});
  c.push_back({"bottleneck_lone_large_depthwise",  // MobileNetV3's first block: dw alone
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 130, 129}, ys{1, 16, 65, 65};
                 const int x = b.input("x", DType::F32, xs);
                 const int d = conv(b, x, xs, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 16, true, 139);
                 b.output(stage_act(b, "relu", d, ys));
               },
               kConv, true});
  c.push_back({"bottleneck_batch2_residual_first",  // batch 2, odd 11x9, add(x, project)
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 24, 11, 9}, hs{2, 96, 11, 9};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 127);
                 const int r1 = stage_act(b, "relu6", e, hs);
                 const int d = conv(b, r1, hs, 96, 3, 3, {1, 1}, {1, 1}, {1, 1}, 96, true, 129);
                 const int r2 = stage_act(b, "relu6", d, hs);
                 const int p = conv(b, r2, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 131);
                 b.output(b.op("tern::add", {x, p}, DType::F32, xs));
               },
               kConv, true});
  // A relu after the project (ShuffleNet's branch: 1x1 + relu, dw, 1x1 + relu), with and without
  // a residual before it: the clamp folds into the bottleneck's output bounds, no Clamp node.
  const auto one_node_no_clamp = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck));
  };
  c.push_back({"bottleneck_project_relu",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 10, 10}, hs{1, 24, 10, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 141);
                 const int r1 = stage_act(b, "relu", e, hs);
                 const int d = conv(b, r1, hs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 24, true, 143);
                 const int p = conv(b, d, hs, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 145);
                 b.output(stage_act(b, "relu", p, xs));
               },
               kConv, true, one_node_no_clamp});
  c.push_back({"bottleneck_residual_relu6",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 9, 11}, hs{1, 48, 9, 11};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 48, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 147);
                 const int r1 = stage_act(b, "relu6", e, hs);
                 const int d = conv(b, r1, hs, 48, 3, 3, {1, 1}, {1, 1}, {1, 1}, 48, true, 149);
                 // A large project weight: many outputs pass 6 and below 0 (the clamp matters).
                 const int wp = constant(b, "wp", {16, 48, 1, 1}, 151, 3.0f);
                 const int p = b.op("tern::conv2d",
                                    {d, wp, constant(b, "bp", {16}, 152), b.int_list({1, 1}),
                                     b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                                    DType::F32, xs);
                 const int a = b.op("tern::add", {p, x}, DType::F32, xs);
                 b.output(stage_act(b, "relu6", a, xs));
               },
               kConv, true, one_node_no_clamp});
  c.push_back({"bottleneck_no_activations_no_bias",  // epilogue code 0 in both stages
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 9, 10}, hs{1, 48, 9, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 48, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 133);
                 const int d = conv(b, e, hs, 48, 3, 3, {1, 1}, {1, 1}, {1, 1}, 48, false, 135);
                 b.output(conv(b, d, hs, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 137));
               },
               kConv, true});
  c.push_back({"bottleneck_depthwise_output_is_graph_output",  // no fusing past it
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 10, 10}, hs{1, 64, 10, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 139);
                 const int r1 = stage_act(b, "relu6", e, hs);
                 const int d = conv(b, r1, hs, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 64, true, 141);
                 b.output(d);  // read by the relu6 and leaving the graph
                 const int r2 = stage_act(b, "relu6", d, hs);
                 const int p = conv(b, r2, hs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 143);
                 b.output(b.op("tern::add", {p, x}, DType::F32, xs));
               },
               kConv});
  c.push_back({"bottleneck_activated_output_is_graph_output",  // the project stays apart
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 10, 10}, hs{1, 64, 10, 10};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 145);
                 const int r1 = stage_act(b, "hardswish", e, hs);
                 const int d = conv(b, r1, hs, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 64, true, 147);
                 const int r2 = stage_act(b, "relu", d, hs);
                 b.output(r2);
                 b.output(conv(b, r2, hs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 149));
               },
               kConv});
  // ---- binary ----
  c.push_back({"add_4d_same",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4, 5});
                 const int y = b.input("y", DType::F32, {2, 3, 4, 5});
                 b.output(b.op("tern::add", {x, y}, DType::F32, {2, 3, 4, 5}));
               },
               kEltwise});
  c.push_back({"add_4d_channel_constant",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 6, 4, 5});
                 const int k = constant(b, "k", {6, 1, 1}, 31);
                 b.output(b.op("tern::add", {x, k}, DType::F32, {2, 6, 4, 5}));
               },
               kEltwise});
  c.push_back({"add_scalar_alpha",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 7});
                 b.output(b.op("tern::add", {x, b.double_value(1.5), b.double_value(-2.0)},
                               DType::F32, {3, 7}));
               },
               kEltwise});
  c.push_back({"sub_constant_alpha",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 3, 3});
                 const int k = constant(b, "k", {1, 4, 3, 3}, 32);
                 b.output(b.op("tern::sub", {x, k, b.int_value(3)}, DType::F32, {1, 4, 3, 3}));
               },
               kEltwise});
  c.push_back({"sub_constant_first",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 9});
                 const int k = constant(b, "k", {9}, 33);
                 b.output(b.op("tern::sub", {k, x}, DType::F32, {2, 9}));
               },
               kEltwise});
  c.push_back({"mul_4d_broadcast_activation",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 8, 5, 5});
                 const int s = b.input("s", DType::F32, {2, 8, 1, 1});
                 b.output(b.op("tern::mul", {x, s}, DType::F32, {2, 8, 5, 5}));
               },
               kEltwise});
  c.push_back({"mul_2d_row_broadcast",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 8});
                 const int y = b.input("y", DType::F32, {8});
                 b.output(b.op("tern::mul", {x, y}, DType::F32, {4, 8}));
               },
               kEltwise});
  c.push_back({"div_constant",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 4, 4});
                 const int k = b.constant_f32("k", {1, 3, 1, 1}, {0.5f, -2.0f, 4.0f});
                 b.output(b.op("tern::div", {x, k, b.none()}, DType::F32, {1, 3, 4, 4}));
               },
               1e-12});
  // A 0-D constant divisor (DeBERTa's scores / sqrt(d * factor) as a tensor), on an NHWC
  // activation and on a plain one.
  c.push_back({"div_by_0d_constant",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 4, 4});
                 const int k = b.constant_f32("k", {}, {2.5f});
                 b.output(b.op("tern::div", {x, k, b.none()}, DType::F32, {1, 3, 4, 4}));
                 const int y = b.input("y", DType::F32, {2, 4, 6});
                 b.output(b.op("tern::mul", {y, k}, DType::F32, {2, 4, 6}));
                 // ... and on the left: DiffLlama's λ times an attention map, k - y, k / y.
                 b.output(b.op("tern::mul", {k, y}, DType::F32, {2, 4, 6}));
                 b.output(b.op("tern::sub", {k, x}, DType::F32, {1, 3, 4, 4}));
                 b.output(b.op("tern::div", {k, y, b.none()}, DType::F32, {2, 4, 6}));
               },
               1e-12});
  c.push_back({"div_scalar",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 6});
                 b.output(b.op("tern::div", {x, b.double_value(3.0)}, DType::F32, {5, 6}));
               },
               1e-12});
  // maximum / minimum (ops 35, 36): XGLM's scores clamped below by float32's lowest value (a 0-D
  // constant), two activations broadcast, an NHWC operand with a per-channel constant, a scalar.
  OpCase max_scores = {"maximum_of_scores_and_lowest",
                       [](GraphBuilder& b) {
                         const int s = b.input("s", DType::F32, {1, 4, 6, 6});
                         const int low = b.constant_f32(
                             "low", {}, {std::numeric_limits<float>::lowest()});
                         b.output(b.op("tern::maximum", {s, low}, DType::F32, {1, 4, 6, 6}));
                       },
                       0.0};
  max_scores.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::Maximum)});
  };
  c.push_back(max_scores);
  c.push_back({"minimum_and_maximum_broadcast",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 1, 5});
                 const int y = b.input("y", DType::F32, {4, 1});
                 b.output(b.op("tern::minimum", {x, y}, DType::F32, {3, 4, 5}));
                 b.output(b.op("tern::maximum", {y, x}, DType::F32, {3, 4, 5}));
               },
               0.0});
  c.push_back({"maximum_nhwc_per_channel_and_minimum_scalar",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 4, 4};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 61);
                 const int k = b.constant_f32("k", {1, 3, 1, 1}, {0.1f, -0.2f, 0.3f});
                 const int m = b.op("tern::maximum", {y, k}, DType::F32, xs);
                 b.output(b.op("tern::minimum", {m, b.double_value(0.25)}, DType::F32, xs));
               },
               1e-12});
  // ---- activations ----
  c.push_back(unary("relu", "tern::relu", {2, 4, 5, 5}));
  c.push_back(unary("relu6_hardtanh", "tern::hardtanh", {1, 6, 4, 4}, [](GraphBuilder& b) {
    return std::vector<int>{b.double_value(0.0), b.double_value(0.6)};
  }));
  c.push_back(unary("clamp_min_only", "tern::clamp", {3, 10}, [](GraphBuilder& b) {
    return std::vector<int>{b.double_value(-0.5), b.none()};
  }));
  c.push_back(unary("clamp_int_bounds", "tern::clamp", {2, 3, 4}, [](GraphBuilder& b) {
    return std::vector<int>{b.int_value(-1), b.int_value(1)};
  }));
  c.back().threshold = kEltwise;
  c.push_back(unary("hardswish", "tern::hardswish", {1, 8, 6, 6}));
  c.back().threshold = 1e-10;
  c.push_back(unary("hardsigmoid", "tern::hardsigmoid", {1, 8, 5, 5}));
  c.back().threshold = kEltwise;
  c.push_back({"hardsigmoid_wide_range",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {64});
                 const int k = b.double_value(4.0);
                 const int y = b.op("tern::mul", {x, k}, DType::F32, {64});
                 b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {64}));
               },
               kEltwise});
  c.push_back(unary("sigmoid", "tern::sigmoid", {2, 4, 3, 3}));
  c.back().threshold = kTranscendental;
  c.push_back(unary("softmax_2d", "tern::softmax", {4, 10},
                    [](GraphBuilder& b) { return std::vector<int>{b.int_value(-1)}; }));
  c.back().threshold = kTranscendental;
  c.push_back(unary("softmax_3d", "tern::softmax", {2, 3, 17},
                    [](GraphBuilder& b) { return std::vector<int>{b.int_value(2)}; }));
  c.back().threshold = kTranscendental;
  // ---- pooling ----
  c.push_back({"max_pool3x3_s2_p1",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 11, 11});
                 b.output(b.op("tern::max_pool2d",
                               {x, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                                b.int_list({1, 1}), b.bool_value(false)},
                               DType::F32, {1, 4, 6, 6}));
               },
               0.0});
  c.push_back({"max_pool2x2_dilation2_default_stride",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 9, 8});
                 b.output(b.op("tern::max_pool2d",
                               {x, b.int_list({2, 2}), b.int_list({}), b.int_list({0, 0}),
                                b.int_list({2, 2}), b.bool_value(false)},
                               DType::F32, {2, 3, 4, 3}));
               },
               0.0});
  c.push_back({"max_pool_ceil_mode_same_size",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 2, 8, 8});
                 b.output(b.op("tern::max_pool2d",
                               {x, b.int_list({2}), b.int_list({2}), b.int_list({0}),
                                b.int_list({1}), b.bool_value(true)},
                               DType::F32, {1, 2, 4, 4}));
               },
               0.0});
  c.push_back({"avg_pool2x2_s2",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 8, 6});
                 b.output(b.op("tern::avg_pool2d",
                               {x, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                                b.bool_value(false), b.bool_value(true), b.none()},
                               DType::F32, {2, 5, 4, 3}));
               },
               1e-12});
  c.push_back({"avg_pool3x3_p1_exclude_pad",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 7, 7});
                 b.output(b.op("tern::avg_pool2d",
                               {x, b.int_list({3, 3}), b.int_list({1, 1}), b.int_list({1, 1}),
                                b.bool_value(false), b.bool_value(false), b.none()},
                               DType::F32, {1, 3, 7, 7}));
               },
               1e-12});
  c.push_back({"global_avg_pool",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 7, 7});
                 b.output(b.op("tern::adaptive_avg_pool2d", {x, b.int_list({1, 1})}, DType::F32,
                               {2, 16, 1, 1}));
               },
               1e-12});
  c.push_back({"mean_hw_keepdim",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 12, 6, 5});
                 b.output(b.op("tern::mean", {x, b.int_list({-1, -2}), b.bool_value(true)},
                               DType::F32, {2, 12, 1, 1}));
               },
               1e-12});
  c.push_back({"mean_hw_flat",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 12, 6, 5});
                 b.output(b.op("tern::mean", {x, b.int_list({2, 3}), b.bool_value(false)},
                               DType::F32, {2, 12}));
               },
               1e-12});
  // ---- views and pad ----
  c.push_back({"pool_flatten_linear_head",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 5, 5});
                 const int p = b.op("tern::adaptive_avg_pool2d", {x, b.int_list({1})}, DType::F32,
                                    {2, 16, 1, 1});
                 const int f = b.op("tern::flatten", {p, b.int_value(1), b.int_value(-1)},
                                    DType::F32, {2, 16});
                 const int w = constant(b, "w", {10, 16}, 41), bias = constant(b, "b", {10}, 42);
                 b.output(b.op("tern::linear", {f, w, bias}, DType::F32, {2, 10}));
               },
               kConv});
  c.push_back({"view_channels_to_4d",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 12});
                 const int v =
                     b.op("tern::view", {x, b.int_list({3, 12, 1, 1})}, DType::F32, {3, 12, 1, 1});
                 b.output(b.op("tern::relu", {v}, DType::F32, {3, 12, 1, 1}));
               },
               0.0});
  c.push_back(
      {"reshape_plain_3d",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4, 6});
         const int r = b.op("tern::reshape", {x, b.int_list({2, 2, 6})}, DType::F32, {2, 2, 6});
         b.output(b.op("tern::sigmoid", {r}, DType::F32, {2, 2, 6}));
       },
       kTranscendental});
  c.push_back({"pad_4d_constant",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 4, 5});
                 b.output(b.op("tern::pad",
                               {x, b.int_list({1, 2, 0, 1, 1, 0}), b.string_value("constant"),
                                b.double_value(0.25)},
                               DType::F32, {1, 4, 5, 8}));
               },
               0.0});
  c.push_back({"pad_2d_default_value",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 4});
                 b.output(b.op("tern::pad",
                               {x, b.int_list({2, 1}), b.string_value("constant"), b.none()},
                               DType::F32, {3, 7}));
               },
               0.0});
  // Reflect pads: a GatherMap (op 42) over x's bytes as they lie. TResNet's blur pool (a conv's
  // NHWC output padded by 1 on each side, then a depthwise 3x3 stride-2 blur: runs of C), a
  // plain 2-D pad of both dims, a 3-D pad of its last two dims by different amounts (one
  // of them size - 1) over two rows of the batch.
  OpCase blur = {"reflect_pad_tresnet_blur_pool",
                 [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{2, 3, 9, 8};
                   const int x = b.input("x", DType::F32, xs);
                   const int y = conv(b, x, xs, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 71);
                   const int p = b.op("tern::pad", {y, b.int_list({1, 1, 1, 1}),
                                                    b.string_value("reflect"), b.none()},
                                      DType::F32, {2, 6, 11, 10});
                   const std::vector<int64_t> ps{2, 6, 11, 10};
                   b.output(conv(b, p, ps, 6, 3, 3, {2, 2}, {0, 0}, {1, 1}, 6, false, 72));
                 },
                 1e-10};
  blur.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(count_op(blob, cpu::NodeOp::GatherMap), 1u);
    const cpu::BlobNode n = blob_node(blob, last_node_of(blob, cpu::NodeOp::GatherMap));
    EXPECT_EQ(n.params[0], 2u) << "one row per image";
    EXPECT_EQ(n.params[1], 9u * 8u * 6u) << "an image apart";
    EXPECT_EQ(n.params[2], 6u) << "each entry copies a pixel's channels";
  };
  c.push_back(blur);
  c.push_back({"reflect_pad_2d_both_dims",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 5});
                 b.output(b.op("tern::pad",
                               {x, b.int_list({2, 1, 3, 1}), b.string_value("reflect"),
                                b.none()},
                               DType::F32, {8, 8}));
               },
               0.0});
  c.push_back({"reflect_pad_3d_last_two_dims",
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 6});
                 const int t = b.op("tern::tanh", {x}, DType::F32, {2, 3, 6});
                 b.output(b.op("tern::pad",
                               {t, b.int_list({5, 0, 2, 1}), b.string_value("reflect"),
                                b.none()},
                               DType::F32, {2, 6, 11}));
               },
               kTranscendental});
  // ---- composite: a ResNet-like basic block with a classifier ----
  c.push_back(
      {"resnet_block_head",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 3, 16, 16});
         const int c1 = conv(b, x, {1, 3, 16, 16}, 8, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 51);
         const int r1 = b.op("tern::relu", {c1}, DType::F32, {1, 8, 8, 8});
         const int p = b.op("tern::max_pool2d",
                            {r1, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                             b.int_list({1, 1}), b.bool_value(false)},
                            DType::F32, {1, 8, 4, 4});
         const int c2 = conv(b, p, {1, 8, 4, 4}, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 53);
         const int r2 = b.op("tern::relu", {c2}, DType::F32, {1, 8, 4, 4});
         const int c3 = conv(b, r2, {1, 8, 4, 4}, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, 55);
         const int sum = b.op("tern::add", {c3, p}, DType::F32, {1, 8, 4, 4});
         const int r3 = b.op("tern::relu", {sum}, DType::F32, {1, 8, 4, 4});
         const int g =
             b.op("tern::adaptive_avg_pool2d", {r3, b.int_list({1, 1})}, DType::F32, {1, 8, 1, 1});
         const int f = b.op("tern::reshape", {g, b.int_list({1, -1})}, DType::F32, {1, 8});
         const int w = constant(b, "fc_w", {5, 8}, 57);
         b.output(b.op("tern::linear", {f, w, b.none()}, DType::F32, {1, 5}));
         b.output(r3);  // a 4-D region output read again inside the region
       },
       kConv});
  c.push_back(
      {"mobilenet_dw_hardswish_se",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 8, 9, 9});
         const int d = conv(b, x, {1, 8, 9, 9}, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 61);
         const int h = b.op("tern::hardswish", {d}, DType::F32, {1, 8, 9, 9});
         const int g =
             b.op("tern::adaptive_avg_pool2d", {h, b.int_list({1, 1})}, DType::F32, {1, 8, 1, 1});
         const int s1 = conv(b, g, {1, 8, 1, 1}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 63);
         const int s2 = b.op("tern::relu", {s1}, DType::F32, {1, 4, 1, 1});
         const int s3 = conv(b, s2, {1, 4, 1, 1}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 65);
         const int s4 = b.op("tern::hardtanh", {s3, b.double_value(0), b.double_value(1)},
                             DType::F32, {1, 8, 1, 1});
         const int m = b.op("tern::mul", {h, s4}, DType::F32, {1, 8, 9, 9});
         b.output(conv(b, m, {1, 8, 9, 9}, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 67));
       },
       kConv});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformance, cases());

// A delegate whose output is also consumed after it, and a multi-threaded load.
TEST(CpuConformanceSingle, ConvThenPortableTailWithThreads) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 6, 10, 10});
  const int c1 = conv(b, x, {1, 6, 10, 10}, 12, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 71);
  const int r = b.op("tern::relu", {c1}, DType::F32, {1, 12, 10, 10});
  // Portable tail: an erf the backend does not take.
  const int g = b.op("tern::erf", {r}, DType::F32, {1, 12, 10, 10});
  EXPECT_FALSE(compiler::CpuBackendCompiler().supports(b.graph(), b.graph().nodes.back()));
  b.output(g);
  delegate_cpu(b, 0, 1);
  const compiler::Graph graph = b.build();
  const auto pte = testing::compile_graph(graph);
  const std::vector<std::vector<float>> in{random_floats(600, 5)};
  for (uint32_t threads : {0u, 1u, 2u}) {
    const RunResult d = run_program(pte, graph, in, false, 3, threads);
    const RunResult p = run_program(pte, graph, in, true);
    ASSERT_EQ(d.outputs.size(), 1u);
    EXPECT_LE(nmse(d.outputs[0], p.outputs[0]), 1e-9) << threads << " threads";
  }
}

// A bottleneck chain stops at an intermediate that leaves the graph: the fused node ends there
// (no project, and no activation after a depthwise output that leaves), the rest runs apart.
TEST(CpuConformanceSingle, BottleneckStopsAtAGraphOutput) {
  register_all();
  struct Want {
    const char* name;
    uint32_t depthwise_epilogue;
    size_t num_nodes;  // op 21, then what stays apart
  };
  const Want wants[] = {
      // op 21 (expand, dw), the relu6, the project (XNNPACK's: a tiny product), the add
      {"bottleneck_depthwise_output_is_graph_output", 0, 4},
      // op 21 (expand, dw + relu), the project
      {"bottleneck_activated_output_is_graph_output",
       static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu), 2},
  };
  const std::vector<OpCase> all = cases();
  for (const Want& want : wants) {
    SCOPED_TRACE(want.name);
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const OpCase& c) { return c.name == want.name; });
    ASSERT_NE(it, all.end());
    GraphBuilder b;
    it->build(b);
    delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
    const std::vector<uint8_t>& blob = b.graph().delegates[0].blob;
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(std::count(ops.begin(), ops.end(), kBottleneckOp), 1);
    EXPECT_EQ(ops.size(), want.num_nodes) << ::testing::PrintToString(ops);
    const size_t at = static_cast<size_t>(std::find(ops.begin(), ops.end(), kBottleneckOp) -
                                          ops.begin());
    const cpu::BlobNode n = blob_node(blob, static_cast<uint32_t>(at));
    EXPECT_EQ(n.params[cpu::kBottleneckFlags], cpu::kBottleneckHasExpand);
    EXPECT_EQ(n.params[cpu::kBottleneckOutChannels], 64u);
    EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue], want.depthwise_epilogue);
    EXPECT_EQ(n.num_inputs, 2u);  // no residual: the depthwise output is read elsewhere too
  }
}

// Chains cut by region boundaries: region A = expand -> relu6 -> dw -> relu6 (its output read
// by a portable erf), region B = the 1x1 project after it; and a region whose dw output
// leaves it straight away. Both still lower to op 21 (expand + dw) and match portable.
TEST(CpuConformanceSingle, BottleneckCutByTheRegionBoundary) {
  register_all();
  for (bool act_in_region : {true, false}) {
    SCOPED_TRACE(act_in_region ? "activation in the region" : "dw output leaves");
    GraphBuilder b;
    const std::vector<int64_t> xs{1, 16, 10, 10}, hs{1, 64, 10, 10};
    const int x = b.input("x", DType::F32, xs);
    const int e = conv(b, x, xs, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 151);
    const int r1 = stage_act(b, "relu6", e, hs);
    const int d = conv(b, r1, hs, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 64, true, 153);
    int last_a = 2, t = d;
    if (act_in_region) {
      t = stage_act(b, "relu6", d, hs);
      last_a = 3;
    }
    const int s = b.op("tern::erf", {t}, DType::F32, hs);  // portable: ends region A
    ASSERT_FALSE(compiler::CpuBackendCompiler().supports(b.graph(), b.graph().nodes.back()));
    b.output(conv(b, s, hs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 155));
    const int project = static_cast<int>(b.num_nodes()) - 1;
    delegate_cpu(b, 0, last_a);
    delegate_cpu(b, project, project);
    const compiler::Graph graph = b.build();
    const std::vector<uint32_t> ops = blob_ops(graph.delegates[0].blob);
    ASSERT_EQ(ops, std::vector<uint32_t>{kBottleneckOp});
    const cpu::BlobNode n = blob_node(graph.delegates[0].blob, 0);
    EXPECT_EQ(n.params[cpu::kBottleneckFlags], cpu::kBottleneckHasExpand);
    EXPECT_EQ(n.params[cpu::kBottleneckExpandEpilogue],
              static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6));
    EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue],
              act_in_region ? static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6) : 0u);
    const std::vector<uint32_t> ops_b = blob_ops(graph.delegates[1].blob);
    EXPECT_EQ(std::count(ops_b.begin(), ops_b.end(), kBottleneckOp), 0);
    const auto pte = testing::compile_graph(graph);
    const std::vector<std::vector<float>> in{random_floats(numel(xs), 7)};
    const RunResult p = run_program(pte, graph, in, true);
    for (uint32_t threads : {1u, 2u}) {
      const RunResult d2 = run_program(pte, graph, in, false, 2, threads);
      ASSERT_EQ(d2.paths, (std::vector<DelegatePath>{DelegatePath::Backend,
                                                     DelegatePath::Backend}));
      ASSERT_EQ(d2.outputs.size(), 1u);
      EXPECT_TRUE(all_finite(d2.outputs[0]));
      EXPECT_LE(nmse(d2.outputs[0], p.outputs[0]), 1e-9) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace tern::cpu_test

namespace tern::cpu_test {
namespace {

// Perf mode (not a test; run with --gtest_also_run_disabled_tests): a ResNet-18 layer1 conv
// (64 -> 64, 3x3, pad 1, 56x56) + relu through the delegate and through the portable kernels.
TEST(CpuConformancePerf, DISABLED_Resnet18ConvLayer) {
  register_all();
  struct Shape {
    int64_t c, hw;
  };
  for (const Shape s : {Shape{64, 56}, Shape{128, 28}, Shape{256, 14}}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, s.c, s.hw, s.hw});
    const int y = conv(b, x, {1, s.c, s.hw, s.hw}, s.c, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 91);
    b.output(b.op("tern::relu", {y}, DType::F32, {1, s.c, s.hw, s.hw}));
    delegate_cpu(b, 0, 1);
    const compiler::Graph graph = b.build();
    const auto pte = testing::compile_graph(graph);
    const std::vector<std::vector<float>> in{random_floats(numel({1, s.c, s.hw, s.hw}), 3)};
    for (uint32_t threads : {1u, 2u}) {
      for (bool disable : {false, true}) {
        const int runs = 20;
        double ms = 0;
        run_program(pte, graph, in, disable, runs, threads, &ms);
        std::printf(
            "conv3x3 %lld->%lld @%lldx%lld + relu, %u thread(s), %-8s: %.2f ms per "
            "execute (mean of %d)\n",
            static_cast<long long>(s.c), static_cast<long long>(s.c), static_cast<long long>(s.hw),
            static_cast<long long>(s.hw), threads, disable ? "portable" : "cpu", ms, runs);
      }
    }
  }
}

}  // namespace
}  // namespace tern::cpu_test

namespace tern::cpu_test {
namespace {

// A caller-bound input (no copy into the arena; its address is known only at set_input, after
// the delegate's prepare, and may change between executions).
TEST(CpuConformanceSingle, CallerBoundInputMayMove) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 4, 8, 8});
  b.graph().values[static_cast<size_t>(x)].caller_bound = true;
  const int c = conv(b, x, {1, 4, 8, 8}, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 81);
  b.output(b.op("tern::relu", {c}, DType::F32, {1, 4, 8, 8}));
  delegate_cpu(b, 0, 1);
  const compiler::Graph graph = b.build();
  const auto pte = testing::compile_graph(graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  std::vector<int64_t> sizes{1, 4, 8, 8};
  for (uint32_t seed : {1u, 2u}) {
    std::vector<float> in = random_floats(256, seed);  // a fresh buffer each round
    ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, in)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    const std::vector<float> got = testing::to_vector(*method->output(0).get());
    const RunResult portable = run_program(pte, graph, {in}, true);
    EXPECT_LE(nmse(got, portable.outputs[0]), 1e-9) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tern::cpu_test

namespace tern::cpu_test {
namespace {

// Maximum / minimum (ops 35, 36): XNNPACK's nodes take no output bounds, so the reader refuses
// any but (-inf, +inf), and the operands must broadcast like the other binary ops'.
TEST(CpuMaximumBlob, FieldsAreChecked) {
  register_all();
  for (const char* op : {"tern::maximum", "tern::minimum"}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {3, 1, 5});
    const int y = b.input("y", DType::F32, {4, 1});
    b.output(b.op(op, {x, y}, DType::F32, {3, 4, 5}));
    delegate_cpu(b, 0, 0);
    const std::vector<uint8_t> blob = b.graph().delegates[0].blob;
    ASSERT_EQ(blob_ops(blob).size(), 1u);
    expect_refused(blob, 0,
                   {{"a lower bound", [](cpu::BlobNode& n) { n.fparams[0] = 0.0f; },
                     "expected (-inf, +inf)"},
                    {"an upper bound", [](cpu::BlobNode& n) { n.fparams[1] = 6.0f; },
                     "expected (-inf, +inf)"},
                    {"a parameter", [](cpu::BlobNode& n) { n.params[0] = 1; }, "unused parameter 0 is 1"},
                    {"one input", [](cpu::BlobNode& n) { n.num_inputs = 1; }, "1 inputs"}});
  }
}

}  // namespace
}  // namespace tern::cpu_test
