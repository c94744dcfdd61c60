// Conformance of the cpu backend's conv1d (a conv2d of height 1 on [N, 1, L, C]) and 3-D group
// norm against the portable kernels (harness: cpu_conformance_util.h): wav2vec2's feature
// extractor (conv k10/5 -> group norm of one channel per group -> GELU -> conv k3/2 -> GELU ->
// transpose(1, 2) -> layer norm), Whisper's stem (conv k3 pad 1 -> GELU -> conv k3/2 -> GELU,
// permuted to [N, L, C]), its positional grouped conv with padding, ConvBERT's separable conv
// (depthwise then pointwise), Mamba's causal depthwise conv (padding K - 1, then the first L
// outputs) with SiLU, dilation, a batch of two and a conv1d whose input is a row-major tensor
// made by a linear; then what the compile half refuses and that the activations fold into the
// conv.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

/// conv1d of x [N, C, L] to o channels, kernel k (weight [o, C / groups, k]).
int conv1d(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, int64_t k,
           int64_t stride, int64_t pad, int64_t dil, int64_t groups, bool bias, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, k}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  const int64_t l = (xs[2] + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  return b.op("tern::conv1d",
              {x, w, bv, b.int_list({stride}), b.int_list({pad}), b.int_list({dil}),
               b.int_value(groups)},
              DType::F32, {xs[0], o, l}, "conv1d_" + std::to_string(seed));
}

int unary(GraphBuilder& b, const char* op, int x, const std::vector<int64_t>& s) {
  return b.op(op, {x}, DType::F32, s);
}

