// Conformance of the vulkan backend against the portable kernels, on whatever Vulkan device
// the machine has (lavapipe in CI): every op the backend claims runs as one delegate and as
// its portable fallback on the same random inputs; outputs compare by NMSE (and max relative
// error) under a per-op threshold, are finite, and (driving the backend interface directly)
// nothing is written past an output or into an input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/kernels/portable/dtype_convert.h"
#include "tests/backends/vulkan/vulkan_test_util.h"

namespace tern::vulkan_test {
namespace {

struct OpCase {
  std::string name;
  std::function<void(GraphBuilder&)> build;
  double threshold = 1e-10;  ///< NMSE
};

/// A constant 1-D int64 tensor (an index map).
int i64_constant(GraphBuilder& b, const std::string& name, const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return b.constant(name, DType::I64, {static_cast<int64_t>(values.size())}, std::move(bytes));
}

OpCase unary(const std::string& name, const std::string& op, std::vector<int64_t> shape,
             std::function<std::vector<int>(GraphBuilder&)> attrs = nullptr) {
  return {name, [=](GraphBuilder& b) {
            const int x = b.input("x", DType::F32, shape);
            std::vector<int> args{x};
            if (attrs) {
              for (int a : attrs(b)) args.push_back(a);
            }
            b.output(b.op(op, args, DType::F32, shape));
          }};
}

int conv(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, int64_t k,
         std::vector<int64_t> stride, std::vector<int64_t> pad, std::vector<int64_t> dil,
         int64_t groups, bool bias, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, k, k}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  const int64_t oh = (xs[2] + 2 * pad[0] - dil[0] * (k - 1) - 1) / stride[0] + 1;
  const int64_t ow = (xs[3] + 2 * pad[1] - dil[1] * (k - 1) - 1) / stride[1] + 1;
  return b.op("tern::conv2d",
              {x, w, bv, b.int_list(stride), b.int_list(pad), b.int_list(dil), b.int_value(groups)},
              DType::F32, {xs[0], o, oh, ow});
}

/// conv3d of x [N, C, D, H, W] by a random kernel k = (kd, kh, kw).
int conv3d(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o,
           std::vector<int64_t> k, std::vector<int64_t> stride, std::vector<int64_t> pad,
           std::vector<int64_t> dil, int64_t groups, bool bias, uint32_t seed) {
  const int w = constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, k[0], k[1], k[2]}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  std::vector<int64_t> out{xs[0], o};
  for (size_t d = 0; d < 3; ++d) {
    out.push_back((xs[2 + d] + 2 * pad[d] - dil[d] * (k[d] - 1) - 1) / stride[d] + 1);
  }
  return b.op("tern::conv3d",
              {x, w, bv, b.int_list(stride), b.int_list(pad), b.int_list(dil), b.int_value(groups)},
              DType::F32, out);
}

