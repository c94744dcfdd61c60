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

int constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> sizes, uint32_t seed,
             float scale = 0.5f) {
  const size_t n = numel(sizes);
  return b.constant_f32(name, std::move(sizes), random_floats(n, seed, -scale, scale));
}

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

// sin and cos of the arguments a diffusion model's timestep embedding and rotary tables take
// (timesteps up to 1000 times frequencies up to 1 — or 1000 times that, AuraFlow's — positions
// times inverse wavelengths), far outside the [-pi, pi] where Vulkan bounds a device's own sin:
// against sin / cos in double of the same f32 argument, within 2 f32 ulps of 1 (2^-22), up to
// |x| = 2.5e7 (the shader reduces the argument by pi/2 in exact Cody-Waite steps).
TEST(VulkanUnaryMath, SinCosOfWideArgumentsMatchDoublePrecision) {
  register_all();
  const int64_t n = 4096;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  b.output(b.op("tern::sin", {x}, DType::F32, {n}));
  b.output(b.op("tern::cos", {x}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<float> args = random_floats(n, 77, -1000.0f, 1000.0f);
  // Near multiples of pi/2 (where the reduction cancels most), tiny, signed zeros, 1e5.
  const float special[] = {0.0f, -0.0f, 1e-20f, -3e-8f, 1.5707964f, 3.1415927f, -4.712389f,
                           6.2831855f, 1000.0f, 999.99994f, 314.15927f, 1e5f, -99999.99f,
                           5e5f, 499999.97f, -1e6f, 1.6e7f, -2.5e7f};
  // Every 7th argument up to +-5e5 (AuraFlow scales its timestep by 1000 before the sines).
  for (size_t i = 1200; i < args.size(); i += 7) args[i] *= 500.0f;
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); ++i) args[i] = special[i];
  for (int64_t i = 0; i < 1000; ++i) args[static_cast<size_t>(100 + i)] = static_cast<float>(i) * 0.7853982f;
  const RunResult r = run_program(pte, graph, {args}, /*disable=*/false);
  ASSERT_EQ(r.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(r.outputs.size(), 2u);
  double worst[2] = {0, 0};
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(args[static_cast<size_t>(i)]);
    const double want[2] = {std::sin(v), std::cos(v)};
    for (int o = 0; o < 2; ++o) {
      const double err = std::fabs(r.outputs[static_cast<size_t>(o)][static_cast<size_t>(i)] - want[o]);
      worst[o] = std::max(worst[o], err);
      EXPECT_LE(err, 2.4e-7) << (o == 0 ? "sin(" : "cos(") << args[static_cast<size_t>(i)] << ")";
    }
  }
  std::printf("sin / cos on %s: worst absolute error %.3g / %.3g\n", vulkan_device_name(),
              worst[0], worst[1]);
  EXPECT_EQ(std::signbit(r.outputs[0][1]), true) << "sin(-0) is -0";
}

// softplus against log1p(exp(x)) in double: relative error in the far negative tail (where
// softplus is e^x, tiny, and log(1 + u) near 1 is what a device's log does worst: the shader
// sums log1p's series there) and around 0, within what Vulkan allows the device's exp.
TEST(VulkanUnaryMath, SoftplusMatchesDoublePrecision) {
  register_all();
  const int64_t n = 2001;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {n});
  b.output(b.op("tern::softplus", {r, b.double_value(1.0), b.double_value(20.0)}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<float> args(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) args[static_cast<size_t>(i)] = -60.0f + 0.04f * static_cast<float>(i);  // -60 .. 20
  const RunResult res = run_program(pte, graph, {args}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = args[static_cast<size_t>(i)];
    const double want = v > 20.0 ? v : std::log1p(std::exp(v));
    const double rel = std::fabs(res.outputs[0][static_cast<size_t>(i)] - want) / want;
    worst = std::max(worst, rel);
    // Vulkan bounds a device's exp to (3 + 2|x|) ulp; the log1p series adds under an ulp.
    EXPECT_LE(rel, (4.0 + 2.0 * std::fabs(v)) * 1.2e-7) << "softplus(" << v << ")";
  }
  std::printf("softplus on %s: worst relative error %.3g\n", vulkan_device_name(), worst);
}

// maximum / minimum with NaN operands: NaN wins (ATen's maximum / minimum, not fmax / fmin),
// otherwise the larger / smaller; expected values by hand.
TEST(VulkanUnaryMath, MaximumMinimumPropagateNaN) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {6});
  const int y = b.input("y", DType::F32, {6});
  const int rx = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {6});
  b.output(b.op("tern::maximum", {rx, y}, DType::F32, {6}));
  b.output(b.op("tern::minimum", {rx, y}, DType::F32, {6}));
  delegate_vulkan(b, 0, 2);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  const float nan = std::nanf("");
  const RunResult r = run_program(pte, graph, {{1.0f, nan, 2.0f, nan, -3.0f, 0.5f},
                                               {nan, 1.0f, -2.0f, nan, -1.0f, 0.5f}}, false);
  ASSERT_EQ(r.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(r.outputs.size(), 2u);
  const float want_max[6] = {nan, nan, 2.0f, nan, -1.0f, 0.5f};
  const float want_min[6] = {nan, nan, -2.0f, nan, -3.0f, 0.5f};
  for (int i = 0; i < 6; ++i) {
    if (std::isnan(want_max[i])) {
      EXPECT_TRUE(std::isnan(r.outputs[0][static_cast<size_t>(i)])) << "max " << i;
      EXPECT_TRUE(std::isnan(r.outputs[1][static_cast<size_t>(i)])) << "min " << i;
    } else {
      EXPECT_EQ(r.outputs[0][static_cast<size_t>(i)], want_max[i]) << "max " << i;
      EXPECT_EQ(r.outputs[1][static_cast<size_t>(i)], want_min[i]) << "min " << i;
    }
  }
}

