// Conformance of zero pads folded into convolutions (compile/pad_fold.h) against the portable
// kernels (harness: cpu_conformance_util.h): TensorFlow's "same" padding as PyTorch ports write
// it, pad(x, (left, right, top, bottom)) then an unpadded conv, runs as the conv with those
// pads: the stem on RGB (tern's direct conv), an expand -> pad -> strided depthwise -> project
// chain (one fused bottleneck), a pad read by two convs (HGNetV2's stem), a conv with padding of
// its own (XNNPACK's depthwise node, four pads), a Winograd-sized 3x3 conv, a pad of a relu's
// output read by a conv and a max pool; and what stays a pad (a nonzero value, a pool reading a
// pad of a tensor that may be negative, a pad of the channels).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr double kConv = 1e-9;

/// pad(x, amounts) with `value` (a zero pad when 0) of a 4-D x of sizes xs.
int pad(GraphBuilder& b, int x, const std::vector<int64_t>& xs, std::vector<int64_t> amounts,
        double value = 0.0) {
  std::vector<int64_t> out = xs;
  for (size_t i = 0; i < amounts.size() / 2; ++i) {
    out[3 - i] += amounts[2 * i] + amounts[2 * i + 1];
  }
  return b.op("tern::pad", {x, b.int_list(amounts), b.string_value("constant"),
                            b.double_value(value)},
              DType::F32, out);
}

