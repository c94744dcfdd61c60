// Conformance of the cpu backend's means and sums over 4-D tensors and of concatenations with
// constant parts, against the portable kernels (harness: cpu_conformance_util.h): ConvNeXt V2's
// global response norm (a sum over H and W of a channels-last tensor, then a mean over its
// channels), spatial sums and means of NHWC and channels-last tensors with and without keepdim,
// a last-dim sum of a channels-last 4-D tensor, a ViT's class token (and DeiT's distillation
// token, YOLOS's detection tokens) concatenated with the patch embeddings, a constant NHWC part
// of a channel concatenation and a chain of more than three parts, FocalNet's mean over H then
// W, SwiftFormer's sum over tokens and its repeat of size-1 dims (an expand), Hiera's amax;
// then what the compile half refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

int permute(GraphBuilder& b, int x, const std::vector<int64_t>& xs, std::vector<int64_t> dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(xs[static_cast<size_t>(d)]);
  return b.op("tern::permute", {x, b.int_list(std::move(dims))}, DType::F32, out);
}

int reduce(GraphBuilder& b, const char* op, int x, std::vector<int64_t> dims, bool keepdim,
           std::vector<int64_t> out) {
  return b.op(op, {x, b.int_list(std::move(dims)), b.bool_value(keepdim)}, DType::F32,
              std::move(out));
}

int binary(GraphBuilder& b, const char* op, int x, int y, std::vector<int64_t> out) {
  return b.op(op, {x, y}, DType::F32, std::move(out));
}

int linear(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t o, uint32_t seed) {
  const int w = constant(b, "lw" + std::to_string(seed), {o, xs.back()}, seed);
  const int bias = constant(b, "lb" + std::to_string(seed), {o}, seed + 1);
  xs.back() = o;
  return b.op("tern::linear", {x, w, bias}, DType::F32, xs);
}

int cat(GraphBuilder& b, std::vector<int> parts, int64_t dim, std::vector<int64_t> out) {
  return b.op("tern::cat", {tensor_list(b, std::move(parts)), b.int_value(dim)}, DType::F32,
              std::move(out));
}

