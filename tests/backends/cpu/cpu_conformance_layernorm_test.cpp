// Conformance of the cpu backend's channels-last tensors and layer norm (ConvNeXt) against the
// portable kernels (harness: cpu_conformance_util.h): layer_norm over the last dim as tern's
// own node (op 25; 2-D, 3-D without weight and bias, widths with and without a lane tail),
// permute(0, 2, 3, 1) of an NHWC tensor and permute(0, 3, 1, 2) back as no-ops inside the
// delegate, ConvNeXt's block (depthwise 7x7 -> permute -> layer norm -> view -> linear -> view
// -> GELU -> view -> linear -> view -> permute -> layer scale -> residual) with its views folded
// into the linears and the GELU into the first GEMM, its downsampling layer norm and head, a
// permuted tensor entering or leaving the region, a linear on a 4-D channels-last tensor, and a
// permute's alias that an activation must not fold through; then what the compile half
// refuses and what the reader checks in op 25.
#include <gtest/gtest.h>

#include <algorithm>
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

constexpr uint32_t kLayerNormOp = static_cast<uint32_t>(cpu::NodeOp::LayerNorm);
constexpr uint32_t kReshapeOp = static_cast<uint32_t>(cpu::NodeOp::Reshape);
constexpr uint32_t kGeluOp = static_cast<uint32_t>(cpu::NodeOp::Gelu);

int permute(GraphBuilder& b, int x, const std::vector<int64_t>& xs, std::vector<int64_t> dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(xs[static_cast<size_t>(d)]);
  return b.op("tern::permute", {x, b.int_list(dims)}, DType::F32, out);
}

/// layer_norm over the last dim of x (shape xs), with weight and bias when `affine`.
int layer_norm(GraphBuilder& b, int x, const std::vector<int64_t>& xs, uint32_t seed,
               bool affine = true) {
  const int64_t c = xs.back();
  const int w = affine ? constant(b, "ln_w" + std::to_string(seed), {c}, seed, 1.5f) : b.none();
  const int bias =
      affine ? constant(b, "ln_b" + std::to_string(seed), {c}, seed + 1, 0.5f) : b.none();
  return b.op("tern::layer_norm", {x, b.int_list({c}), w, bias, b.double_value(1e-6)},
              DType::F32, xs);
}

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "fc_w" + std::to_string(seed), {out, xs.back()}, seed, 0.3f);
  const int bias = constant(b, "fc_b" + std::to_string(seed), {out}, seed + 1, 0.3f);
  std::vector<int64_t> ys = xs;
  ys.back() = out;
  return b.op("tern::linear", {x, w, bias}, DType::F32, ys);
}

int view(GraphBuilder& b, int x, std::vector<int64_t> to) {
  return b.op("tern::view", {x, b.int_list(to)}, DType::F32, to);
}

/// x · rsqrt(mean(x², -1, keepdim) + 1e-5) [· w] as transformers' RMS norms export it: the
/// square as pow(x, 2) or mul(x, x), the weight (a constant [C]) on either side of the last
/// product, or none.
int rms_norm_pieces(GraphBuilder& b, int x, const std::vector<int64_t>& xs, bool weight,
                    bool weight_first, bool square_by_mul, uint32_t seed) {
  std::vector<int64_t> ms = xs;
  ms.back() = 1;
  const int sq = square_by_mul ? b.op("tern::mul", {x, x}, DType::F32, xs)
                               : b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, xs);
  const int m = b.op("tern::mean", {sq, b.int_list({-1}), b.bool_value(true)}, DType::F32, ms);
  const int eps = b.double_value(1e-5);
  const int e = b.op("tern::add", {m, eps}, DType::F32, ms);
  const int r = b.op("tern::rsqrt", {e}, DType::F32, ms);
  const int s = b.op("tern::mul", {x, r}, DType::F32, xs);
  if (!weight) return s;
  const int w = constant(b, "rms_w" + std::to_string(seed), {xs.back()}, seed, 1.0f);
  return b.op("tern::mul", weight_first ? std::vector<int>{w, s} : std::vector<int>{s, w},
              DType::F32, xs);
}