/// The pads of node `i` of `blob`: top, left, bottom, right.
std::vector<uint32_t> pads_of(const std::vector<uint8_t>& blob, uint32_t i) {
  const cpu::BlobNode n = blob_node(blob, i);
  return {n.params[cpu::kPadTop], n.params[cpu::kPadLeft], n.params[cpu::kPadBottom],
          n.params[cpu::kPadRight]};
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase stem{"tf_same_stem_on_rgb",  // pad (0, 1, 0, 1), conv 3x3 stride 2: 3 -> 16
              [](GraphBuilder& b) {
                const int x = b.input("x", DType::F32, {1, 3, 32, 32});
                const int p = pad(b, x, {1, 3, 32, 32}, {0, 1, 0, 1});
                b.output(conv(b, p, {1, 3, 33, 33}, 16, 3, 3, {2, 2}, {0, 0}, {1, 1}, 1, true, 11));
              },
              kConv};
  stem.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::PackedConv2d)});
    EXPECT_EQ(pads_of(blob, 0), (std::vector<uint32_t>{0, 0, 1, 1}));
  };
  c.push_back(stem);
  OpCase chain{"tf_same_strided_bottleneck",  // expand, relu6, pad (1, 2, 1, 2), dw 5x5 s2, project
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 14, 14}, es{1, 64, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int e = conv(b, x, xs, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 21);
                 const int r = b.op("tern::hardtanh", {e, b.double_value(0.0), b.double_value(6.0)},
                                    DType::F32, es);
                 const int p = pad(b, r, es, {1, 2, 1, 2});
                 const int d = conv(b, p, {1, 64, 17, 17}, 64, 5, 5, {2, 2}, {0, 0}, {1, 1}, 64,
                                    true, 23);
                 b.output(conv(b, d, {1, 64, 7, 7}, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 25));
               },
               kConv};
  chain.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kBottleneckOp}) << "one fused chain";
    EXPECT_EQ(pads_of(blob, 0), (std::vector<uint32_t>{1, 1, 2, 2}));
  };
  c.push_back(chain);
  OpCase two{"pad_read_by_two_convs",  // HGNetV2's stem: pad (0, 1, 0, 1), two 2x2 convs
             [](GraphBuilder& b) {
               const std::vector<int64_t> xs{1, 16, 20, 20}, ps{1, 16, 21, 21};
               const int x = b.input("x", DType::F32, xs);
               const int p = pad(b, x, xs, {0, 1, 0, 1});
               b.output(conv(b, p, ps, 8, 2, 2, {1, 1}, {0, 0}, {1, 1}, 1, true, 31));
               b.output(conv(b, p, ps, 12, 2, 2, {1, 1}, {0, 0}, {1, 1}, 1, false, 33));
             },
             kConv};
  two.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ConstantPad), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedConv2d), 2u);
  };
  c.push_back(two);
  // HGNetV2's stem: conv -> relu, pad (0, 1, 0, 1), a 2x2 conv and a 2x2 stride-1 ceil-mode
  // max pool of the padded tensor, concatenated: the relu makes it nonnegative, so the pad
  // joins the pool's padding too.
  OpCase hg{"hgnetv2_stem_pad_into_conv_and_pool",
            [](GraphBuilder& b) {
              const std::vector<int64_t> xs{1, 3, 24, 24}, ys{1, 16, 12, 12}, ps{1, 16, 13, 13};
              const int x = b.input("x", DType::F32, xs);
              const int s = conv(b, x, xs, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 35);
              const int r = b.op("tern::relu", {s}, DType::F32, ys);
              const int p = pad(b, r, ys, {0, 1, 0, 1});
              const int c2 = conv(b, p, ps, 16, 2, 2, {1, 1}, {0, 0}, {1, 1}, 1, true, 37);
              const int m = b.op("tern::max_pool2d",
                                 {p, b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({0, 0}),
                                  b.int_list({1, 1}), b.bool_value(true)},
                                 DType::F32, ys);
              b.output(b.op("tern::cat", {tensor_list(b, {m, c2}), b.int_value(1)}, DType::F32,
                            {1, 32, 12, 12}));
            },
            kConv};
  hg.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ConstantPad), 0u);
    const uint32_t pool = last_node_of(blob, cpu::NodeOp::MaxPool2d);
    EXPECT_EQ(pads_of(blob, pool), (std::vector<uint32_t>{0, 0, 1, 1}));
  };
  c.push_back(hg);
  OpCase own{"pad_and_the_convs_own_padding",  // pad (2, 0, 1, 3), dw 3x3 with padding 1
             [](GraphBuilder& b) {
               const std::vector<int64_t> xs{1, 8, 9, 10};
               const int x = b.input("x", DType::F32, xs);
               const int p = pad(b, x, xs, {2, 0, 1, 3});
               b.output(conv(b, p, {1, 8, 13, 12}, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 41));
             },
             kConv};
  own.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob),
              std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::DepthwiseConv2d)});
    EXPECT_EQ(pads_of(blob, 0), (std::vector<uint32_t>{2, 3, 4, 1}));
  };
  c.push_back(own);
  OpCase wino{"pad_before_a_winograd_conv",  // pad (0, 2, 0, 2), 3x3 stride 1, 16 -> 16
              [](GraphBuilder& b) {
                const std::vector<int64_t> xs{1, 16, 16, 16};
                const int x = b.input("x", DType::F32, xs);
                const int p = pad(b, x, xs, {0, 2, 0, 2});
                b.output(conv(b, p, {1, 16, 18, 18}, 16, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true, 51));
              },
              kConv};
  wino.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob),
              std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d)});
    EXPECT_EQ(pads_of(blob, 0), (std::vector<uint32_t>{0, 0, 2, 2}));
  };
  c.push_back(wino);
  OpCase value{"nonzero_pad_stays",  // pad value 1: not the conv's zeros
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 16, 16});
                 const int p = pad(b, x, {1, 3, 16, 16}, {0, 1, 0, 1}, 1.0);
                 b.output(conv(b, p, {1, 3, 17, 17}, 16, 3, 3, {2, 2}, {0, 0}, {1, 1}, 1, true, 61));
               },
               kConv};
  value.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ConstantPad), 1u);
  };
  c.push_back(value);
  OpCase other{"pad_also_read_by_a_pool_stays",  // pad -> conv and max_pool
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 20, 20}, ps{1, 16, 21, 21};
                 const int x = b.input("x", DType::F32, xs);
                 const int p = pad(b, x, xs, {0, 1, 0, 1});
                 b.output(conv(b, p, ps, 8, 2, 2, {1, 1}, {0, 0}, {1, 1}, 1, true, 71));
                 b.output(b.op("tern::max_pool2d",
                               {p, b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({0, 0}),
                                b.int_list({1, 1}), b.bool_value(false)},
                               DType::F32, {1, 16, 20, 20}));
               },
               kConv};
  other.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ConstantPad), 1u);
  };
  c.push_back(other);
  OpCase chans{"channel_pad_stays",  // pad of C (and W): the conv cannot take it
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 6, 12, 12});
                 const int p = pad(b, x, {1, 6, 12, 12}, {1, 1, 0, 0, 1, 1});
                 b.output(conv(b, p, {1, 8, 12, 14}, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 81));
               },
               kConv};
  chans.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::ConstantPad), 1u);
  };
  c.push_back(chans);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuPadFoldConformance, cases());

}  // namespace
}  // namespace tern::cpu_test
