// Conformance of the cpu backend's group norm (tern's own node, op 30, over NHWC tensors)
// against the portable kernels (harness: cpu_conformance_util.h): BiT's conv -> GroupNorm ->
// ReLU -> conv, PoolFormer's GroupNorm(1, C) without weight and bias feeding a residual, one
// group per channel, a batch of two whose samples have fewer pixels than the kernel's bands and
// a channel count that is no multiple of 16; then what the compile half refuses and what the
// reader checks in op 30.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr uint32_t kGroupNormOp = static_cast<uint32_t>(cpu::NodeOp::GroupNorm);

/// group_norm of x [n, c, h, w] in `groups` groups, with weight and bias when `affine`.
int group_norm(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t groups,
               uint32_t seed, bool affine = true) {
  const int64_t c = xs[1];
  const int w = affine ? constant(b, "gn_w" + std::to_string(seed), {c}, seed, 1.5f) : b.none();
  const int bias =
      affine ? constant(b, "gn_b" + std::to_string(seed), {c}, seed + 1, 0.5f) : b.none();
  return b.op("tern::group_norm", {x, b.int_value(groups), w, bias, b.double_value(1e-5)},
              DType::F32, xs);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase bit = {"bit_conv_group_norm_relu_conv", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, 8, 9, 9}, ys{1, 32, 9, 9};
                  const int x = b.input("x", DType::F32, xs);
                  const int y = conv(b, x, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false, 3);
                  const int n = group_norm(b, y, ys, 8, 5);
                  const int r = b.op("tern::relu", {n}, DType::F32, ys);
                  b.output(conv(b, r, ys, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 7));
                }, 1e-10};
  bit.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupNorm), 1u);
  };
  c.push_back(bit);
  c.push_back({"poolformer_one_group_residual", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 7, 6};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 24, true, 11);
                 const int n = group_norm(b, y, xs, 1, 13, false);
                 const int s = b.op("tern::add", {n, y}, DType::F32, xs);
                 b.output(conv(b, s, xs, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 15));
               }, 1e-10});
  c.push_back({"one_group_per_channel", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 10, 10}, ys{1, 12, 5, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 12, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 17);
                 b.output(group_norm(b, y, ys, 12, 19));
               }, 1e-10});
  c.push_back({"batch_two_few_pixels_wide", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 6, 2, 3}, ys{2, 40, 2, 3};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 21);
                 const int n = group_norm(b, y, ys, 5, 23);
                 b.output(conv(b, n, ys, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 25));
               }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceGroupNorm, cases());

TEST(CpuGroupNorm, WhatTheCompileHalfRefuses) {
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  // A 2-D or 6-D input: no [N, C, L], [N, C, H, W] or [N, C, D, H, W] (3-D ones:
  // cpu_conformance_conv1d_test, 5-D ones: cpu_conformance_conv3d_test).
  for (const std::vector<int64_t>& xs : {std::vector<int64_t>{8, 20},
                                         std::vector<int64_t>{1, 4, 2, 2, 2, 2}}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, xs);
    b.op("tern::group_norm", {x, b.int_value(2), b.none(), b.none(), b.double_value(1e-5)},
         DType::F32, xs);
    EXPECT_NE(reason(b).find("not [N, C, L], [N, C, H, W] nor [N, C, D, H, W]"),
              std::string::npos)
        << reason(b);
  }
  {  // a weight that is an input, not a constant
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 8, 4, 4});
    const int w = b.input("w", DType::F32, {8});
    b.op("tern::group_norm", {x, b.int_value(2), w, b.none(), b.double_value(1e-5)}, DType::F32,
         {1, 8, 4, 4});
    EXPECT_NE(reason(b), "");
  }
}

std::vector<uint8_t> gn_blob() {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 4, 6, 6}, ys{1, 16, 6, 6};
  const int x = b.input("x", DType::F32, xs);
  const int y = conv(b, x, xs, 16, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 31);
  b.output(group_norm(b, y, ys, 4, 33));
  delegate_cpu(b, 0, 1);
  return b.graph().delegates[0].blob;
}

TEST(CpuGroupNormBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = gn_blob();
  const std::vector<uint32_t> ops = blob_ops(blob);
  uint32_t index = 0;
  while (index < ops.size() && ops[index] != kGroupNormOp) ++index;
  ASSERT_LT(index, ops.size());
  expect_refused(blob, index, {
      {"no groups", [](cpu::BlobNode& n) { n.params[0] = 0; }, "0 groups, expected a positive"},
      {"groups not dividing C", [](cpu::BlobNode& n) { n.params[0] = 3; },
       "3 groups, expected a positive divisor of the 16 channels"},
      {"eps 0", [](cpu::BlobNode& n) { n.fparams[0] = 0.0f; }, "expected a finite eps > 0"},
      {"eps inf", [](cpu::BlobNode& n) { n.fparams[0] = INFINITY; }, "finite eps"},
      {"fparams[1]", [](cpu::BlobNode& n) { n.fparams[1] = 1.0f; }, "finite eps > 0 and 0"},
      {"a parameter", [](cpu::BlobNode& n) { n.params[2] = 1; }, "unused parameter 2 is 1"},
      {"gamma the data input", [](cpu::BlobNode& n) { n.inputs[1] = n.inputs[0]; },
       "must be a constant"},
      {"two inputs",
       [](cpu::BlobNode& n) {
         n.num_inputs = 2;
         n.inputs[2] = cpu::kNoValue;
       },
       "(group_norm): 2 inputs"},
  });
}

}  // namespace
}  // namespace tern::cpu_test