/// ConvNeXt's block on x [n, c, h, w], as torchvision's CNBlock exports (the MLP's linears on
/// [n*h*w, c] views).
int convnext_block(GraphBuilder& b, int x, int64_t n, int64_t c, int64_t h, int64_t w,
                   uint32_t seed) {
  const std::vector<int64_t> xs{n, c, h, w}, cl{n, h, w, c}, cl4{n, h, w, 4 * c};
  const int d = conv(b, x, xs, c, 7, 7, {1, 1}, {3, 3}, {1, 1}, c, true, seed);
  const int p = permute(b, d, xs, {0, 2, 3, 1});
  const int ln = layer_norm(b, p, cl, seed + 2);
  const int f1 = view(b, linear(b, view(b, ln, {n * h * w, c}), {n * h * w, c}, 4 * c, seed + 4),
                      cl4);
  const int g = b.op("tern::gelu", {f1, b.string_value("none")}, DType::F32, cl4);
  const int f2 =
      view(b, linear(b, view(b, g, {n * h * w, 4 * c}), {n * h * w, 4 * c}, c, seed + 6), cl);
  const int back = permute(b, f2, cl, {0, 3, 1, 2});
  const int scale = constant(b, "gamma" + std::to_string(seed), {c, 1, 1}, seed + 8, 1.0f);
  const int scaled = b.op("tern::mul", {scale, back}, DType::F32, xs);
  return b.op("tern::add", {scaled, x}, DType::F32, xs);
}

/// ConvNeXt's LayerNorm2d: permute, layer norm over the channels, permute back.
int layer_norm_2d(GraphBuilder& b, int x, const std::vector<int64_t>& xs, uint32_t seed) {
  const std::vector<int64_t> cl{xs[0], xs[2], xs[3], xs[1]};
  return permute(b, layer_norm(b, permute(b, x, xs, {0, 2, 3, 1}), cl, seed), cl, {0, 3, 1, 2});
}