// amax / amin with NaN: NaN wins (ATen), else the largest / smallest; expected by hand.
TEST(VulkanUnaryMath, AmaxAminPropagateNaN) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {3, 4});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {3, 4});
  b.output(b.op("tern::amax", {r, b.int_list({1}), b.bool_value(false)}, DType::F32, {3}));
  b.output(b.op("tern::amin", {r, b.int_list({1}), b.bool_value(false)}, DType::F32, {3}));
  delegate_vulkan(b, 0, 2);
  const compiler::Graph graph = b.build();
  const float nan = std::nanf("");
  const RunResult res = run_program(testing::compile_graph(graph), graph,
                                    {{nan, 1.0f, 5.0f, -2.0f, 3.0f, -7.0f, nan, 4.0f,
                                      0.5f, -0.5f, 2.5f, 1.5f}}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  EXPECT_TRUE(std::isnan(res.outputs[0][0]));
  EXPECT_TRUE(std::isnan(res.outputs[0][1]));
  EXPECT_EQ(res.outputs[0][2], 2.5f);
  EXPECT_TRUE(std::isnan(res.outputs[1][0]));
  EXPECT_TRUE(std::isnan(res.outputs[1][1]));
  EXPECT_EQ(res.outputs[1][2], -0.5f);
}

// cumsum over a row where a plain f32 running sum drifts (a large first term, then many small
// ones of both signs): every output equals the double running sum rounded to f32, as the
// portable kernel (double accumulator) gives; expected values computed here in double.
TEST(VulkanUnaryMath, CumsumMatchesADoubleAccumulator) {
  register_all();
  const int64_t n = 20000;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {n});
  b.output(b.op("tern::cumsum", {r, b.int_value(0)}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  std::vector<float> xs = random_floats(static_cast<size_t>(n), 77, -0.01f, 0.013f);
  xs[0] = 4096.0f;
  const RunResult res = run_program(testing::compile_graph(graph), graph, {xs}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  double acc = 0.0, plain_worst = 0.0;
  float plain = 0.0f;
  int off = 0;
  for (int64_t k = 0; k < n; ++k) {
    acc += xs[static_cast<size_t>(k)];
    plain += xs[static_cast<size_t>(k)];
    plain_worst = std::max(plain_worst, std::fabs(static_cast<double>(plain) - acc));
    if (res.outputs[0][static_cast<size_t>(k)] != static_cast<float>(acc)) ++off;
  }
  EXPECT_GT(plain_worst, 1e-2);  // the row is one a plain f32 sum gets wrong
  EXPECT_EQ(off, 0) << "outputs differing from the rounded double running sum";
}

/// The program of `b` with every node in one vulkan delegate of `storage` (empty, with a test
/// failure, when a node is not taken).
std::vector<uint8_t> whole_delegate_program(GraphBuilder& b, uint32_t storage) {
  for (size_t k = 0; k < b.num_nodes(); ++k) {
    const std::string why =
        compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[k]);
    if (!why.empty()) {
      ADD_FAILURE() << "node " << k << " (" << b.graph().nodes[k].op << "): " << why;
      return {};
    }
  }
  delegate_vulkan(b, 0, static_cast<int>(b.num_nodes()) - 1, storage);
  return testing::compile_graph(b.build());
}

// Comparisons, logical ops and where on a computed condition (blob version 10): bools are
// 0 / 1 floats inside the delegate, bytes at its edges (a bool input, a bool output). Inputs
// hold equal pairs, NaN and the scalar itself; expected values by hand with C++'s comparisons
// (IEEE: NaN compares unequal), in f32 and f16 storage (inputs exact in f16).
TEST(VulkanConformanceCompare, ComparisonsLogicalOpsAndWhereOnAComputedCondition) {
  register_all();
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int64_t n = 12;
    const int x = b.input("x", DType::F32, {n});
    const int y = b.input("y", DType::F32, {n});
    const int m = b.input("m", DType::Bool, {n});
    const int gt = b.op("tern::gt", {x, y}, DType::Bool, {n});
    const int le = b.op("tern::le", {y, b.double_value(0.0)}, DType::Bool, {n});
    const int not_le = b.op("tern::logical_not", {le}, DType::Bool, {n});
    const int both = b.op("tern::logical_and", {gt, not_le}, DType::Bool, {n});
    const int eq = b.op("tern::eq", {x, b.double_value(0.5)}, DType::Bool, {n});
    const int any = b.op("tern::logical_or", {both, eq}, DType::Bool, {n});
    b.output(b.op("tern::where", {any, x, b.double_value(-8.0)}, DType::F32, {n}));  // 0
    b.output(any);                                                                   // 1
    b.output(b.op("tern::ne", {x, y}, DType::Bool, {n}));                            // 2
    const int lt = b.op("tern::lt", {x, y}, DType::Bool, {n});
    const int ge = b.op("tern::ge", {x, y}, DType::Bool, {n});
    b.output(b.op("tern::where", {lt, x, y}, DType::F32, {n}));                      // 3
    b.output(b.op("tern::where", {ge, x, y}, DType::F32, {n}));                      // 4
    b.output(b.op("tern::where", {m, x, y}, DType::F32, {n}));                       // 5
    const std::vector<uint8_t> pte = whole_delegate_program(b, storage);
    ASSERT_FALSE(pte.empty());
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    const float nan = std::nanf("");
    std::vector<float> xs{1.0f, 2.0f, 0.5f, -1.0f, nan, 3.0f, 0.5f, -2.0f, 4.0f, 0.25f, nan, 7.0f};
    std::vector<float> ys{1.0f, 1.5f, 0.0f, -3.0f, 1.0f, nan, 0.75f, -2.0f, -1.0f, 0.125f, nan, 8.0f};
    std::vector<uint8_t> ms{1, 0, 0, 1, 1, 0, 2, 0, 0, 1, 0, 1};  // any nonzero byte is true
    std::vector<int64_t> sizes{n};
    ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, xs)), Error::Ok);
    ASSERT_EQ(method->set_input(1, testing::f32_view(sizes, ys)), Error::Ok);
    ASSERT_EQ(method->set_input(2, testing::input_view(DType::Bool, sizes, ms)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    auto same = [](float a, float e) { return std::isnan(e) ? std::isnan(a) : a == e; };
    const float* o0 = static_cast<const float*>(method->output(0).get()->data);
    const uint8_t* o1 = static_cast<const uint8_t*>(method->output(1).get()->data);
    const uint8_t* o2 = static_cast<const uint8_t*>(method->output(2).get()->data);
    const float* o3 = static_cast<const float*>(method->output(3).get()->data);
    const float* o4 = static_cast<const float*>(method->output(4).get()->data);
    const float* o5 = static_cast<const float*>(method->output(5).get()->data);
    ASSERT_EQ(method->output(1).get()->dtype, DType::Bool);
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const float a = xs[k], c = ys[k];
      const bool want_any = (a > c && !(c <= 0.0f)) || a == 0.5f;
      EXPECT_TRUE(same(o0[k], want_any ? a : -8.0f)) << storage << " where/any " << k;
      EXPECT_EQ(o1[k], want_any ? 1 : 0) << storage << " any " << k;
      EXPECT_EQ(o2[k], a != c ? 1 : 0) << storage << " ne " << k;
      EXPECT_TRUE(same(o3[k], a < c ? a : c)) << storage << " lt " << k;
      EXPECT_TRUE(same(o4[k], a >= c ? a : c)) << storage << " ge " << k;
      EXPECT_TRUE(same(o5[k], ms[k] != 0 ? a : c)) << storage << " where/m " << k;
    }
  }
}