int transpose12(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::transpose", {x, b.int_value(1), b.int_value(2)}, DType::F32,
              {s[0], s[2], s[1]});
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase w2v = {"wav2vec2_feature_extractor", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, 1, 400}, h1{1, 16, 79}, h2{1, 16, 39};
                  const int x = b.input("x", DType::F32, xs);
                  const int c1 = conv1d(b, x, xs, 16, 10, 5, 0, 1, 1, false, 3);
                  const int gw = constant(b, "gn_w", {16}, 5, 1.5f);
                  const int gb = constant(b, "gn_b", {16}, 6);
                  const int n1 = b.op("tern::group_norm",
                                      {c1, b.int_value(16), gw, gb, b.double_value(1e-5)},
                                      DType::F32, h1);
                  const int g1 = unary(b, "tern::gelu", n1, h1);
                  const int c2 = conv1d(b, g1, h1, 16, 3, 2, 0, 1, 1, false, 7);
                  const int g2 = unary(b, "tern::gelu", c2, h2);
                  const int t = transpose12(b, g2, h2);
                  const int lw = constant(b, "ln_w", {16}, 9, 1.5f);
                  const int lb = constant(b, "ln_b", {16}, 10);
                  b.output(b.op("tern::layer_norm",
                                {t, b.int_list({16}), lw, lb, b.double_value(1e-5)}, DType::F32,
                                {1, 39, 16}));
                }, 1e-10};
  w2v.check_blob = [](const std::vector<uint8_t>& blob) {
    // The second conv's GELU folds into it; the group norm reads the first conv's NHWC value.
    EXPECT_EQ(count_op(blob, cpu::NodeOp::PackedConv2d), 2u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GroupNorm), 1u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Gelu), 1u);
  };
  c.push_back(w2v);
  OpCase whisper = {"whisper_stem", [](GraphBuilder& b) {
                      const std::vector<int64_t> xs{1, 8, 20}, h1{1, 12, 20}, h2{1, 12, 10};
                      const int x = b.input("x", DType::F32, xs);
                      const int g1 = unary(b, "tern::gelu",
                                           conv1d(b, x, xs, 12, 3, 1, 1, 1, 1, true, 11), h1);
                      const int g2 = unary(b, "tern::gelu",
                                           conv1d(b, g1, h1, 12, 3, 2, 1, 1, 1, true, 13), h2);
                      const int p = b.op("tern::permute", {g2, b.int_list({0, 2, 1})},
                                         DType::F32, {1, 10, 12});
                      const int pos = constant(b, "pos", {10, 12}, 15);
                      b.output(b.op("tern::add", {p, pos}, DType::F32, {1, 10, 12}));
                    }, 1e-10};
  whisper.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Gelu), 0u);  // both folded into their convs
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 1u);  // x to [N, L, C] only
  };
  c.push_back(whisper);
  c.push_back({"positional_grouped_conv_with_padding", [](GraphBuilder& b) {
                 // wav2vec2's pos_conv_embed: [N, L, C] transposed, conv k8 pad 4 groups 4,
                 // the last output dropped, GELU, transposed back and added.
                 const std::vector<int64_t> s{1, 13, 16}, t{1, 16, 13};
                 const int x = b.input("x", DType::F32, s);
                 const int h = b.op("tern::transpose", {x, b.int_value(1), b.int_value(2)},
                                    DType::F32, t);
                 const int cv = conv1d(b, h, t, 16, 8, 1, 4, 1, 4, true, 17);
                 const int sl = b.op("tern::slice",
                                     {cv, b.int_value(2), b.int_value(0), b.int_value(13),
                                      b.int_value(1)},
                                     DType::F32, t);
                 const int g = unary(b, "tern::gelu", sl, t);
                 const int back = transpose12(b, g, t);
                 b.output(b.op("tern::add", {x, back}, DType::F32, s));
               }, 1e-10});
  c.push_back({"convbert_separable_conv", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{1, 9, 12}, t{1, 12, 9};
                 const int x = b.input("x", DType::F32, s);
                 const int h = transpose12(b, x, s);
                 const int dw = conv1d(b, h, t, 12, 5, 1, 2, 1, 12, false, 19);
                 const int pw = conv1d(b, dw, t, 10, 1, 1, 0, 1, 1, false, 21);
                 b.output(transpose12(b, pw, {1, 10, 9}));
               }, 1e-10});
  c.push_back({"mamba_causal_depthwise_silu", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 8, 11};
                 const int x = b.input("x", DType::F32, xs);
                 const int cv = conv1d(b, x, xs, 8, 4, 1, 3, 1, 8, true, 23);
                 const int sl = b.op("tern::slice",
                                     {cv, b.int_value(-1), b.int_value(0), b.int_value(11),
                                      b.int_value(1)},
                                     DType::F32, xs);
                 b.output(unary(b, "tern::silu", sl, xs));
               }, 1e-10});
  c.push_back({"dilated_conv_of_a_linear_output", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{1, 6, 17};
                 const int x = b.input("x", DType::F32, s);
                 const int w = constant(b, "lw", {17, 17}, 25);
                 const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, s);
                 const int cv = conv1d(b, h, s, 7, 3, 2, 2, 3, 1, true, 27);
                 b.output(unary(b, "tern::relu", cv, {1, 7, 8}));
               }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceConv1d, cases());

TEST(CpuConv1d, WhatTheCompileHalfRefuses) {
  register_all();
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  {  // a weight that is an input
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 10});
    const int w = b.input("w", DType::F32, {4, 4, 3});
    b.op("tern::conv1d",
         {x, w, b.none(), b.int_list({1}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
         DType::F32, {1, 4, 8});
    EXPECT_NE(reason(b).find("weight: not a constant"), std::string::npos) << reason(b);
  }
  {  // an output shape the attributes do not give
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 10});
    const int w = constant(b, "w", {4, 4, 3}, 31);
    b.op("tern::conv1d",
         {x, w, b.none(), b.int_list({2}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
         DType::F32, {1, 4, 8});
    EXPECT_NE(reason(b).find("conv1d: out [1, 4, 8] is not [1, 4, 4]"), std::string::npos)
        << reason(b);
  }
  {  // two strides
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 10});
    const int w = constant(b, "w", {4, 4, 3}, 33);
    b.op("tern::conv1d",
         {x, w, b.none(), b.int_list({1, 1}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
         DType::F32, {1, 4, 8});
    EXPECT_NE(reason(b).find("take one value"), std::string::npos) << reason(b);
  }
}

}  // namespace
}  // namespace tern::cpu_test