/// GPT-2's tanh GELU as its exported pieces: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
/// with the sums and the last product in the other order when `swapped` (and another cubic
/// coefficient than 0.044715 for a near miss).
int tanh_gelu_pieces(GraphBuilder& b, int x, const std::vector<int64_t>& s, bool swapped,
                     double cubic = 0.044715) {
  const int half = b.op("tern::mul", {x, b.double_value(0.5)}, DType::F32, s);
  const int cube = b.op("tern::pow", {x, b.double_value(3.0)}, DType::F32, s);
  const int c = b.op("tern::mul", {cube, b.double_value(cubic)}, DType::F32, s);
  const int d = b.op("tern::add", swapped ? std::vector<int>{c, x} : std::vector<int>{x, c},
                     DType::F32, s);
  const int e = b.op("tern::mul", {d, b.double_value(0.7978845608028654)}, DType::F32, s);
  const int t = b.op("tern::tanh", {e}, DType::F32, s);
  const int g = b.op("tern::add", {t, b.double_value(1.0)}, DType::F32, s);
  return b.op("tern::mul", swapped ? std::vector<int>{g, half} : std::vector<int>{half, g},
              DType::F32, s);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase ln2 = {"layer_norm_2d_plain", [](GraphBuilder& b) {
                  const int x = b.input("x", DType::F32, {5, 40});
                  b.output(layer_norm(b, x, {5, 40}, 11));
                },
                1e-10};
  ln2.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kLayerNormOp});
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.num_inputs, 3u);
    EXPECT_FLOAT_EQ(n.fparams[0], 1e-6f);
    EXPECT_EQ(n.fparams[1], 0.0f);
  };
  c.push_back(ln2);
  c.push_back({"layer_norm_3d_no_affine", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 7, 33});
                 b.output(layer_norm(b, x, {2, 7, 33}, 13, /*affine=*/false));
               },
               1e-10});
  c.push_back({"layer_norm_wide_rows", [](GraphBuilder& b) {
                 // 2 * 4096 rows of 96: several pool tasks.
                 const int x = b.input("x", DType::F32, {2, 4096, 96});
                 b.output(layer_norm(b, x, {2, 4096, 96}, 15));
               },
               1e-10});
  // nn.RMSNorm / F.rms_norm (DiffLlama's head norm): op 25 in RMS mode (since version 21),
  // with a weight, without one, eps None (f32's epsilon) and a width with a lane tail, after a
  // linear and on a 4-D plain value.
  OpCase rms = {"rms_norm", [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{2, 6, 40};
                  const int x = b.input("x", DType::F32, xs);
                  const int h = linear(b, x, xs, 40, 17);
                  const int w = constant(b, "rms_w", {40}, 19, 1.5f);
                  b.output(b.op("tern::rms_norm",
                                {h, b.int_list({40}), w, b.double_value(1e-5)}, DType::F32, xs));
                  b.output(b.op("tern::rms_norm", {h, b.int_list({40}), b.none(), b.none()},
                                DType::F32, xs));
                  const std::vector<int64_t> ys{1, 3, 4, 37};
                  const int y = b.input("y", DType::F32, ys);
                  const int yy = b.op("tern::mul", {y, y}, DType::F32, ys);
                  b.output(b.op("tern::rms_norm",
                                {yy, b.int_list({37}), b.none(), b.double_value(1e-6)},
                                DType::F32, ys));
                }, 1e-10};
  rms.check_blob = [](const std::vector<uint8_t>& blob) {
    size_t rms_nodes = 0;
    for (size_t i = 0; i < blob_ops(blob).size(); ++i) {
      const cpu::BlobNode n = blob_node(blob, i);
      if (n.op == kLayerNormOp) {
        EXPECT_EQ(n.params[0], 1u);
        ++rms_nodes;
      }
    }
    EXPECT_EQ(rms_nodes, 3u);
  };
  c.push_back(rms);
  // F.normalize(x, dim=-1) as SwiftFormer's attention exports it (pow 2, sum over the last dim
  // with keepdim, pow 0.5, clamp_min, expand, div), after a linear; and Llama's RMSNorm pieces
  // (pow 2, mean over the last dim, add eps, rsqrt, mul, mul by weight).
  OpCase l2 = {"l2_normalize_and_rms_norm_pieces", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 12, 20}, ns{1, 12, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int h = linear(b, x, xs, 20, 41);
                 const int sq = b.op("tern::pow", {h, b.double_value(2.0)}, DType::F32, xs);
                 const int s = b.op("tern::sum", {sq, b.int_list({-1}), b.bool_value(true)},
                                    DType::F32, ns);
                 const int r = b.op("tern::pow", {s, b.double_value(0.5)}, DType::F32, ns);
                 const int c = b.op("tern::clamp", {r, b.double_value(1e-12), b.none()},
                                    DType::F32, ns);
                 const int e = b.op("tern::expand", {c, b.int_list(xs)}, DType::F32, xs);
                 const int unit = b.op("tern::div", {h, e}, DType::F32, xs);
                 const int sq2 = b.op("tern::pow", {unit, b.double_value(2.0)}, DType::F32, xs);
                 const int m = b.op("tern::mean", {sq2, b.int_list({-1}), b.bool_value(true)},
                                    DType::F32, ns);
                 const int me = b.op("tern::add", {m, b.double_value(1e-6)}, DType::F32, ns);
                 const int rs = b.op("tern::rsqrt", {me}, DType::F32, ns);
                 const int y = b.op("tern::mul", {unit, rs}, DType::F32, xs);
                 const int w = constant(b, "rms_w", {20}, 43, 1.5f);
                 const int yw = b.op("tern::mul", {y, w}, DType::F32, xs);
                 b.output(b.op("tern::sum", {yw, b.int_list({2}), b.bool_value(false)}, DType::F32,
                               {1, 12}));
               }, 1e-10};
  l2.check_blob = [](const std::vector<uint8_t>& blob) {
    // pow 0.5: a square root; the RMS norm's pieces: one layer norm node in RMS mode.
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(cpu::NodeOp::SquareRoot)),
              1);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kLayerNormOp), 1);
  };
  c.push_back(l2);
  OpCase block = {"convnext_block", [](GraphBuilder& b) {
                    // 12x12: the GEMMs are large enough for tern's (not XNNPACK's fc).
                    const int x = b.input("x", DType::F32, {1, 16, 12, 12});
                    b.output(convnext_block(b, x, 1, 16, 12, 12, 21));
                  },
                  1e-10};
  block.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kLayerNormOp), 1);
    // Permutes are aliases and views fold into the linears: no copies; the GELU is the first
    // GEMM's epilogue.
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kReshapeOp), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kGeluOp), 0);
    int expand_with_gelu = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i] != static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)) continue;
      const cpu::BlobNode n = blob_node(blob, static_cast<uint32_t>(i));
      if (n.params[0] == 64 && n.params[2] == 2u) ++expand_with_gelu;
    }
    EXPECT_EQ(expand_with_gelu, 1) << "GELU folded into the expand GEMM";
  };
  c.push_back(block);
  c.push_back({"convnext_two_blocks_downsample_head", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 8, 8};
                 const int x = b.input("x", DType::F32, xs);
                 const int b1 = convnext_block(b, x, 1, 8, 8, 8, 31);
                 const int ln = layer_norm_2d(b, b1, xs, 41);
                 const int down = conv(b, ln, xs, 16, 2, 2, {2, 2}, {0, 0}, {1, 1}, 1, true, 43);
                 const int b2 = convnext_block(b, down, 1, 16, 4, 4, 51);
                 const int m = b.op("tern::mean",
                                    {b2, b.int_list({-1, -2}), b.bool_value(true)},
                                    DType::F32, {1, 16, 1, 1});
                 const int h = layer_norm_2d(b, m, {1, 16, 1, 1}, 61);
                 const int flat = b.op("tern::flatten", {h, b.int_value(1), b.int_value(-1)},
                                       DType::F32, {1, 16});
                 b.output(linear(b, flat, {1, 16}, 10, 63));
               },
               1e-10});
  // The region's input is permuted first and its output is a permuted (channels-last) tensor:
  // the edges copy plain bytes, and the permute that leaves the region is a copy.
  c.push_back({"permuted_edges", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 12, 5, 7}, cl{2, 5, 7, 12};
                 const int x = b.input("x", DType::F32, xs);
                 const int p = permute(b, x, xs, {0, 2, 3, 1});
                 b.output(layer_norm(b, p, cl, 71));
                 const int y = conv(b, x, xs, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 73);
                 b.output(permute(b, y, {2, 6, 5, 7}, {0, 2, 3, 1}));
               },
               1e-10});
  // Mixed layouts: a binary op's operands of both layouts (the one of the other layout than
  // the output's is copied into its order) and a conv2d of a plain tensor (read through an
  // NHWC copy). MobileViTV2's linear self-attention: qkv = conv1x1(x) split into q [1 channel],
  // k, v; scores = softmax(q) over the last dim (plain), context = sum(k * scores, -1), out =
  // conv1x1(relu(v) * context): before, 3 of its 9 attention blocks fell out of the region.
  // With one patch (the last stage of a 64 x 64 image) the last dim is 1.
  for (const int64_t n : {7, 1}) {
  c.push_back({"mobilevitv2_linear_attention_" + std::to_string(n), [n](GraphBuilder& b) {
                 // out_proj big enough for tern's packed GEMM (a pointwise conv as a
                 // fully-connected layer over the pixels), not XNNPACK's.
                 const int64_t d = 64;
                 const std::vector<int64_t> xs{1, 6, 8, n}, one{1, 1, 8, n}, ds{1, d, 8, n},
                     ctx{1, d, 8, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int qkv =
                     conv(b, x, xs, 1 + 2 * d, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false, 101);
                 auto channels = [&](int64_t c0, int64_t c1, const std::vector<int64_t>& to) {
                   return b.op("tern::slice", {qkv, b.int_value(1), b.int_value(c0),
                                               b.int_value(c1), b.int_value(1)},
                               DType::F32, to);
                 };
                 const int q = channels(0, 1, one), k = channels(1, 1 + d, ds),
                           v = channels(1 + d, 1 + 2 * d, ds);
                 const int scores = b.op("tern::softmax", {q, b.int_value(-1)}, DType::F32, one);
                 const int kw = b.op("tern::mul", {k, scores}, DType::F32, ds);
                 const int cv = b.op("tern::sum", {kw, b.int_list({-1}), b.bool_value(true)},
                                     DType::F32, ctx);
                 const int rv = b.op("tern::relu", {v}, DType::F32, ds);
                 // (one patch: the context is already v's shape; the exporter drops the
                 // expand, and the product is plain like the context)
                 const int e =
                     n == 1 ? cv : b.op("tern::expand", {cv, b.int_list(ds)}, DType::F32, ds);
                 const int out = b.op("tern::mul", {rv, e}, DType::F32, ds);
                 b.output(conv(b, out, ds, 512, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 103));
               },
               1e-10});
  }
  // An add of an NHWC tensor and a channels-last one of the same shape, both ways round.
  c.push_back({"add_of_both_layouts", [](GraphBuilder& b) {
                 const std::vector<int64_t> sq{1, 5, 5, 5};
                 const int x = b.input("x", DType::F32, sq);
                 const int y = conv(b, x, sq, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 105);
                 const int p = permute(b, y, sq, {0, 2, 3, 1});
                 const int a = b.op("tern::add", {y, p}, DType::F32, sq);
                 b.output(b.op("tern::sub", {layer_norm(b, p, sq, 107), a}, DType::F32, sq));
               },
               1e-10});
  // A conv2d of a channels-last tensor (a layer norm's output) in the region.
  c.push_back({"conv_of_channels_last", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 4, 6}, cl{1, 4, 6, 8};
                 const int p = permute(b, b.input("x", DType::F32, xs), xs, {0, 2, 3, 1});
                 b.output(conv(b, layer_norm(b, p, cl, 109), cl, 3, 3, 3, {1, 1}, {1, 1},
                               {1, 1}, 1, true, 111));
               },
               1e-10});
  // A linear straight on a 4-D channels-last tensor (no views), then GELU and back.
  c.push_back({"linear_on_channels_last", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 6, 5}, cl{1, 6, 5, 24}, cl2{1, 6, 5, 40};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 81);
                 const int p = permute(b, y, xs, {0, 2, 3, 1});
                 const int g =
                     b.op("tern::gelu", {linear(b, p, cl, 40, 83), b.string_value("tanh")},
                          DType::F32, cl2);
                 b.output(permute(b, linear(b, g, cl2, 24, 85), cl, {0, 3, 1, 2}));
               },
               1e-10});
  // z = linear(p) is read twice: through a permute (w, an alias of z's blob value) by a relu,
  // and by a GELU. The relu must not fold into z's GEMM (the GELU would read clamped values).
  c.push_back({"alias_blocks_activation_fold", [](GraphBuilder& b) {
                 // 64 x 64 x 64: tern's GEMM (a clamp could fold into it).
                 const std::vector<int64_t> xs{1, 64, 8, 8}, cl{1, 8, 8, 64};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 64, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 91);
                 const int z = linear(b, permute(b, y, xs, {0, 2, 3, 1}), cl, 64, 93);
                 const int r = b.op("tern::relu", {permute(b, z, cl, {0, 3, 1, 2})}, DType::F32,
                                    xs);
                 const int g = b.op("tern::gelu", {z, b.string_value("none")}, DType::F32, cl);
                 b.output(b.op("tern::add", {r, permute(b, g, cl, {0, 3, 1, 2})}, DType::F32,
                               xs));
               },
               1e-10});
  // GPT-2's MLP: linear -> the tanh GELU written out -> linear. The eight pieces become the
  // first GEMM's epilogue (activation 3, GELU tanh): two blob nodes, no elementwise passes.
  for (bool swapped : {false, true}) {
    OpCase mlp{swapped ? "gpt2_mlp_tanh_gelu_pieces_swapped" : "gpt2_mlp_tanh_gelu_pieces",
               [swapped](GraphBuilder& b) {
                 const std::vector<int64_t> xs{32, 64}, hs{32, 128};
                 const int x = b.input("x", DType::F32, xs);
                 const int g = tanh_gelu_pieces(b, linear(b, x, xs, 128, 101), hs, swapped);
                 b.output(linear(b, g, hs, 64, 103));
               },
               1e-10};
    mlp.check_blob = [](const std::vector<uint8_t>& blob) {
      const std::vector<uint32_t> ops = blob_ops(blob);
      ASSERT_EQ(ops, std::vector<uint32_t>(2, static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)));
      EXPECT_EQ(blob_node(blob, 0).params[2], 3u) << "GELU tanh in the first GEMM's epilogue";
      EXPECT_EQ(blob_node(blob, 1).params[2], 0u);
    };
    c.push_back(mlp);
  }
  // The GEMM's output is also read outside the pattern (a residual): the pieces become tern's
  // GELU node (tanh form) and the GEMM keeps its output.
  OpCase shared{"tanh_gelu_pieces_input_read_twice",
                [](GraphBuilder& b) {
                  const std::vector<int64_t> xs{32, 64}, hs{32, 128};
                  const int x = b.input("x", DType::F32, xs);
                  const int z = linear(b, x, xs, 128, 105);
                  const int g = tanh_gelu_pieces(b, z, hs, false);
                  b.output(b.op("tern::add", {z, g}, DType::F32, hs));
                },
                1e-10};
  shared.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    ASSERT_EQ(ops.size(), 3u);
    EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
    EXPECT_EQ(blob_node(blob, 0).params[2], 0u);
    EXPECT_EQ(ops[1], kGeluOp);
    EXPECT_EQ(blob_node(blob, 1).params[0], 1u) << "tanh form";
  };
  c.push_back(shared);
  // A constant other than 0.044715 is not the GELU: the pieces stay pieces.
  OpCase other{"tanh_pieces_of_another_function",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{32, 64}, hs{32, 128};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(tanh_gelu_pieces(b, linear(b, x, xs, 128, 107), hs, false, 0.05));
               },
               1e-10};
  other.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kGeluOp), 0);
    EXPECT_EQ(blob_node(blob, 0).params[2], 0u);
    EXPECT_GT(ops.size(), 5u);
  };
  c.push_back(other);
  // RMS norm written out (transformers' LlamaRMSNorm): one op 25 node in RMS mode.
  struct RmsVariant {
    const char* name;
    bool weight, weight_first, square_by_mul;
    std::vector<int64_t> xs;
  };
  for (const RmsVariant& v :
       {RmsVariant{"rms_norm_pieces_weight_first", true, true, false, {2, 7, 64}},
        RmsVariant{"rms_norm_pieces_weight_last_mul_square", true, false, true, {9, 37}},
        RmsVariant{"rms_norm_pieces_no_weight", false, false, false, {3, 2, 5, 3, 24}}}) {
    OpCase rms{v.name,
               [v](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, v.xs);
                 b.output(rms_norm_pieces(b, x, v.xs, v.weight, v.weight_first, v.square_by_mul,
                                          111));
               },
               1e-10};
    rms.check_blob = [](const std::vector<uint8_t>& blob) {
      ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{kLayerNormOp});
      EXPECT_EQ(blob_node(blob, 0).params[0], 1u) << "RMS mode";
      EXPECT_FLOAT_EQ(blob_node(blob, 0).fparams[0], 1e-5f);
    };
    c.push_back(rms);
  }
  // The mean of squares is also an output: the pieces stay pieces (and still match).
  OpCase kept{"rms_norm_pieces_mean_read_twice",
              [](GraphBuilder& b) {
                const std::vector<int64_t> xs{6, 48};
                const int x = b.input("x", DType::F32, xs);
                const int sq = b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, xs);
                const int m = b.op("tern::mean", {sq, b.int_list({-1}), b.bool_value(true)},
                                   DType::F32, {6, 1});
                const int e = b.op("tern::add", {m, b.double_value(1e-5)}, DType::F32, {6, 1});
                const int r = b.op("tern::rsqrt", {e}, DType::F32, {6, 1});
                b.output(b.op("tern::mul", {x, r}, DType::F32, xs));
                b.output(m);
              },
              1e-10};
  kept.check_blob = [](const std::vector<uint8_t>& blob) {
    const std::vector<uint32_t> ops = blob_ops(blob);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), kLayerNormOp), 0);
  };
  c.push_back(kept);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceLayerNorm, cases());