// argmax / argmin and a codebook lookup by their indices in one delegate (blob version 10:
// the indices held as floats on the device, int64 at the edge): first index of ties, a NaN
// counting as the maximum and the minimum (ATen), the whole tensor for dim None; expected
// values by hand, in f32 and f16 storage.
TEST(VulkanConformanceArgmax, NearestCodeLookupStaysInTheDelegate) {
  register_all();
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 5});
    const int y = b.input("y", DType::F32, {2, 3});
    std::vector<float> book(15);
    for (size_t i = 0; i < 15; ++i) book[i] = static_cast<float>(10 * (i / 3) + i % 3);
    const int cb = b.constant_f32("codebook", {5, 3}, book);
    const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {4, 5});
    const int amax = b.op("tern::argmax", {r, b.int_value(1), b.bool_value(false)}, DType::I64, {4});
    const int amin = b.op("tern::argmin", {r, b.int_value(-1), b.bool_value(false)}, DType::I64, {4});
    b.output(amax);                                                                    // 0
    b.output(b.op("tern::embedding", {cb, amin}, DType::F32, {4, 3}));                 // 1
    b.output(b.op("tern::index_select", {cb, b.int_value(0), amax}, DType::F32, {4, 3}));  // 2
    const int ry = b.op("tern::mul", {y, b.double_value(1.0)}, DType::F32, {2, 3});
    b.output(b.op("tern::argmax", {ry, b.none(), b.bool_value(false)}, DType::I64, {}));   // 3
    const std::vector<uint8_t> pte = whole_delegate_program(b, storage);
    ASSERT_FALSE(pte.empty());
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    const float nan = std::nanf("");
    std::vector<float> xs{1, 3, 3, 0, 2,  nan, 5, nan, 1, 1,  2, -1, -1, 4, 4,  0, 0, 0, 0, 0};
    std::vector<float> ys{1, 7, -2, 7, 0, 3};
    std::vector<int64_t> x_sizes{4, 5}, y_sizes{2, 3};
    ASSERT_EQ(method->set_input(0, testing::f32_view(x_sizes, xs)), Error::Ok);
    ASSERT_EQ(method->set_input(1, testing::f32_view(y_sizes, ys)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    ASSERT_EQ(method->output(0).get()->dtype, DType::I64);
    const int64_t* o0 = static_cast<const int64_t*>(method->output(0).get()->data);
    const float* o1 = static_cast<const float*>(method->output(1).get()->data);
    const float* o2 = static_cast<const float*>(method->output(2).get()->data);
    const int64_t* o3 = static_cast<const int64_t*>(method->output(3).get()->data);
    const int64_t want_max[4] = {1, 0, 3, 0}, want_min[4] = {3, 0, 1, 0};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(o0[i], want_max[i]) << storage << " argmax row " << i;
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(o1[i * 3 + j], static_cast<float>(10 * want_min[i] + j)) << storage << " lookup " << i;
        EXPECT_EQ(o2[i * 3 + j], static_cast<float>(10 * want_max[i] + j)) << storage << " select " << i;
      }
    }
    EXPECT_EQ(o3[0], 1) << storage << " argmax of the whole tensor (first of the tied 7s)";
  }
}

