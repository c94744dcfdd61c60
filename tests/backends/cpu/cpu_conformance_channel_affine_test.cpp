// Conformance of the cpu backend's per-channel binary ops (a channels-last activation and a
// constant of one number per channel, [C, 1, 1] or [1, C, 1, 1]) lowered as one multiply-add
// per channel: an image model's input normalisation (x − mean) / std (torchvision's
// detectors: XNNPACK's broadcasting subtract and divide stepped through rows of 3 floats),
// chains of every form (x + αk, k − x, k · x, x / k) composed into one node, and the ones
// left as they were (k / x, a number, an intermediate also read elsewhere), against the
// portable kernels (harness: cpu_conformance_util.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

size_t binaries(const std::vector<uint8_t>& blob) {
  return count_op(blob, cpu::NodeOp::Add) + count_op(blob, cpu::NodeOp::Subtract) +
         count_op(blob, cpu::NodeOp::Multiply) + count_op(blob, cpu::NodeOp::Divide);
}

/// A per-channel constant [1, c, 1, 1] (or [c, 1, 1] with `rank3`) in [lo, hi].
int per_channel(GraphBuilder& b, const std::string& name, int64_t c, uint32_t seed, float lo,
                float hi, bool rank3 = false) {
  const std::vector<int64_t> dims = rank3 ? std::vector<int64_t>{c, 1, 1}
                                          : std::vector<int64_t>{1, c, 1, 1};
  return b.constant_f32(name, dims, random_floats(static_cast<size_t>(c), seed, lo, hi));
}

int binary(GraphBuilder& b, const char* op, int x, int y, const std::vector<int64_t>& s,
           double alpha = 1.0) {
  std::vector<int> args{x, y};
  if (alpha != 1.0) args.push_back(b.double_value(alpha));
  return b.op(op, args, DType::F32, s);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  // (x − mean) / std of an RGB input, then a 3x3 / 2 conv: one 1x1 depthwise node.
  OpCase norm = {"input_normalisation_then_conv", [](GraphBuilder& b) {
                   const std::vector<int64_t> s{2, 3, 20, 24};
                   const int x = b.input("x", DType::F32, s);
                   const int m = per_channel(b, "mean", 3, 1, 0.4f, 0.5f);
                   const int sd = per_channel(b, "std", 3, 2, 0.2f, 0.3f, true);
                   const int y = binary(b, "tern::div", binary(b, "tern::sub", x, m, s), sd, s);
                   b.output(conv(b, y, s, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 3));
                 }, 1e-10};
  norm.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(binaries(blob), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 1u);
  };
  c.push_back(norm);
  // Every form on a 3x3 conv's output, composed into one node, then a ReLU and a 1x1 conv.
  OpCase chain = {"every_form_composed", [](GraphBuilder& b) {
                    const std::vector<int64_t> xs{1, 5, 12, 12}, s{1, 8, 12, 12};
                    const int x = b.input("x", DType::F32, xs);
                    int h = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 10);
                    h = binary(b, "tern::add", h, per_channel(b, "k1", 8, 11, -1.0f, 1.0f), s, 2.0);
                    h = binary(b, "tern::sub", per_channel(b, "k2", 8, 12, -1.0f, 1.0f, true), h, s);
                    h = binary(b, "tern::mul", per_channel(b, "k3", 8, 13, 0.5f, 2.0f), h, s);
                    h = binary(b, "tern::div", h, per_channel(b, "k4", 8, 14, 0.5f, 2.0f), s);
                    h = binary(b, "tern::add", per_channel(b, "k5", 8, 15, -1.0f, 1.0f), h, s);
                    h = b.op("tern::relu", {h}, DType::F32, s);
                    b.output(conv(b, h, s, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 16));
                  }, 1e-10};
  chain.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(binaries(blob), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 1u);
  };
  c.push_back(chain);
  // Left as they were: k / x (not affine; of the input, as a conv's outputs near 0 would make
  // the comparison ill-conditioned), x · a number, and the subtraction's output also leaving
  // the region (the division then a node of its own).
  OpCase kept = {"not_affine_or_also_read", [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{1, 4, 9, 9}, s{1, 6, 9, 9};
                   const int x = b.input("x", DType::F32, xs);
                   const int h = conv(b, x, xs, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 20);
                   const int r = conv(b, binary(b, "tern::div", per_channel(b, "k1", 4, 21, 0.5f, 2.0f), x, xs),
                                      xs, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 24);
                   b.output(r);
                   b.output(b.op("tern::mul", {h, b.double_value(0.5)}, DType::F32, s));
                   const int d = binary(b, "tern::sub", h, per_channel(b, "k2", 6, 22, -1.0f, 1.0f), s);
                   b.output(d);
                   b.output(binary(b, "tern::div", d, per_channel(b, "k3", 6, 23, 0.5f, 2.0f), s));
                 }, 1e-10};
  kept.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Divide), 1u);    // k / x
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Multiply), 1u);  // x · 0.5
    EXPECT_EQ(count_op(blob, cpu::NodeOp::DepthwiseConv2d), 2u);
  };
  c.push_back(kept);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceChannelAffine, cases());

}  // namespace
}  // namespace tern::cpu_test