TEST(CpuChannelsLast, WhatTheCompileHalfRefuses) {
  const std::vector<int64_t> xs{1, 8, 4, 4}, cl{1, 4, 4, 8};
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  {  // a nearest upsample of a channels-last tensor (a layer norm's output: plain as its
     // input); a conv2d or a pool of one is taken (it reads an NHWC copy: the mixed-layout
     // cases above, cpu_conformance_cat_pool_test's plain_input_* cases)
    GraphBuilder b;
    const int p = permute(b, b.input("x", DType::F32, xs), xs, {0, 2, 3, 1});
    b.op("tern::upsample_nearest2d",
         {layer_norm(b, p, cl, 3), b.double_value(2.0), b.double_value(2.0)}, DType::F32,
         {1, 4, 8, 16});
    EXPECT_NE(reason(b).find("channels-last"), std::string::npos) << reason(b);
  }
  {  // other permutations are taken since blob version 9 (StridedCopy)
    GraphBuilder b;
    permute(b, b.input("x", DType::F32, xs), xs, {0, 1, 3, 2});
    EXPECT_EQ(reason(b), "");
  }
  {  // a linear or layer norm over the last dim (W) of an NHWC tensor (a conv reads it too)
    GraphBuilder b;
    const int x = b.input("x", DType::F32, xs);
    conv(b, x, xs, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 1);
    linear(b, x, xs, 5, 3);
    EXPECT_NE(reason(b).find("NHWC"), std::string::npos) << reason(b);
    layer_norm(b, x, xs, 5);
    EXPECT_NE(reason(b).find("NHWC"), std::string::npos) << reason(b);
  }
  {  // a layer norm over two dims
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {3, 4, 5});
    b.op("tern::layer_norm", {x, b.int_list({4, 5}), b.none(), b.none(), b.double_value(1e-5)},
         DType::F32, {3, 4, 5});
    EXPECT_NE(reason(b).find("last dim alone"), std::string::npos) << reason(b);
  }
}