TEST(VulkanConformanceEmbedding, GathersRowsAndRefusesAnOutOfRangeIndex) {
  register_all();
  GraphBuilder b;
  const int idx = b.input("idx", DType::I64, {2, 3});
  const int w = constant(b, "table", {10, 6}, 40);
  const int e = b.op("tern::embedding", {w, idx}, DType::F32, {2, 3, 6});
  b.output(b.op("tern::relu", {e}, DType::F32, {2, 3, 6}));
  ASSERT_EQ(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[0]), "");
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  for (bool disable : {false, true}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    const char* disabled[] = {"vulkan"};
    MethodLoadOptions options;
    if (disable) options.disabled_backends = Span<const char* const>(disabled, 1);
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<int64_t> ids{0, 9, 3, 4, 4, 7}, sizes{2, 3};
    const TensorView view = testing::input_view(DType::I64, sizes, ids);
    ASSERT_EQ(method->set_input(0, view), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    const std::vector<float> got = testing::to_vector(*method->output(0).get());
    const std::vector<float> table(reinterpret_cast<const float*>(graph.values[static_cast<size_t>(w)].data.data()),
                                   reinterpret_cast<const float*>(graph.values[static_cast<size_t>(w)].data.data()) + 60);
    for (size_t r = 0; r < 6; ++r) {  // expected: the table's rows, by hand
      const int64_t row = ids[r];
      for (size_t d = 0; d < 6; ++d) {
        EXPECT_EQ(got[r * 6 + d], std::max(0.0f, table[static_cast<size_t>(row) * 6 + d])) << r;
      }
    }
    for (int64_t bad : {int64_t{10}, int64_t{-1}}) {  // refused as the portable kernel does
      ids[2] = bad;
      ASSERT_EQ(method->set_input(0, view), Error::Ok);
      EXPECT_EQ(method->execute(), Error::InvalidArgument) << "index " << bad;
      if (!disable) {
        EXPECT_NE(std::string(last_error_message()).find("index " + std::to_string(bad)),
                  std::string::npos) << last_error_message();
      }
      ids[2] = 3;
    }
  }
}