int tensor_list(GraphBuilder& b, std::vector<int> items) {
  compiler::Value v;
  v.kind = compiler::Value::Kind::TensorList;
  v.tensors = std::move(items);
  b.graph().values.push_back(v);
  return static_cast<int>(b.graph().values.size() - 1);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  const double kMm = 1e-10, kEw = 1e-12, kTr = 1e-10;
  // ---- linear algebra ----
  c.push_back({"linear_bias", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 37});
                 const int w = constant(b, "w", {19, 37}, 1), bias = constant(b, "b", {19}, 2);
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {5, 19}));
               }, kMm});
  c.push_back({"linear_3d_nobias_relu_linear", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 40});
                 const int w = constant(b, "w", {33, 40}, 3), w2 = constant(b, "w2", {7, 33}, 4);
                 const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 3, 33});
                 const int r = b.op("tern::relu", {h}, DType::F32, {2, 3, 33});
                 b.output(b.op("tern::linear", {r, w2, b.none()}, DType::F32, {2, 3, 7}));
               }, kMm});
  c.push_back({"addmm_alpha_beta_row_bias", [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {9, 17});
                 const int w = constant(b, "w", {17, 21}, 5), bias = constant(b, "b", {21}, 6);
                 b.output(b.op("tern::addmm", {bias, a, w, b.double_value(0.5), b.double_value(2.0)},
                               DType::F32, {9, 21}));
               }, kMm});
  c.push_back({"addmm_full_bias", [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {4, 8});
                 const int w = b.input("w", DType::F32, {8, 6});
                 const int bias = b.input("bias", DType::F32, {4, 6});
                 b.output(b.op("tern::addmm", {bias, a, w}, DType::F32, {4, 6}));
               }, kMm});
  c.push_back({"matmul_batched_broadcast_b", [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {2, 3, 19, 24});
                 const int w = b.input("w", DType::F32, {24, 18});
                 b.output(b.op("tern::matmul", {a, w}, DType::F32, {2, 3, 19, 18}));
               }, kMm});
  c.push_back({"matmul_equal_batch_and_vector", [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {3, 5, 16});
                 const int w = b.input("w", DType::F32, {3, 16, 9});
                 b.output(b.op("tern::matmul", {a, w}, DType::F32, {3, 5, 9}));
                 const int v = b.input("v", DType::F32, {16});
                 b.output(b.op("tern::matmul", {a, v}, DType::F32, {3, 5}));
               }, kMm});
  c.push_back({"bmm", [](GraphBuilder& b) {
                 const int a = b.input("a", DType::F32, {4, 33, 20});
                 const int w = b.input("w", DType::F32, {4, 20, 35});
                 b.output(b.op("tern::bmm", {a, w}, DType::F32, {4, 33, 35}));
               }, kMm});
  // Several of matmul_tiled.comp's 64 x 64 blocks, partial ones at the edges, K not a
  // multiple of the 16-wide slab; B transposed (linear) and row-major (matmul), batched.
  c.push_back({"linear_and_matmul_across_blocks", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {70, 45});
                 const int w = constant(b, "w", {130, 45}, 36), bias = constant(b, "b", {130}, 37);
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {70, 130}));
                 const int a = b.input("a", DType::F32, {2, 67, 33});
                 const int m = b.input("m", DType::F32, {2, 33, 129});
                 b.output(b.op("tern::matmul", {a, m}, DType::F32, {2, 67, 129}));
               }, kMm});
  // ---- elementwise ----
  c.push_back({"add_broadcast_alpha_sub_scalar", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4});
                 const int y = b.input("y", DType::F32, {4});
                 const int s = b.op("tern::add", {x, y, b.double_value(0.5)}, DType::F32, {2, 3, 4});
                 b.output(b.op("tern::sub", {s, b.double_value(1.25)}, DType::F32, {2, 3, 4}));
               }, kEw});
  c.push_back({"mul_div_two_sided_broadcast", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 1, 5});
                 const int y = b.input("y", DType::F32, {3, 1});
                 const int m = b.op("tern::mul", {x, y}, DType::F32, {2, 3, 5});
                 const int d = constant(b, "d", {5}, 7);
                 b.output(b.op("tern::div", {m, d}, DType::F32, {2, 3, 5}));
                 b.output(b.op("tern::mul", {x, b.int_value(3)}, DType::F32, {2, 1, 5}));
               }, kEw});
  c.push_back({"where_bool_constant", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 4, 4});
                 std::vector<uint8_t> mask(16);
                 for (int i = 0; i < 4; ++i)
                   for (int j = 0; j < 4; ++j) mask[static_cast<size_t>(i * 4 + j)] = j <= i;
                 const int m = b.constant("mask", DType::Bool, {1, 4, 4}, mask);
                 const int fill = b.constant_f32("fill", {}, {-1e9f});
                 b.output(b.op("tern::where", {m, x, fill}, DType::F32, {2, 4, 4}));
               }, kEw});
  // ---- activations ----
  c.push_back(unary("relu", "tern::relu", {3, 100}));
  c.push_back(unary("hardtanh_relu6", "tern::hardtanh", {3, 100}, [](GraphBuilder& b) {
    return std::vector<int>{b.double_value(0.0), b.double_value(1.0)};
  }));
  c.push_back(unary("clamp_min_only", "tern::clamp", {7, 13}, [](GraphBuilder& b) {
    return std::vector<int>{b.double_value(-0.5), b.none()};
  }));
  c.push_back({"gelu_erf_wide", [](GraphBuilder& b) {  // x * 4: the tails of erf
                 const int x = b.input("x", DType::F32, {4, 300});
                 const int s = b.op("tern::mul", {x, b.double_value(4.0)}, DType::F32, {4, 300});
                 b.output(b.op("tern::gelu", {s, b.string_value("none")}, DType::F32, {4, 300}));
               }, kTr});
  c.push_back(unary("gelu_tanh", "tern::gelu", {4, 300}, [](GraphBuilder& b) {
    return std::vector<int>{b.string_value("tanh")};
  }));
  c.back().threshold = kTr;
  for (const char* op : {"silu", "sigmoid", "hardswish", "hardsigmoid", "tanh"}) {
    c.push_back(unary(op, std::string("tern::") + op, {5, 77}));
    c.back().threshold = kTr;
  }
  for (const char* op : {"neg", "abs", "exp", "erf", "floor", "ceil", "round", "sin", "cos"}) {
    c.push_back({std::string(op), [op](GraphBuilder& b) {  // x * 3: erf's tails, rounding ties
                   const int x = b.input("x", DType::F32, {5, 77});
                   const int s = b.op("tern::mul", {x, b.double_value(3.0)}, DType::F32, {5, 77});
                   b.output(b.op(std::string("tern::") + op, {s}, DType::F32, {5, 77}));
                 }, kTr});
  }
  // log, sqrt, rsqrt, reciprocal and fractional powers of |x| + 0.05 (positive)
  for (const char* op : {"log", "sqrt", "rsqrt", "reciprocal"}) {
    c.push_back({std::string(op), [op](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {5, 77});
                   const int a = b.op("tern::abs", {x}, DType::F32, {5, 77});
                   const int s = b.op("tern::add", {a, b.double_value(0.05)}, DType::F32, {5, 77});
                   b.output(b.op(std::string("tern::") + op, {s}, DType::F32, {5, 77}));
                 }, kTr});
  }
  c.push_back({"pow_scalar_exponents", [](GraphBuilder& b) {  // x^2, x^3 (negative bases too)
                 const int x = b.input("x", DType::F32, {5, 77});
                 b.output(b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, {5, 77}));
                 b.output(b.op("tern::pow", {x, b.double_value(3.0)}, DType::F32, {5, 77}));
                 b.output(b.op("tern::pow", {x, b.int_value(4)}, DType::F32, {5, 77}));
                 const int a = b.op("tern::abs", {x}, DType::F32, {5, 77});
                 const int s = b.op("tern::add", {a, b.double_value(0.05)}, DType::F32, {5, 77});
                 b.output(b.op("tern::pow", {s, b.double_value(0.5)}, DType::F32, {5, 77}));
                 b.output(b.op("tern::pow", {s, b.double_value(-1.5)}, DType::F32, {5, 77}));
               }, kTr});
  c.push_back(unary("leaky_relu", "tern::leaky_relu", {5, 77}, [](GraphBuilder& b) {
    return std::vector<int>{b.double_value(0.2)};
  }));
  c.back().threshold = kEw;
  c.push_back({"rms_norm_decomposed", [](GraphBuilder& b) {  // Llama's RMSNorm as exported
                 const int x = b.input("x", DType::F32, {2, 6, 32});
                 const int p = b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, {2, 6, 32});
                 const int m = b.op("tern::mean", {p, b.int_list({-1}), b.bool_value(true)},
                                    DType::F32, {2, 6, 1});
                 const int e = b.op("tern::add", {m, b.double_value(1e-6)}, DType::F32, {2, 6, 1});
                 const int r = b.op("tern::rsqrt", {e}, DType::F32, {2, 6, 1});
                 const int y = b.op("tern::mul", {x, r}, DType::F32, {2, 6, 32});
                 const int w = constant(b, "w", {32}, 9);
                 b.output(b.op("tern::mul", {y, w}, DType::F32, {2, 6, 32}));
               }, kTr});
  // ---- normalisation ----
  c.push_back(unary("softmax_last_dim", "tern::softmax", {6, 300}, [](GraphBuilder& b) {
    return std::vector<int>{b.int_value(-1)};
  }));
  c.back().threshold = kTr;
  c.push_back(unary("softmax_middle_dim", "tern::softmax", {2, 7, 5}, [](GraphBuilder& b) {
    return std::vector<int>{b.int_value(1)};
  }));
  c.back().threshold = kTr;
  c.push_back({"layer_norm_affine_and_plain", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 4, 300});
                 const int w = constant(b, "w", {300}, 8), bias = constant(b, "b", {300}, 9);
                 b.output(b.op("tern::layer_norm", {x, b.int_list({300}), w, bias, b.double_value(1e-5)},
                               DType::F32, {3, 4, 300}));
                 b.output(b.op("tern::layer_norm", {x, b.int_list({4, 300}), b.none(), b.none(),
                                                    b.double_value(1e-6)}, DType::F32, {3, 4, 300}));
               }, kTr});
  // rms_norm (Llama's, Flux's and SD3's q/k norms): a weight and eps, no weight and eps None
  // (f32's machine epsilon), over two trailing dims; the input offset so the mean is not 0.
  c.push_back({"rms_norm_weighted_and_plain", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 4, 300});
                 const int xo = b.op("tern::add", {x, b.double_value(0.3)}, DType::F32, {3, 4, 300});
                 const int w = constant(b, "w", {300}, 8);
                 b.output(b.op("tern::rms_norm", {xo, b.int_list({300}), w, b.double_value(1e-6)},
                               DType::F32, {3, 4, 300}));
                 b.output(b.op("tern::rms_norm", {xo, b.int_list({4, 300}), b.none(), b.none()},
                               DType::F32, {3, 4, 300}));
               }, kTr});
  // group_norm: affine (8 groups of 2 channels), weight only, and plain (one group of all 6:
  // a row over every channel), and a 3-D input (GroupNorm over [N, C, L]).
  c.push_back({"group_norm_affine_weight_only_and_plain", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 5, 7});
                 const int w = constant(b, "w", {16}, 14), bias = constant(b, "b", {16}, 15);
                 b.output(b.op("tern::group_norm", {x, b.int_value(8), w, bias, b.double_value(1e-5)},
                               DType::F32, {2, 16, 5, 7}));
                 b.output(b.op("tern::group_norm", {x, b.int_value(4), w, b.none(), b.double_value(1e-5)},
                               DType::F32, {2, 16, 5, 7}));
                 b.output(b.op("tern::group_norm", {x, b.int_value(1), b.none(), b.none(),
                                                    b.double_value(1e-6)}, DType::F32, {2, 16, 5, 7}));
                 const int y = b.input("y", DType::F32, {3, 6, 40});
                 b.output(b.op("tern::group_norm", {y, b.int_value(3), constant(b, "w3", {6}, 16), b.none(),
                                                    b.double_value(1e-5)}, DType::F32, {3, 6, 40}));
               }, kTr});
  c.push_back({"batch_norm_eval", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 6, 5, 5});
                 const int w = constant(b, "w", {6}, 10), bias = constant(b, "b", {6}, 11);
                 const int mean = constant(b, "m", {6}, 12);
                 const int var = b.constant_f32("v", {6}, random_floats(6, 13, 0.5f, 2.0f));
                 b.output(b.op("tern::batch_norm", {x, w, bias, mean, var, b.double_value(1e-5)},
                               DType::F32, {2, 6, 5, 5}));
               }, kEw * 100});
  // ---- convolution ----
  c.push_back({"conv3x3_pad1_bias", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 12, 12});
                 b.output(conv(b, x, {1, 8, 12, 12}, 16, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 20));
               }, kMm});
  c.push_back({"conv_stride_pad_dilation_nobias", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 4, 11, 9});
                 b.output(conv(b, x, {2, 4, 11, 9}, 6, 3, {2, 1}, {1, 2}, {2, 1}, 1, false, 22));
               }, kMm});
  c.push_back({"conv_grouped", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 7, 7});
                 b.output(conv(b, x, {1, 8, 7, 7}, 12, 3, {1, 1}, {1, 1}, {1, 1}, 2, true, 24));
               }, kMm});
  // 8 channels per group: conv.comp's 4-channel blocks (ResNeXt's grouped 3x3 convs), with
  // the window clipped at every edge (stride 2, padding 2, dilation 2) and a batch of 2.
  c.push_back({"conv_grouped_channel_blocks_stride_dilation", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 9, 10});
                 b.output(conv(b, x, {2, 16, 9, 10}, 16, 3, {2, 2}, {2, 2}, {2, 2}, 2, true, 32));
                 b.output(conv(b, x, {2, 16, 9, 10}, 12, 5, {1, 2}, {2, 1}, {1, 1}, 4, false, 34));
               }, kMm});
  c.push_back({"conv_depthwise_and_multiplier", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 10, 10});
                 b.output(conv(b, x, {1, 8, 10, 10}, 8, 3, {2, 2}, {1, 1}, {1, 1}, 8, true, 26));
                 b.output(conv(b, x, {1, 8, 10, 10}, 16, 5, {1, 1}, {2, 2}, {1, 1}, 8, false, 28));
               }, kMm});
  c.push_back({"conv1x1_relu6", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 16, 7, 7});
                 const int y = conv(b, x, {1, 16, 7, 7}, 32, 1, {1, 1}, {0, 0}, {1, 1}, 1, true, 30);
                 b.output(b.op("tern::hardtanh", {y, b.double_value(0.0), b.double_value(6.0)},
                               DType::F32, {1, 32, 7, 7}));
               }, kMm});
  // 3-D: r3d_18's stem (3x7x7, stride (1, 2, 2), padding (1, 3, 3)) with the window clipped on
  // every face; r2plus1d's factored pair (1x3x3 then 3x1x1) in 4-channel blocks, grouped, with
  // depth stride and dilation, batch 2; depthwise (one channel per group).
  // conv1d (audio decoders: Oobleck, Dance Diffusion's UNet1D): a strided, padded, dilated
  // conv with bias, then a grouped one without.
  c.push_back({"conv1d_stride_pad_dilation_grouped", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 6, 50});
                 const int w1 = constant(b, "w1", {8, 6, 5}, 51), b1 = constant(b, "b1", {8}, 52);
                 const int y = b.op("tern::conv1d", {x, w1, b1, b.int_list({2}), b.int_list({3}),
                                                     b.int_list({2}), b.int_value(1)},
                                    DType::F32, {2, 8, 24});
                 const int w2 = constant(b, "w2", {4, 4, 3}, 53);
                 b.output(b.op("tern::conv1d", {y, w2, b.none(), b.int_list({1}), b.int_list({1}),
                                                b.int_list({1}), b.int_value(2)},
                               DType::F32, {2, 4, 24}));
               }, kMm});
  // conv_transpose2d: a U-Net's 3x3 stride-2 upsampling with output padding and bias, a
  // grouped one with dilation, and the height-1 form of an audio decoder's ConvTranspose1d.
  c.push_back({"conv_transpose_stride_outpad_grouped_dilated_1d", [](GraphBuilder& b) {
                 auto deconv = [&](int x, int w, int bias, std::vector<int64_t> s,
                                   std::vector<int64_t> p, std::vector<int64_t> op, int64_t g,
                                   std::vector<int64_t> d, std::vector<int64_t> out) {
                   return b.op("tern::conv_transpose2d",
                               {x, w, bias, b.int_list(s), b.int_list(p), b.int_list(op),
                                b.int_value(g), b.int_list(d)}, DType::F32, out);
                 };
                 const int x = b.input("x", DType::F32, {2, 6, 5, 7});
                 const int w1 = constant(b, "w1", {6, 4, 3, 3}, 61), b1 = constant(b, "b1", {4}, 62);
                 b.output(deconv(x, w1, b1, {2, 2}, {1, 1}, {1, 1}, 1, {1, 1}, {2, 4, 10, 14}));
                 const int w2 = constant(b, "w2", {6, 2, 3, 2}, 63);
                 b.output(deconv(x, w2, b.none(), {1, 2}, {2, 0}, {0, 1}, 3, {2, 1}, {2, 6, 5, 15}));
                 const int a = b.input("a", DType::F32, {1, 8, 1, 9});
                 const int w3 = constant(b, "w3", {8, 3, 1, 8}, 64), b3 = constant(b, "b3", {3}, 65);
                 b.output(deconv(a, w3, b3, {1, 4}, {0, 2}, {0, 0}, 1, {1, 1}, {1, 3, 1, 36}));
               }, kMm});
  c.push_back({"conv3d_stem_stride_pad", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 4, 9, 10});
                 b.output(conv3d(b, x, {1, 3, 4, 9, 10}, 8, {3, 7, 7}, {1, 2, 2}, {1, 3, 3},
                                 {1, 1, 1}, 1, true, 40));
               }, kMm});
  c.push_back({"conv3d_factored_grouped_depth_stride_dilation", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 8, 6, 5, 6});
                 const int s = conv3d(b, x, {2, 8, 6, 5, 6}, 16, {1, 3, 3}, {1, 1, 1}, {0, 1, 1},
                                      {1, 1, 1}, 2, false, 42);
                 const int r = b.op("tern::relu", {s}, DType::F32, {2, 16, 6, 5, 6});
                 b.output(conv3d(b, r, {2, 16, 6, 5, 6}, 8, {3, 1, 1}, {2, 1, 1}, {2, 0, 0},
                                 {2, 1, 1}, 2, true, 44));
               }, kMm});
  c.push_back({"conv3d_depthwise", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 6, 5, 7, 7});
                 b.output(conv3d(b, x, {1, 6, 5, 7, 7}, 6, {3, 3, 3}, {2, 2, 2}, {1, 1, 1},
                                 {1, 1, 1}, 6, true, 46));
               }, kMm});
  // ---- upsampling (the portable kernels' index rules) ----
  // Nearest: factor 2 (the o >> 1 shortcut), 5 -> 7 rows (in / out), a given scale 2.5 whose
  // 1 / 2.5 step is not in / out, and a downscale; bilinear with and without align_corners,
  // with a given scale and over a size of one.
  c.push_back({"upsample_nearest", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 5, 4});
                 b.output(b.op("tern::upsample_nearest2d", {x, b.none(), b.none()}, DType::F32,
                               {2, 3, 10, 8}));
                 b.output(b.op("tern::upsample_nearest2d", {x, b.none(), b.none()}, DType::F32,
                               {2, 3, 7, 3}));
                 b.output(b.op("tern::upsample_nearest2d",
                               {x, b.double_value(2.5), b.double_value(2.5)}, DType::F32,
                               {2, 3, 12, 10}));
               }, kEw});
  c.push_back({"upsample_bilinear", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 6, 5});
                 b.output(b.op("tern::upsample_bilinear2d",
                               {x, b.bool_value(false), b.none(), b.none()}, DType::F32,
                               {1, 4, 12, 13}));
                 b.output(b.op("tern::upsample_bilinear2d",
                               {x, b.bool_value(true), b.none(), b.none()}, DType::F32,
                               {1, 4, 11, 1}));
                 b.output(b.op("tern::upsample_bilinear2d",
                               {x, b.bool_value(false), b.double_value(1.5), b.double_value(3.0)},
                               DType::F32, {1, 4, 9, 15}));
               }, kTr});
  // ---- pooling ----
  c.push_back({"max_pool_pad_and_ceil_dilation", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 11, 11});
                 b.output(b.op("tern::max_pool2d", {x, b.int_list({3}), b.int_list({2}), b.int_list({1}),
                                                    b.int_list({1}), b.bool_value(false)},
                               DType::F32, {2, 3, 6, 6}));
                 b.output(b.op("tern::max_pool2d", {x, b.int_list({2}), b.int_list({2}), b.int_list({0}),
                                                    b.int_list({1}), b.bool_value(true)},
                               DType::F32, {2, 3, 6, 6}));
                 b.output(b.op("tern::max_pool2d", {x, b.int_list({3}), b.int_list({1}), b.int_list({0}),
                                                    b.int_list({2}), b.bool_value(false)},
                               DType::F32, {2, 3, 7, 7}));
               }, kEw});
  c.push_back({"avg_pool_pad_rules_and_ceil", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 10, 10});
                 auto pool = [&](bool ceil, bool include, int64_t o) {
                   return b.op("tern::avg_pool2d", {x, b.int_list({3}), b.int_list({2}), b.int_list({1}),
                                                    b.bool_value(ceil), b.bool_value(include), b.none()},
                               DType::F32, {1, 4, o, o});
                 };
                 b.output(pool(false, true, 5));
                 b.output(pool(false, false, 5));
                 b.output(pool(true, true, 6));
                 b.output(pool(true, false, 6));
               }, kEw});
  c.push_back({"adaptive_avg_pool", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 7, 9});
                 b.output(b.op("tern::adaptive_avg_pool2d", {x, b.int_list({1, 1})}, DType::F32, {2, 5, 1, 1}));
                 b.output(b.op("tern::adaptive_avg_pool2d", {x, b.int_list({3, 4})}, DType::F32, {2, 5, 3, 4}));
               }, kEw});
  // ---- reductions ----
  c.push_back({"mean_sum", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 6, 7});
                 b.output(b.op("tern::mean", {x, b.int_list({-1, -2}), b.bool_value(true)}, DType::F32, {2, 5, 1, 1}));
                 b.output(b.op("tern::mean", {x, b.int_list({1}), b.bool_value(false)}, DType::F32, {2, 6, 7}));
                 b.output(b.op("tern::sum", {x, b.int_list({0, 3}), b.bool_value(false)}, DType::F32, {5, 6}));
               }, kEw * 100});
  // amax / amin (blob version 10: the reduce node's kind) over one dim, two dims kept, all.
  c.push_back({"amax_amin", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 6, 7});
                 b.output(b.op("tern::amax", {x, b.int_list({-1}), b.bool_value(false)}, DType::F32, {2, 5, 6}));
                 b.output(b.op("tern::amin", {x, b.int_list({0, 2}), b.bool_value(true)}, DType::F32, {1, 5, 1, 7}));
                 b.output(b.op("tern::amax", {x, b.int_list({}), b.bool_value(false)}, DType::F32, {}));
               }, 0.0});
  // cumsum (blob version 10) along the last dim, a middle one (inner 7) and the first, and
  // along a row of 3000 (Mamba2's segment sums run over its chunk): the shader's compensated
  // f32 sum against the portable kernel's double accumulator.
  c.push_back({"cumsum", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 6, 7});
                 b.output(b.op("tern::cumsum", {x, b.int_value(-1)}, DType::F32, {2, 5, 6, 7}));
                 b.output(b.op("tern::cumsum", {x, b.int_value(2)}, DType::F32, {2, 5, 6, 7}));
                 b.output(b.op("tern::cumsum", {x, b.int_value(0)}, DType::F32, {2, 5, 6, 7}));
                 const int y = b.input("y", DType::F32, {2, 3000});
                 const int e = b.op("tern::exp", {y}, DType::F32, {2, 3000});
                 b.output(b.op("tern::cumsum", {e, b.int_value(1)}, DType::F32, {2, 3000}));
               }, 1e-14});
  // ---- data movement (in a region with compute: a movement-only region is refused) ----
  c.push_back({"view_permute_transpose_expand", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 3, 4});
                 const int v = b.op("tern::view", {r, b.int_list({6, 4})}, DType::F32, {6, 4});
                 b.output(b.op("tern::transpose", {v, b.int_value(0), b.int_value(1)}, DType::F32, {4, 6}));
                 b.output(b.op("tern::permute", {r, b.int_list({2, 0, 1})}, DType::F32, {4, 2, 3}));
                 const int s = b.input("s", DType::F32, {3, 1});
                 b.output(b.op("tern::expand", {s, b.int_list({2, 3, 5})}, DType::F32, {2, 3, 5}));
                 b.output(b.op("tern::flatten", {r, b.int_value(1), b.int_value(-1)}, DType::F32, {2, 12}));
               }, kEw});
  // softplus (Mamba's step size): ATen's defaults on x * 8 (both branches of the threshold
  // and the far negative tail), and beta 2, threshold 5.
  c.push_back({"softplus", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 77});
                 const int s = b.op("tern::mul", {x, b.double_value(30.0)}, DType::F32, {5, 77});
                 b.output(b.op("tern::softplus", {s, b.double_value(1.0), b.double_value(20.0)},
                               DType::F32, {5, 77}));
                 b.output(b.op("tern::softplus", {x, b.double_value(2.0), b.double_value(5.0)},
                               DType::F32, {5, 77}));
               }, kTr});
  // maximum / minimum (RWKV's numerically stable WKV recurrence), broadcasting both ways.
  c.push_back({"maximum_minimum_broadcast", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 1, 5});
                 const int y = b.input("y", DType::F32, {4, 5});
                 b.output(b.op("tern::maximum", {x, y}, DType::F32, {3, 4, 5}));
                 b.output(b.op("tern::minimum", {y, x}, DType::F32, {3, 4, 5}));
               }, kEw});
  // index_select by constant index maps (blob version 10: i64 constants): along an inner dim
  // (outer 6), the last, the first, and a replicate-padding map over a flattened volume as the
  // causal video VAEs export (x.flatten()[m]: each output element one input element).
  c.push_back({"index_select_constant_maps", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 5, 4});
                 const int r = b.op("tern::tanh", {x}, DType::F32, {2, 3, 5, 4});
                 b.output(b.op("tern::index_select", {r, b.int_value(2), i64_constant(b, "m2", {0, 0, 4, 2, 2, 1, 4})},
                               DType::F32, {2, 3, 7, 4}));
                 b.output(b.op("tern::index_select", {r, b.int_value(-1), i64_constant(b, "m3", {3, 0})},
                               DType::F32, {2, 3, 5, 2}));
                 b.output(b.op("tern::index_select", {r, b.int_value(0), i64_constant(b, "m0", {1, 1, 0})},
                               DType::F32, {3, 3, 5, 4}));
                 // Replicate padding of a [2, 3, 4] volume by 1 before each dim: [3, 4, 5].
                 std::vector<int64_t> pad;
                 for (int64_t d = 0; d < 3; ++d) {
                   for (int64_t h = 0; h < 4; ++h) {
                     for (int64_t w = 0; w < 5; ++w) {
                       pad.push_back(std::max<int64_t>(d - 1, 0) * 12 + std::max<int64_t>(h - 1, 0) * 4 +
                                     std::max<int64_t>(w - 1, 0));
                     }
                   }
                 }
                 const int y = b.input("y", DType::F32, {24});
                 const int s = b.op("tern::sigmoid", {y}, DType::F32, {24});
                 b.output(b.op("tern::index_select", {s, b.int_value(0), i64_constant(b, "replicate", pad)},
                               DType::F32, {60}));
               }, kEw});
  // A 3-D pixel shuffle through rank-8 values (LTX-Video's VAE upsampler: reshape to [B, C,
  // p, p, p, F, H, W], permute (0, 1, 5, 2, 6, 3, 7, 4), flatten): values of rank > 6 recorded
  // with their leading dims merged, the permute's copy split over the dims beyond 6; and a
  // rank-7 value leaving the region (its argument compared with the leading dims merged).
  c.push_back({"rank8_pixel_shuffle_3d", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 3, 4, 5});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 16, 3, 4, 5});
                 const int v = b.op("tern::view", {r, b.int_list({2, 2, 2, 2, 2, 3, 4, 5})},
                                    DType::F32, {2, 2, 2, 2, 2, 3, 4, 5});
                 const int p = b.op("tern::permute", {v, b.int_list({0, 1, 5, 2, 6, 3, 7, 4})},
                                    DType::F32, {2, 2, 3, 2, 4, 2, 5, 2});
                 const int f = b.op("tern::view", {p, b.int_list({2, 2, 6, 8, 10})}, DType::F32,
                                    {2, 2, 6, 8, 10});
                 b.output(b.op("tern::tanh", {f}, DType::F32, {2, 2, 6, 8, 10}));
                 const int y = b.input("y", DType::F32, {2, 3, 4, 5, 6, 7});
                 const int e = b.op("tern::exp", {y}, DType::F32, {2, 3, 4, 5, 6, 7});
                 const int u = b.op("tern::unsqueeze", {e, b.int_value(2)}, DType::F32,
                                    {2, 3, 1, 4, 5, 6, 7});
                 b.output(b.op("tern::permute", {u, b.int_list({6, 5, 4, 3, 2, 1, 0})},
                               DType::F32, {7, 6, 5, 4, 1, 3, 2}));
               }, kEw});
  // index_copy by constant indices: a run (YOLO's keypoint head, y[:, 2::3] = sigmoid(...))
  // as one strided copy over a copy of x, and any other order one copy per index.
  c.push_back({"index_copy_constant", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 9, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 9, 4});
                 const int s = b.op("tern::slice", {r, b.int_value(1), b.int_value(2), b.int_value(9),
                                                    b.int_value(3)}, DType::F32, {2, 3, 4});
                 const int sg = b.op("tern::sigmoid", {s}, DType::F32, {2, 3, 4});
                 b.output(b.op("tern::index_copy", {r, b.int_value(1), i64_constant(b, "run", {2, 5, 8}), sg},
                               DType::F32, {2, 9, 4}));
                 const int y = b.input("y", DType::F32, {2, 3, 4});
                 const int t = b.op("tern::tanh", {y}, DType::F32, {2, 3, 4});
                 b.output(b.op("tern::index_copy", {r, b.int_value(-2), i64_constant(b, "order", {7, 0, 3}), t},
                               DType::F32, {2, 9, 4}));
               }, kEw});
  // repeat (Dance Diffusion's UNet1D, LTX-Video's VAE): inner and outer dims, a leading new
  // dim, and a 5-D input whose repeat merges to fewer than 6 copy dims.
  c.push_back({"repeat", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 3, 4});
                 b.output(b.op("tern::repeat", {r, b.int_list({2, 1, 3})}, DType::F32, {4, 3, 12}));
                 b.output(b.op("tern::repeat", {r, b.int_list({2, 2, 1, 2})}, DType::F32, {2, 4, 3, 8}));
                 const int y = b.input("y", DType::F32, {1, 2, 1, 3, 2});
                 const int t = b.op("tern::tanh", {y}, DType::F32, {1, 2, 1, 3, 2});
                 b.output(b.op("tern::repeat", {t, b.int_list({1, 1, 4, 1, 1})}, DType::F32, {1, 2, 4, 3, 2}));
               }, kEw});
  // flip (blob version 7: a Copy with negative source strides): one dim (a bidirectional
  // RNN's sequence), every dim, and a flip read by a matmul.
  c.push_back({"flip", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 5, 3});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 5, 3});
                 b.output(b.op("tern::flip", {r, b.int_list({1})}, DType::F32, {2, 5, 3}));
                 b.output(b.op("tern::flip", {r, b.int_list({-1, 0, 1})}, DType::F32, {2, 5, 3}));
                 const int f = b.op("tern::flip", {x, b.int_list({2})}, DType::F32, {2, 5, 3});
                 const int w = b.constant_f32("w", {4, 3}, random_floats(12, 9));
                 b.output(b.op("tern::linear", {f, w, b.none()}, DType::F32, {2, 5, 4}));
               }, kEw});
  c.push_back({"slice_select_split_cat", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 10, 4});
                 const int r = b.op("tern::relu", {x}, DType::F32, {3, 10, 4});
                 b.output(b.op("tern::slice", {r, b.int_value(1), b.int_value(1), b.int_value(9), b.int_value(3)},
                               DType::F32, {3, 3, 4}));
                 b.output(b.op("tern::slice", {r, b.int_value(-1), b.int_value(-3), b.none(), b.int_value(1)},
                               DType::F32, {3, 10, 3}));
                 b.output(b.op("tern::select", {r, b.int_value(0), b.int_value(-1)}, DType::F32, {10, 4}));
                 const int p0 = b.tensor("p0", DType::F32, {3, 4, 4});
                 const int p1 = b.tensor("p1", DType::F32, {3, 6, 4});
                 b.op_into("tern::split", {r, b.int_list({4, 6}), b.int_value(1)}, {p0, p1});
                 const int y = b.input("y", DType::F32, {3, 2, 4});
                 const int list = tensor_list(b, {p1, y, p0});
                 b.output(b.op("tern::cat", {list, b.int_value(1)}, DType::F32, {3, 12, 4}));
               }, kEw});
  c.push_back({"pad_constant_value_and_crop", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 5, 6});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 3, 5, 6});
                 // Swin's window padding: the trailing dims of an NHWC tensor, zeros.
                 b.output(b.op("tern::pad", {r, b.int_list({0, 0, 0, 2, 0, 3}), b.string_value("constant"),
                                            b.none()},
                               DType::F32, {2, 6, 7, 6}));
                 // Every side, a fill value, and negative pads cropping.
                 b.output(b.op("tern::pad", {r, b.int_list({1, -2, -1, 3, 2, 0}), b.string_value("constant"),
                                            b.double_value(-1.5)},
                               DType::F32, {2, 5, 7, 5}));
               }, kEw});
  c.push_back({"pad_reflect", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 5, 6});
                 const int r = b.op("tern::relu", {x}, DType::F32, {2, 3, 5, 6});
                 b.output(b.op("tern::pad", {r, b.int_list({2, 5, 4, 1}), b.string_value("reflect"), b.none()},
                               DType::F32, {2, 3, 10, 13}));
                 const int v = b.input("v", DType::F32, {3, 7});
                 const int t = b.op("tern::tanh", {v}, DType::F32, {3, 7});
                 b.output(b.op("tern::pad", {t, b.int_list({3, 0}), b.string_value("reflect"), b.none()},
                               DType::F32, {3, 10}));
               }, kEw});
  // ---- attention ----
  c.push_back({"sdpa_causal", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {2, 3, 9, 8});
                 const int k = b.input("k", DType::F32, {2, 3, 9, 8});
                 const int v = b.input("v", DType::F32, {2, 3, 9, 5});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, b.none(), b.bool_value(true), b.none()}, DType::F32, {2, 3, 9, 5}));
               }, kTr});
  c.push_back({"sdpa_float_mask_and_scale", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {2, 7, 16});
                 const int k = b.input("k", DType::F32, {2, 11, 16});
                 const int v = b.input("v", DType::F32, {2, 11, 16});
                 const int m = b.input("m", DType::F32, {7, 11});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, m, b.bool_value(false), b.double_value(0.3)}, DType::F32, {2, 7, 16}));
               }, kTr});
  // Grouped-query attention as the exporter lowers it: q [B, Hkv, rep, L, E], k/v [B, Hkv, 1, S, E],
  // a mask over every head.
  c.push_back({"sdpa_grouped_kv_heads_with_mask", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {2, 2, 3, 5, 8});
                 const int k = b.input("k", DType::F32, {2, 2, 1, 7, 8});
                 const int v = b.input("v", DType::F32, {2, 2, 1, 7, 6});
                 const int m = b.input("m", DType::F32, {2, 1, 1, 5, 7});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, m, b.bool_value(false), b.none()}, DType::F32, {2, 2, 3, 5, 6}));
               }, kTr});
  c.push_back({"sdpa_grouped_causal", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {1, 4, 2, 6, 8});
                 const int k = b.input("k", DType::F32, {1, 4, 1, 6, 8});
                 const int v = b.input("v", DType::F32, {1, 4, 1, 6, 8});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, b.none(), b.bool_value(true), b.none()}, DType::F32, {1, 4, 2, 6, 8}));
               }, kTr});
  c.push_back({"sdpa_bool_mask_constant", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {1, 2, 6, 8});
                 const int k = b.input("k", DType::F32, {1, 2, 6, 8});
                 const int v = b.input("v", DType::F32, {1, 2, 6, 8});
                 std::vector<uint8_t> mask(36);
                 for (size_t i = 0; i < 36; ++i) mask[i] = (i * 7) % 3 != 0 || i % 6 == 0;
                 const int m = b.constant("mask", DType::Bool, {6, 6}, mask);
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, m, b.bool_value(false), b.none()}, DType::F32, {1, 2, 6, 8}));
               }, kTr});
  return c;
}