/// Patch embeddings [1, P, D] of an image x [1, 3, 8, 8]: conv 4x4 / 4 to D channels, view and
/// transpose (a ViT's patch embedding).
int patches(GraphBuilder& b, int64_t d, uint32_t seed) {
  const std::vector<int64_t> xs{1, 3, 8, 8};
  const int x = b.input("x", DType::F32, xs);
  const int y = conv(b, x, xs, d, 4, 4, {4, 4}, {0, 0}, {1, 1}, 1, true, seed);
  const int v = b.op("tern::view", {y, b.int_list({1, d, 4})}, DType::F32, {1, d, 4});
  return b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32, {1, 4, d});
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  // ConvNeXt V2's block core: dwconv, permute to channels last, layer norm, linear, GELU, GRN
  // (Gx = ||x||_2 over H, W; Nx = Gx / (mean_c Gx + 1e-6); gamma * (x * Nx) + beta + x), linear,
  // permute back, residual.
  OpCase grn = {"convnext_v2_grn", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{1, 8, 5, 6}, cl{1, 5, 6, 8}, hid{1, 5, 6, 16},
                      g{1, 1, 1, 16}, m{1, 1, 1, 1};
                  const int x = b.input("x", DType::F32, xs);
                  const int d = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 3);
                  const int p = permute(b, d, xs, {0, 2, 3, 1});
                  const int h = b.op("tern::gelu", {linear(b, p, cl, 16, 5)}, DType::F32, hid);
                  const int sq = b.op("tern::pow", {h, b.double_value(2.0)}, DType::F32, hid);
                  const int ss = reduce(b, "tern::sum", sq, {1, 2}, true, g);
                  const int gx = b.op("tern::pow", {ss, b.double_value(0.5)}, DType::F32, g);
                  const int mean = reduce(b, "tern::mean", gx, {-1}, true, m);
                  const int den = binary(b, "tern::add", mean, b.double_value(1e-6), m);
                  const int nx = binary(b, "tern::div", gx, den, g);
                  const int xn = binary(b, "tern::mul", h, nx, hid);
                  const int gamma = constant(b, "grn_gamma", {1, 1, 1, 16}, 7);
                  const int beta = constant(b, "grn_beta", {1, 1, 1, 16}, 8);
                  const int scaled = binary(b, "tern::mul", gamma, xn, hid);
                  const int shifted = binary(b, "tern::add", scaled, beta, hid);
                  const int grn_out = binary(b, "tern::add", shifted, h, hid);
                  const int back = linear(b, grn_out, hid, 8, 9);
                  const int q = permute(b, back, cl, {0, 3, 1, 2});
                  b.output(binary(b, "tern::add", q, x, xs));
                }, 1e-10};
  grn.check_blob = [](const std::vector<uint8_t>& blob) {
    // The spatial sum is a global average pool (and a multiply by H * W).
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GlobalAvgPool2d), 1u);
  };
  c.push_back(grn);
  c.push_back({"nhwc_spatial_sum_no_keepdim", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 3, 7, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 12, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 11);
                 const int s = reduce(b, "tern::sum", y, {-1, -2}, false, {2, 12});
                 b.output(linear(b, s, {2, 12}, 4, 13));
               }, 1e-10});
  c.push_back({"channels_last_spatial_mean_no_keepdim", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 6, 4, 9};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 10, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 15);
                 const int p = permute(b, y, {1, 10, 4, 9}, {0, 2, 3, 1});
                 const int m = reduce(b, "tern::mean", p, {2, 1}, false, {1, 10});
                 b.output(linear(b, m, {1, 10}, 3, 17));
               }, 1e-10});
  c.push_back({"channels_last_last_dim_sum_and_mean", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 4, 5, 3};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 19);
                 const int p = permute(b, y, {1, 6, 5, 3}, {0, 2, 3, 1});
                 b.output(reduce(b, "tern::sum", p, {3}, false, {1, 5, 3}));
                 b.output(reduce(b, "tern::mean", p, {-1}, true, {1, 5, 3, 1}));
               }, 1e-10});
  // FocalNet's global context: x.mean(2, keepdim=True).mean(3, keepdim=True) of an NHWC
  // tensor, then GELU and a product with the input.
  c.push_back({"focalnet_mean_h_then_w", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 4, 6, 5}, ys{1, 8, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 52);
                 const int mh = reduce(b, "tern::mean", y, {2}, true, {1, 8, 1, 5});
                 const int mw = reduce(b, "tern::mean", mh, {3}, true, {1, 8, 1, 1});
                 const int ctx = b.op("tern::gelu", {mw}, DType::F32, {1, 8, 1, 1});
                 const int z = binary(b, "tern::mul", y, ctx, ys);
                 b.output(conv(b, z, ys, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 54));
               }, 1e-10});
  // SwiftFormer's additive attention: F.normalize over dim 1 of [B, N, D], a sum over the
  // tokens (dim 1) repeated back over them.
  c.push_back({"swiftformer_sum_over_tokens", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{2, 6, 8};
                 const int x = b.input("x", DType::F32, s);
                 const int q = linear(b, x, s, 8, 55);
                 const int sq = b.op("tern::pow", {q, b.double_value(2.0)}, DType::F32, s);
                 const int ss = reduce(b, "tern::sum", sq, {1}, true, {2, 1, 8});
                 const int norm = b.op("tern::pow", {ss, b.double_value(0.5)}, DType::F32,
                                       {2, 1, 8});
                 const int qn = binary(b, "tern::div", q, norm, s);
                 const int g = reduce(b, "tern::sum", binary(b, "tern::mul", qn, x, s), {-2},
                                      true, {2, 1, 8});
                 // global_queries.repeat(1, N, 1): an expand of the size-1 token dim
                 const int r = b.op("tern::repeat", {g, b.int_list({1, 6, 1})}, DType::F32, s);
                 b.output(linear(b, binary(b, "tern::mul", r, x, s), s, 4, 57));
               }, 1e-10});
  c.push_back({"mean_over_last_two_and_first_two_dims", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{3, 4, 5};
                 const int x = b.input("x", DType::F32, s);
                 const int y = linear(b, x, s, 6, 58);
                 b.output(reduce(b, "tern::mean", y, {1, 2}, true, {3, 1, 1}));
                 b.output(reduce(b, "tern::sum", y, {0, 1}, false, {6}));
               }, 1e-10});
  // Qwen3-Next's chunked delta rule: a sum over a dim followed by dims of 1 (the reduction
  // runs through to the last dim; the node once reduced the last dim alone and its output
  // lost a dim: the blob did not load).
  c.push_back({"sum_and_mean_before_trailing_dims_of_one", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{2, 3, 4, 1};
                 const int x = b.input("x", DType::F32, s);
                 const int y = binary(b, "tern::mul", x, x, s);
                 b.output(reduce(b, "tern::sum", y, {2}, false, {2, 3, 1}));
                 b.output(reduce(b, "tern::mean", y, {1, 2}, true, {2, 1, 1, 1}));
                 const std::vector<int64_t> t{1, 5, 1, 1, 1};
                 const int z = b.input("z", DType::F32, t);
                 b.output(reduce(b, "tern::sum", binary(b, "tern::mul", z, z, t), {3}, false,
                                 {1, 5, 1, 1}));
               }, 1e-10});
  // ... and a sum of 5-D values to 4-D, then a cat along W and a view back to 5-D (its next
  // step): the 4-D sum is row-major, not NHWC (its bytes were once taken for an NHWC tensor's).
  c.push_back({"sum_of_five_dims_to_a_plain_four", [](GraphBuilder& b) {
                 const std::vector<int64_t> s{1, 3, 1, 2, 2};
                 const int x = b.input("x", DType::F32, s);
                 const int a = b.input("a", DType::F32, {1, 3, 1, 2});
                 const int r = reduce(b, "tern::sum", binary(b, "tern::mul", x, x, s), {3}, false,
                                      {1, 3, 1, 2});
                 const int y = binary(b, "tern::add", a, r, {1, 3, 1, 2});
                 const int k = constant(b, "rest", {1, 3, 1, 4}, 56);
                 const int z = cat(b, {y, k}, 3, {1, 3, 1, 6});
                 b.output(b.op("tern::view", {z, b.int_list({1, 3, 1, 1, 6})}, DType::F32,
                               {1, 3, 1, 1, 6}));
               }, 1e-10});
  // Hiera's unroll pooling: x.view(B, stride, -1, C).max(dim=1) of a linear's output; and
  // an amax over the last dim and over a dim of 1.
  // Reductions over dims consecutive in an NHWC tensor's bytes (N, H, W, C) other than H, W:
  // MobileNetV5's RMSNorm2d (the mean of the squares over the channels, keepdim, then
  // x * rsqrt(mean + eps) and a conv), a channel sum without keepdim ([N, H, W]: the bytes),
  // the channel amax, and W with C (keepdim and not).
  c.push_back({"mobilenetv5_rms_norm_2d", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5}, ys{1, 8, 6, 5}, ms{1, 1, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 67);
                 const int sq = b.op("tern::pow", {y, b.double_value(2.0)}, DType::F32, ys);
                 const int m = reduce(b, "tern::mean", sq, {1}, true, ms);
                 const int e = binary(b, "tern::add", m, b.double_value(1e-6), ms);
                 const int r = b.op("tern::rsqrt", {e}, DType::F32, ms);
                 const int n = binary(b, "tern::mul", y, r, ys);
                 b.output(conv(b, n, ys, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 69));
               }});
  c.push_back({"nhwc_channel_sum_and_amax", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 3, 4, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 71);
                 b.output(reduce(b, "tern::sum", y, {1}, false, {2, 4, 5}));
                 b.output(reduce(b, "tern::amax", y, {-3}, true, {2, 1, 4, 5}));
               }});
  c.push_back({"nhwc_mean_over_w_and_c", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 4, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 73);
                 b.output(reduce(b, "tern::mean", y, {1, 3}, true, {1, 1, 4, 1}));
                 b.output(reduce(b, "tern::mean", y, {3, 1}, false, {1, 4}));
               }});
  OpCase hiera = {"hiera_amax", [](GraphBuilder& b) {
                    const std::vector<int64_t> s{2, 24, 8}, v{2, 4, 6, 8};
                    const int x = b.input("x", DType::F32, s);
                    const int h = linear(b, x, s, 8, 59);
                    const int r = b.op("tern::view", {h, b.int_list(v)}, DType::F32, v);
                    const int m = reduce(b, "tern::amax", r, {1}, false, {2, 6, 8});
                    b.output(linear(b, m, {2, 6, 8}, 4, 61));
                    b.output(reduce(b, "tern::amax", h, {-1}, true, {2, 24, 1}));
                    const int one = reduce(b, "tern::amax", m, {1}, true, {2, 1, 8});
                    b.output(reduce(b, "tern::amax", one, {1}, false, {2, 8}));
                  }, 1e-10};
  hiera.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::MaxPool2d), 3u);  // the amax over a dim of 1 a copy
  };
  c.push_back(hiera);
  OpCase cls = {"vit_class_token", [](GraphBuilder& b) {
                  const int t = patches(b, 16, 21);
                  const int token = constant(b, "cls_token", {1, 1, 16}, 23);
                  const int e = cat(b, {token, t}, 1, {1, 5, 16});
                  const int pos = constant(b, "pos", {1, 5, 16}, 24);
                  b.output(linear(b, binary(b, "tern::add", e, pos, {1, 5, 16}), {1, 5, 16}, 8,
                                  25));
                }, 1e-10};
  cls.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Concat), 1u);
  };
  c.push_back(cls);
  c.push_back({"deit_class_and_distillation_tokens", [](GraphBuilder& b) {
                 const int t = patches(b, 8, 27);
                 const int token = constant(b, "cls_token", {1, 1, 8}, 29);
                 const int dist = constant(b, "dist_token", {1, 1, 8}, 30);
                 b.output(linear(b, cat(b, {token, dist, t}, -2, {1, 6, 8}), {1, 6, 8}, 4, 31));
               }, 1e-10});
  c.push_back({"yolos_tokens_on_both_sides", [](GraphBuilder& b) {
                 const int t = patches(b, 8, 33);
                 const int token = constant(b, "cls_token", {1, 1, 8}, 35);
                 const int det = constant(b, "det_tokens", {1, 3, 8}, 36);
                 b.output(linear(b, cat(b, {token, t, det}, 1, {1, 8, 8}), {1, 8, 8}, 4, 37));
               }, 1e-10});
  c.push_back({"nhwc_channel_cat_with_a_constant_part", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 6, 5};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 39);
                 const int k = constant(b, "planes", {1, 2, 6, 5}, 41);
                 const int z = cat(b, {y, k}, 1, {1, 6, 6, 5});
                 b.output(conv(b, z, {1, 6, 6, 5}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 43));
               }, 1e-10});
  // RoCBERT's embeddings: the word embeddings (a copy of the input, read in place) with its
  // shape and pronunciation embeddings (constants) along the last dim: RowConcat nodes with a
  // constant input, which the blob reader once refused (the program did not load).
  OpCase rows = {"row_concat_of_a_copy_and_constants", [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {1, 4, 8});
                   const int c = b.op("tern::clone", {x}, DType::F32, {1, 4, 8});
                   const int k1 = constant(b, "shape_embed", {1, 4, 6}, 53);
                   const int k2 = constant(b, "pronunciation_embed", {1, 4, 5}, 54);
                   const int e = cat(b, {c, k1}, -1, {1, 4, 14});
                   b.output(linear(b, cat(b, {e, k2}, -1, {1, 4, 19}), {1, 4, 19}, 4, 55));
                 }, 1e-10};
  rows.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_GE(count_op(blob, cpu::NodeOp::RowConcat), 1u);
  };
  c.push_back(rows);
  c.push_back({"chain_of_five_parts_three_constant", [](GraphBuilder& b) {
                 const int t = patches(b, 8, 45);
                 const int u = linear(b, t, {1, 4, 8}, 8, 47);
                 const int k1 = constant(b, "k1", {1, 2, 8}, 49);
                 const int k2 = constant(b, "k2", {1, 1, 8}, 50);
                 const int k3 = constant(b, "k3", {1, 3, 8}, 51);
                 b.output(cat(b, {k1, t, k2, k3, u}, 1, {1, 14, 8}));
               }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceReduceCat, cases());

std::string reason(GraphBuilder& b) {
  return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
}

TEST(CpuReduceCat, WhatTheCompileHalfRefuses) {
  register_all();
  {  // a mean over H and C of an NHWC tensor
    GraphBuilder b;
    const std::vector<int64_t> xs{1, 3, 4, 4};
    const int x = b.input("x", DType::F32, xs);
    const int y = conv(b, x, xs, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 61);
    reduce(b, "tern::mean", y, {1, 2}, true, {1, 1, 1, 4});
    // Over dims 1 and 2 means the spatial dims of a channels-last tensor: y is NHWC.
    EXPECT_NE(reason(b).find("NHWC"), std::string::npos) << reason(b);
  }
  {  // a sum over dims {0, 3}: consecutive neither in NCHW nor in NHWC order ({1, 3} is W, C
     // of an NHWC tensor: nhwc_mean_over_w_and_c above)
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 3, 4, 4});
    reduce(b, "tern::sum", x, {0, 3}, true, {1, 3, 4, 1});
    EXPECT_NE(reason(b).find("not over consecutive dims"), std::string::npos) << reason(b);
  }
  {  // one spatial dim of a conv's (NHWC) output without keepdim: [N, C, W] is not its bytes,
     // and row-major reading would need a plain tensor
    GraphBuilder b;
    const std::vector<int64_t> xs{1, 3, 4, 5};
    const int x = b.input("x", DType::F32, xs);
    const int y = conv(b, x, xs, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 62);
    reduce(b, "tern::mean", y, {2}, false, {1, 4, 5});
    EXPECT_NE(reason(b).find("of an NHWC 4-D tensor"), std::string::npos) << reason(b);
  }
  {  // a repeat that tiles a dim of size > 1
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 2, 8});
    b.op("tern::repeat", {x, b.int_list({1, 3, 1})}, DType::F32, {1, 6, 8});
    EXPECT_NE(reason(b).find("tiles a dim of size > 1"), std::string::npos) << reason(b);
  }
  {  // a mean to a scalar
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {6});
    reduce(b, "tern::mean", x, {0}, false, {});
    EXPECT_NE(reason(b), "");
  }
  {  // constants only
    GraphBuilder b;
    const int k1 = constant(b, "k1", {1, 2, 8}, 63);
    const int k2 = constant(b, "k2", {1, 1, 8}, 64);
    cat(b, {k1, k2}, 1, {1, 3, 8});
    EXPECT_NE(reason(b).find("of constants only"), std::string::npos) << reason(b);
  }
  {  // the chain's first node would read three constants
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 4, 8});
    const int k1 = constant(b, "k1", {1, 1, 8}, 65);
    const int k2 = constant(b, "k2", {1, 1, 8}, 66);
    const int k3 = constant(b, "k3", {1, 1, 8}, 67);
    cat(b, {k1, k2, k3, x}, 1, {1, 7, 8});
    EXPECT_NE(reason(b).find("first three parts are constants"), std::string::npos) << reason(b);
  }
}

}  // namespace
}  // namespace tern::cpu_test