// index_select along an inner dim by an index the region reads (made outside it): the
// embedding node with an outer count; expected values by hand (x[o, idx[k], i]); an index out
// of range fails the execute as the portable kernel does.
TEST(VulkanConformanceEmbedding, IndexSelectByAnInputIndexAlongAnInnerDim) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 4, 3});
  const int idx = b.input("idx", DType::I64, {5});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 4, 3});
  b.output(b.op("tern::index_select", {r, b.int_value(1), idx}, DType::F32, {2, 5, 3}));
  const std::vector<uint8_t> pte = whole_delegate_program(b, vulkan::kStorageF32);
  ASSERT_FALSE(pte.empty());
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) + 1.0f;
  std::vector<int64_t> x_sizes{2, 4, 3}, ids{3, 0, 0, 2, 1}, i_sizes{5};
  const TensorView xv = testing::f32_view(x_sizes, xs);
  const TensorView iv = testing::input_view(DType::I64, i_sizes, ids);
  ASSERT_EQ(method->set_input(0, xv), Error::Ok) << last_error_message();
  ASSERT_EQ(method->set_input(1, iv), Error::Ok) << last_error_message();
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  const std::vector<float> got = testing::to_vector(*method->output(0).get());
  ASSERT_EQ(got.size(), 30u);
  for (size_t o = 0; o < 2; ++o) {
    for (size_t k = 0; k < 5; ++k) {
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(got[(o * 5 + k) * 3 + i], xs[(o * 4 + static_cast<size_t>(ids[k])) * 3 + i])
            << o << " " << k << " " << i;
      }
    }
  }
  ids[4] = 4;
  ASSERT_EQ(method->set_input(1, iv), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("index 4"), std::string::npos)
      << last_error_message();
}

TEST(VulkanSupport, RefusesWhatItDoesNotImplement) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 8});
  const int i = b.input("i", DType::I32, {2, 8});
  b.output(b.op("tern::atan", {x}, DType::F32, {2, 8}));                      // not taken
  b.output(b.op("tern::pow", {x, x}, DType::F32, {2, 8}));                    // tensor exponent
  b.output(b.op("tern::div", {x, x, b.string_value("floor")}, DType::F32, {2, 8}));  // rounding
  b.output(b.op("tern::add", {i, i}, DType::I32, {2, 8}));                    // int tensors
  b.output(b.op("tern::pad", {x, b.int_list({1, 1}), b.string_value("replicate"), b.none()},
                DType::F32, {2, 10}));                                        // replicate mode
  b.output(b.op("tern::pad", {x, b.int_list({8, 0}), b.string_value("reflect"), b.none()},
                DType::F32, {2, 16}));                                        // reflect >= size
  // Attention with a bool mask made at run time: the attention node adds a mask (bools as
  // -inf / 0), which a comparison's 0 / 1 floats are not.
  const int q = b.input("q", DType::F32, {1, 4, 8});
  const int mask = b.op("tern::gt", {x, b.double_value(0.0)}, DType::Bool, {2, 8});
  const int m4 = b.op("tern::view", {mask, b.int_list({1, 4, 4})}, DType::Bool, {1, 4, 4});
  const size_t sdpa = b.num_nodes();
  b.output(b.op("tern::scaled_dot_product_attention",
                {q, q, q, m4, b.bool_value(false), b.none()}, DType::F32, {1, 4, 8}));
  EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[sdpa])
                .find("made at run time"),
            std::string::npos);
  for (size_t n = 0; n < b.num_nodes(); ++n) {
    if (n == sdpa - 2 || n == sdpa - 1) continue;  // the comparison and the view are taken
    EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[n]), "")
        << "node " << n;
  }
  // A region of only data movement is not worth a delegate call.
  GraphBuilder v;
  const int y = v.input("y", DType::F32, {2, 8});
  v.output(v.op("tern::view", {y, v.int_list({16})}, DType::F32, {16}));
  EXPECT_FALSE(compiler::VulkanBackendCompiler().accepts_region(v.graph(), {0}));
}

}  // namespace
}  // namespace tern::vulkan_test