class VulkanConformance : public ::testing::TestWithParam<OpCase> {};

TEST_P(VulkanConformance, MatchesPortable) {
  register_all();
  const OpCase& tc = GetParam();
  GraphBuilder b;
  tc.build(b);
  for (size_t n = 0; n < b.num_nodes(); ++n) {
    ASSERT_EQ(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[n]), "")
        << "node " << n << " (" << b.graph().nodes[n].op << ")";
  }
  delegate_vulkan(b, 0, static_cast<int>(b.num_nodes()) - 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<std::vector<float>> inputs;
  std::map<int, std::vector<float>> by_id;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const auto& v = graph.values[static_cast<size_t>(graph.inputs[i])];
    inputs.push_back(random_floats(numel(v.sizes), 1000 + static_cast<uint32_t>(i)));
    by_id[graph.inputs[i]] = inputs.back();
  }
  const RunResult delegated = run_program(pte, graph, inputs, /*disable=*/false, 2);
  const RunResult portable = run_program(pte, graph, inputs, /*disable=*/true);
  ASSERT_EQ(delegated.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  ASSERT_EQ(delegated.outputs.size(), graph.outputs.size());
  ASSERT_EQ(portable.outputs.size(), graph.outputs.size());
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    EXPECT_TRUE(all_finite(delegated.outputs[i])) << "output " << i;
    const double e = nmse(delegated.outputs[i], portable.outputs[i]);
    EXPECT_LE(e, tc.threshold) << "output " << i << " NMSE " << e;
    EXPECT_LE(max_rel(delegated.outputs[i], portable.outputs[i]), 1e-4) << "output " << i;
  }
  const std::map<int, std::vector<float>> guarded = run_guarded(graph, by_id);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    auto it = guarded.find(graph.outputs[i]);
    ASSERT_NE(it, guarded.end());
    EXPECT_LE(nmse(it->second, portable.outputs[i]), tc.threshold) << "guarded run, output " << i;
  }
}