/// The blob of layer_norm over [5, 40] (one LayerNorm node).
std::vector<uint8_t> ln_blob() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {5, 40});
  b.output(layer_norm(b, x, {5, 40}, 11));
  delegate_cpu(b, 0, 0);
  return b.graph().delegates[0].blob;
}

TEST(CpuLayerNormBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = ln_blob();
  const cpu::BlobNode good = blob_node(blob, 0);
  std::string message;
  ASSERT_EQ(parse(blob, &message), Error::Ok) << message;
  struct Case {
    const char* what;
    std::function<void(cpu::BlobNode&)> mutate;
    const char* expect;
  };
  const Case cases[] = {
      {"eps 0", [](cpu::BlobNode& n) { n.fparams[0] = 0.0f; }, "expected a finite eps > 0"},
      {"eps NaN", [](cpu::BlobNode& n) { n.fparams[0] = std::nanf(""); }, "finite eps"},
      {"fparams[1]", [](cpu::BlobNode& n) { n.fparams[1] = 1.0f; }, "finite eps > 0 and 0"},
      {"a parameter", [](cpu::BlobNode& n) { n.params[3] = 1; }, "unused parameter 3 is 1"},
      {"mode 2", [](cpu::BlobNode& n) { n.params[0] = 2; },
       "mode 2, expected 0 (layer norm) or 1 (RMS norm"},
      {"two inputs",
       [](cpu::BlobNode& n) {
         n.num_inputs = 2;
         n.inputs[2] = cpu::kNoValue;
       },
       "(layer_norm): 2 inputs"},
      {"gamma the data input", [](cpu::BlobNode& n) { n.inputs[1] = n.inputs[0]; },
       "must be a constant"},
      {"beta is x's data",
       [](cpu::BlobNode& n) { std::swap(n.inputs[0], n.inputs[2]); },
       "must not be a constant"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobNode n = good;
    c.mutate(n);
    std::memcpy(bad.data() + node_offset(bad, 0), &n, sizeof(n));
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
  // gamma of the wrong size: the value record of gamma says [39].
  {
    std::vector<uint8_t> bad = blob;
    const uint32_t gamma = good.inputs[1];
    cpu::BlobValue v;
    const size_t at = sizeof(cpu::BlobHeader) + gamma * sizeof(cpu::BlobValue);
    std::memcpy(&v, bad.data() + at, sizeof(v));
    v.dims[0] = 39;
    v.data_bytes = 39 * 4;
    std::memcpy(bad.data() + at, &v, sizeof(v));
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find("gamma value"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tern::cpu_test