// f16 storage (`vulkan:f16`): every value inside the delegate and every constant rounded to
// binary16 (relative error <= 2^-11 each, NMSE ~ 2^-22 / 3 ~ 8e-8 per rounding), arithmetic
// and accumulation in f32. An output's error is a few such roundings (input, weights, each
// intermediate value, output), plus their growth through the op: NMSE <= 1e-5 where a value
// passes through a handful of roundings and short dot products; long reductions (K = 300
// matmuls, 3x3x32 convolutions, layer_norm over rows of a few hundred) and transcendental
// chains (exp amplifies an input's relative error by |x|) get 1e-4. The relative max error of
// the f32 test means nothing for f16 near zero, so the max abs error is bounded instead by
// 2e-2 of the largest |reference|.
double f16_threshold(const std::string& name) {
  static const char* const kLoose[] = {"matmul", "linear", "addmm", "bmm", "conv", "layer_norm",
                                       "sdpa", "softmax", "exp", "pow", "reduce", "mean", "sum",
                                       "batch_norm", "gelu", "mlp", "block"};
  for (const char* k : kLoose) {
    if (name.find(k) != std::string::npos) return 1e-4;
  }
  return 1e-5;
}

TEST_P(VulkanConformance, MatchesPortableInF16Storage) {
  register_all();
  ASSERT_TRUE(vulkan_device_has_f16_storage())
      << "device '" << vulkan_device_name() << "' lacks shaderFloat16 / storageBuffer16BitAccess "
      << "(lavapipe reports both)";
  const OpCase& tc = GetParam();
  GraphBuilder b;
  tc.build(b);
  for (size_t n = 0; n < b.num_nodes(); ++n) {
    const std::string why = compiler::VulkanBackendCompiler::unsupported_reason(
        b.graph(), b.graph().nodes[n], vulkan::kStorageF16);
    if (tc.name == "where_bool_constant") {
      // Its fill -1e9 is beyond f16's range: refused (the node stays on the portable kernels)
      // rather than turned into -infinity.
      EXPECT_NE(why.find("beyond f16's range"), std::string::npos) << why;
      return;
    }
    ASSERT_EQ(why, "") << "node " << n << " (" << b.graph().nodes[n].op << ")";
  }
  delegate_vulkan(b, 0, static_cast<int>(b.num_nodes()) - 1, vulkan::kStorageF16);
  const compiler::Graph graph = b.build();
  ASSERT_EQ(graph.delegates.at(0).compile_specs.size(), 1u);
  EXPECT_EQ(graph.delegates.at(0).compile_specs[0].first, "storage");
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  const bool discontinuous = tc.name == "floor" || tc.name == "ceil" || tc.name == "round";
  std::vector<std::vector<float>> inputs;
  std::map<int, std::vector<float>> by_id;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const auto& v = graph.values[static_cast<size_t>(graph.inputs[i])];
    inputs.push_back(random_floats(numel(v.sizes), 1000 + static_cast<uint32_t>(i)));
    if (discontinuous) {
      // The delegate rounds its inputs to f16 at its edge; give it f16 values, so that only
      // the stored intermediate x * 3 is rounded (below).
      for (float& x : inputs.back()) x = portable::half_to_float(portable::float_to_half(x));
    }
    by_id[graph.inputs[i]] = inputs.back();
  }
  const RunResult delegated = run_program(pte, graph, inputs, /*disable=*/false, 2);
  const RunResult portable = run_program(pte, graph, inputs, /*disable=*/true);
  ASSERT_EQ(delegated.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  ASSERT_EQ(delegated.outputs.size(), graph.outputs.size());
  const double threshold = f16_threshold(tc.name);
  if (discontinuous) {
    // x * 3 is stored as f16 before floor/ceil/round: a product within half an f16 ulp of an
    // integer (or of a tie) rounds onto it, and the result moves by exactly 1 there (f16
    // semantics, not an error of the shader). Every other element is exact.
    size_t moved = 0;
    for (size_t k = 0; k < portable.outputs[0].size(); ++k) {
      const float d = std::fabs(delegated.outputs[0][k] - portable.outputs[0][k]);
      EXPECT_TRUE(d == 0.0f || d == 1.0f) << "element " << k << " differs by " << d;
      if (d != 0.0f) ++moved;
    }
    EXPECT_LE(moved, portable.outputs[0].size() / 100) << moved << " elements moved by 1";
    std::printf("[f16] %s: %zu of %zu elements moved by 1\n", tc.name.c_str(), moved,
                portable.outputs[0].size());
    return;
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    EXPECT_TRUE(all_finite(delegated.outputs[i])) << "output " << i;
    const double e = nmse(delegated.outputs[i], portable.outputs[i]);
    EXPECT_LE(e, threshold) << "output " << i << " NMSE " << e;
    double max_ref = 0, max_err = 0;
    for (size_t k = 0; k < portable.outputs[i].size(); ++k) {
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(portable.outputs[i][k])));
      max_err = std::max(max_err, std::fabs(static_cast<double>(delegated.outputs[i][k]) -
                                            portable.outputs[i][k]));
    }
    EXPECT_LE(max_err, 2e-2 * max_ref) << "output " << i;
    std::printf("[f16] %s output %zu: NMSE %.3g, max abs err / max |ref| %.3g\n", tc.name.c_str(), i,
                e, max_ref > 0 ? max_err / max_ref : 0.0);
  }
  const std::map<int, std::vector<float>> guarded = run_guarded(graph, by_id);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    auto it = guarded.find(graph.outputs[i]);
    ASSERT_NE(it, guarded.end());
    EXPECT_LE(nmse(it->second, portable.outputs[i]), threshold) << "guarded run, output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, VulkanConformance, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tern::vulkan_test
