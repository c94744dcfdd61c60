// Every op the cuda backend claims, run on the device and on the portable kernels (the same
// program with "cuda" disabled) with random inputs; compared by NMSE and max relative error,
// outputs checked finite. Needs a CUDA device: skipped, with the reason, without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/runtime/blob_reader.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace tern::cuda_test {
namespace {

struct Case {
  std::string name;
  std::function<void(GraphBuilder&)> build;  ///< inputs, nodes, outputs
  double max_nmse = 1e-10;  ///< f32; GEMM-based ops accumulate in another order
  /// The blob's compute dtype; 16-bit cases are compared with max_nmse and max_rel (their
  /// storage rounds every intermediate to 11 (f16) or 8 (bf16) significant bits).
  cuda::ComputeDType compute = cuda::ComputeDType::F32;
  double max_rel = 1e-4;
};

/// A constant i64 tensor.
int i64_constant(GraphBuilder& b, const std::string& name, std::vector<int64_t> sizes,
                 const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return b.constant(name, DType::I64, std::move(sizes), std::move(bytes));
}

/// A tensor-list value of `parts` (for cat).
int tensor_list(GraphBuilder& b, std::vector<int> parts) {
  const int list = b.tensor("list", DType::F32, {});
  b.graph().values[static_cast<size_t>(list)].kind = compiler::Value::Kind::TensorList;
  b.graph().values[static_cast<size_t>(list)].tensors = std::move(parts);
  return list;
}

int conv(GraphBuilder& b, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
         int64_t pad, int64_t dil, int64_t groups, std::vector<int64_t> out, bool bias = true) {
  const std::vector<int64_t> ws{cout, cin / groups, k, k};
  const int w = b.constant_f32("w", ws, random_floats(numel(ws), 3, -0.3f, 0.3f));
  const int bv = bias ? b.constant_f32("b", {cout}, random_floats(static_cast<size_t>(cout), 4)) : b.none();
  return b.op("tern::conv2d",
              {x, w, bv, b.int_list({stride, stride}), b.int_list({pad, pad}),
               b.int_list({dil, dil}), b.int_value(groups)},
              DType::F32, out);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  auto unary = [&](const std::string& op, std::vector<int> extra_args_dummy = {}) {
    (void)extra_args_dummy;
    c.push_back({op, [op](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {3, 5, 7});
                   std::vector<int> args{x};
                   if (op == "tern::gelu") args.push_back(b.string_value("none"));
                   b.output(b.op(op, args, DType::F32, {3, 5, 7}));
                 }});
  };
  for (const char* op : {"tern::relu", "tern::gelu", "tern::silu", "tern::sigmoid",
                         "tern::hardswish", "tern::hardsigmoid", "tern::tanh", "tern::exp",
                         "tern::neg", "tern::abs", "tern::clone"}) {
    unary(op);
  }
  c.push_back({"gelu_tanh", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {64});
                 b.output(b.op("tern::gelu", {x, b.string_value("tanh")}, DType::F32, {64}));
               }});
  c.push_back({"hardtanh", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 33});
                 b.output(b.op("tern::hardtanh", {x, b.double_value(0), b.double_value(6)},
                               DType::F32, {2, 33}));
               }});
  c.push_back({"clamp_min_only", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {40});
                 b.output(b.op("tern::clamp", {x, b.double_value(-0.5), b.none()}, DType::F32, {40}));
               }});
  c.push_back({"pow_scalar_rsqrt", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 8});
                 const int p = b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, {2, 8});
                 const int a = b.op("tern::add", {p, b.double_value(1e-6)}, DType::F32, {2, 8});
                 b.output(b.op("tern::rsqrt", {a}, DType::F32, {2, 8}));
               }});
  for (const char* op : {"tern::add", "tern::sub", "tern::mul", "tern::div", "tern::maximum"}) {
    const std::string name = op;
    c.push_back({name + "_broadcast", [name](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {2, 3, 4, 5});
                   const int y = b.input("y", DType::F32, {3, 1, 5});
                   b.output(b.op(name, {x, y}, DType::F32, {2, 3, 4, 5}));
                 }});
  }
  c.push_back({"sub_alpha_scalar", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {17});
                 b.output(b.op("tern::sub", {x, b.double_value(0.25), b.double_value(2.0)},
                               DType::F32, {17}));
               }});
  c.push_back({"linear", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 7, 33});
                 const int w = b.constant_f32("w", {19, 33}, random_floats(19 * 33, 5, -0.3f, 0.3f));
                 const int bias = b.constant_f32("b", {19}, random_floats(19, 6));
                 b.output(b.op("tern::linear", {x, w, bias}, DType::F32, {2, 7, 19}));
               }, 1e-9});
  c.push_back({"linear_no_bias", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {5, 64});
                 const int w = b.constant_f32("w", {128, 64}, random_floats(128 * 64, 5, -0.3f, 0.3f));
                 b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {5, 128}));
               }, 1e-9});
  c.push_back({"bmm", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 6, 10});
                 const int y = b.input("y", DType::F32, {3, 10, 4});
                 b.output(b.op("tern::bmm", {x, y}, DType::F32, {3, 6, 4}));
               }, 1e-9});
  c.push_back({"matmul_shared_b", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 6, 10});
                 const int y = b.input("y", DType::F32, {10, 4});
                 b.output(b.op("tern::matmul", {x, y}, DType::F32, {2, 3, 6, 4}));
               }, 1e-9});
  c.push_back({"addmm", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {6, 10});
                 const int y = b.input("y", DType::F32, {10, 4});
                 const int bias = b.constant_f32("b", {4}, random_floats(4, 8));
                 b.output(b.op("tern::addmm", {bias, x, y, b.int_value(1), b.double_value(0.5)},
                               DType::F32, {6, 4}));
               }, 1e-9});
  c.push_back({"conv3x3_pad", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 8, 9, 9});
                 b.output(conv(b, x, 8, 16, 3, 1, 1, 1, 1, {2, 16, 9, 9}));
               }, 1e-9});
  c.push_back({"conv7x7_stride2", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 32, 32});
                 b.output(conv(b, x, 3, 8, 7, 2, 3, 1, 1, {1, 8, 16, 16}));
               }, 1e-9});
  c.push_back({"conv1x1", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 7, 7});
                 b.output(conv(b, x, 16, 24, 1, 1, 0, 1, 1, {2, 24, 7, 7}, false));
               }, 1e-9});
  c.push_back({"conv_grouped_dilated", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 8, 12, 12});
                 b.output(conv(b, x, 8, 12, 3, 1, 2, 2, 4, {1, 12, 12, 12}));
               }, 1e-9});
  c.push_back({"conv_depthwise_multiplier", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 6, 10, 10});
                 b.output(conv(b, x, 6, 12, 3, 2, 1, 1, 6, {2, 12, 5, 5}));
               }, 1e-10});
  c.push_back({"softmax_last", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 5, 300});
                 b.output(b.op("tern::softmax", {x, b.int_value(-1)}, DType::F32, {4, 5, 300}));
               }});
  c.push_back({"log_softmax", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 10});
                 b.output(b.op("tern::log_softmax", {x, b.int_value(1)}, DType::F32, {3, 10}));
               }});
  c.push_back({"layer_norm", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 9, 96});
                 const int w = b.constant_f32("w", {96}, random_floats(96, 9));
                 const int bias = b.constant_f32("b", {96}, random_floats(96, 10));
                 b.output(b.op("tern::layer_norm", {x, b.int_list({96}), w, bias, b.double_value(1e-5)},
                               DType::F32, {2, 9, 96}));
               }, 1e-9});
  c.push_back({"batch_norm", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 4, 5, 5});
                 auto p = [&](const char* n, uint32_t s, float lo) {
                   return b.constant_f32(n, {4}, random_floats(4, s, lo, 2.0f));
                 };
                 b.output(b.op("tern::batch_norm",
                               {x, p("w", 1, -1), p("b", 2, -1), p("m", 3, -1), p("v", 4, 0.5f),
                                b.double_value(1e-5)},
                               DType::F32, {2, 4, 5, 5}));
               }, 1e-9});
  c.push_back({"max_pool_ceil_dilated", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 11, 11});
                 b.output(b.op("tern::max_pool2d",
                               {x, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                                b.int_list({1, 1}), b.bool_value(true)},
                               DType::F32, {1, 3, 6, 6}));
               }});
  c.push_back({"avg_pool_count_pad", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 9, 9});
                 b.output(b.op("tern::avg_pool2d",
                               {x, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                                b.bool_value(false), b.bool_value(true), b.none()},
                               DType::F32, {2, 3, 5, 5}));
               }});
  c.push_back({"avg_pool_exclude_pad", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 9, 9});
                 b.output(b.op("tern::avg_pool2d",
                               {x, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                                b.bool_value(true), b.bool_value(false), b.none()},
                               DType::F32, {2, 3, 5, 5}));
               }});
  c.push_back({"adaptive_avg_pool", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 4, 10, 7});
                 b.output(b.op("tern::adaptive_avg_pool2d", {x, b.int_list({3, 2})}, DType::F32,
                               {1, 4, 3, 2}));
               }});
  c.push_back({"mean_hw", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 16, 7, 7});
                 b.output(b.op("tern::mean", {x, b.int_list({2, 3}), b.bool_value(true)},
                               DType::F32, {2, 16, 1, 1}));
               }});
  c.push_back({"sum_middle", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 50, 4});
                 b.output(b.op("tern::sum", {x, b.int_list({1}), b.bool_value(false)}, DType::F32,
                               {3, 4}));
               }});
  c.push_back({"permute_view_transpose", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4, 5});
                 const int p = b.op("tern::permute", {x, b.int_list({3, 1, 0, 2})}, DType::F32, {5, 3, 2, 4});
                 const int v = b.op("tern::view", {p, b.int_list({15, 8})}, DType::F32, {15, 8});
                 b.output(b.op("tern::transpose", {v, b.int_value(0), b.int_value(1)}, DType::F32, {8, 15}));
               }});
  c.push_back({"flip", [](GraphBuilder& b) {  // blob version 4: negative copy strides
                 const int x = b.input("x", DType::F32, {2, 7, 3});
                 b.output(b.op("tern::flip", {x, b.int_list({1})}, DType::F32, {2, 7, 3}));
                 b.output(b.op("tern::flip", {x, b.int_list({0, 2, 1})}, DType::F32, {2, 7, 3}));
               }});
  c.push_back({"slice_select_expand", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 10, 3});
                 const int s = b.op("tern::slice", {x, b.int_value(1), b.int_value(1), b.int_value(-1),
                                                    b.int_value(3)},
                                    DType::F32, {4, 3, 3});
                 const int sel = b.op("tern::select", {s, b.int_value(2), b.int_value(-1)}, DType::F32, {4, 3});
                 const int u = b.op("tern::view", {sel, b.int_list({4, 1, 3})}, DType::F32, {4, 1, 3});
                 b.output(b.op("tern::expand", {u, b.int_list({2, 4, 5, 3})}, DType::F32, {2, 4, 5, 3}));
               }});
  c.push_back({"split_cat", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 9, 4});
                 const int p0 = b.tensor("p0", DType::F32, {2, 4, 4});
                 const int p1 = b.tensor("p1", DType::F32, {2, 4, 4});
                 const int p2 = b.tensor("p2", DType::F32, {2, 1, 4});
                 b.op_into("tern::split", {x, b.int_list({4}), b.int_value(1)}, {p0, p1, p2});
                 const int list = b.tensor("l", DType::F32, {});
                 b.graph().values[static_cast<size_t>(list)].kind = compiler::Value::Kind::TensorList;
                 b.graph().values[static_cast<size_t>(list)].tensors = {p2, p0, p1};
                 b.output(b.op("tern::cat", {list, b.int_value(1)}, DType::F32, {2, 9, 4}));
               }});
  c.push_back({"attention_causal", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {2, 3, 20, 16});
                 const int k = b.input("k", DType::F32, {2, 3, 24, 16});
                 const int v = b.input("v", DType::F32, {2, 3, 24, 8});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, k, v, b.none(), b.bool_value(true), b.none()}, DType::F32,
                               {2, 3, 20, 8}));
               }, 1e-9});
  c.push_back({"attention_float_mask_scale", [](GraphBuilder& b) {
                 const int q = b.input("q", DType::F32, {2, 4, 12, 8});
                 const int m = b.input("m", DType::F32, {1, 4, 12, 12});
                 b.output(b.op("tern::scaled_dot_product_attention",
                               {q, q, q, m, b.bool_value(false), b.double_value(0.3)}, DType::F32,
                               {2, 4, 12, 8}));
               }, 1e-9});
  // ---- blob version 2 ops ----
  c.push_back({"group_norm", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 6, 5, 7});
                 const int w = b.constant_f32("w", {6}, random_floats(6, 11));
                 const int bias = b.constant_f32("b", {6}, random_floats(6, 12));
                 b.output(b.op("tern::group_norm", {x, b.int_value(3), w, bias, b.double_value(1e-5)},
                               DType::F32, {2, 6, 5, 7}));
               }, 1e-9});
  c.push_back({"rms_norm_default_eps", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 4, 80});
                 const int w = b.constant_f32("w", {80}, random_floats(80, 13));
                 b.output(b.op("tern::rms_norm", {x, b.int_list({80}), w, b.none()}, DType::F32,
                               {3, 4, 80}));
               }, 1e-9});
  c.push_back({"upsample_nearest_x2_and_fractional", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 5, 4});
                 const int u = b.op("tern::upsample_nearest2d", {x, b.double_value(2.0), b.double_value(2.0)},
                                    DType::F32, {1, 3, 10, 8});
                 b.output(b.op("tern::upsample_nearest2d", {u, b.none(), b.none()}, DType::F32,
                               {1, 3, 13, 7}));
               }});
  for (bool align : {false, true}) {
    c.push_back({align ? "upsample_bilinear_align" : "upsample_bilinear", [align](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {2, 2, 6, 5});
                   b.output(b.op("tern::upsample_bilinear2d",
                                 {x, b.bool_value(align), b.none(), b.none()}, DType::F32,
                                 {2, 2, 11, 9}));
                 }, 1e-10});
  }
  c.push_back({"pad_constant_crop", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 6, 5});
                 b.output(b.op("tern::pad", {x, b.int_list({1, -2, 3, 0}), b.string_value("constant"),
                                             b.double_value(-1.5)},
                               DType::F32, {2, 3, 9, 4}));
               }});
  c.push_back({"pad_reflect", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 2, 5, 6});
                 b.output(b.op("tern::pad", {x, b.int_list({2, 1, 0, 3}), b.string_value("reflect"), b.none()},
                               DType::F32, {1, 2, 8, 9}));
               }});
  c.push_back({"conv1d_grouped", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 8, 20});
                 const int w = b.constant_f32("w", {12, 4, 3}, random_floats(12 * 4 * 3, 14, -0.3f, 0.3f));
                 const int bias = b.constant_f32("b", {12}, random_floats(12, 15));
                 b.output(b.op("tern::conv1d", {x, w, bias, b.int_list({2}), b.int_list({2}),
                                                b.int_list({2}), b.int_value(2)},
                               DType::F32, {2, 12, 10}));
               }, 1e-9});
  c.push_back({"conv1d_depthwise", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 6, 16});
                 const int w = b.constant_f32("w", {6, 1, 5}, random_floats(30, 16, -0.3f, 0.3f));
                 b.output(b.op("tern::conv1d", {x, w, b.none(), b.int_list({1}), b.int_list({2}),
                                                b.int_list({1}), b.int_value(6)},
                               DType::F32, {1, 6, 16}));
               }});
  c.push_back({"conv_transpose2d", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 4, 5, 6});
                 const int w = b.constant_f32("w", {4, 3, 3, 3}, random_floats(108, 17, -0.3f, 0.3f));
                 const int bias = b.constant_f32("b", {6}, random_floats(6, 18));
                 // stride 2, padding 1, output padding 1, groups 2, dilation 1: 10 x 12.
                 b.output(b.op("tern::conv_transpose2d",
                               {x, w, bias, b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}),
                                b.int_value(2), b.int_list({1, 1})},
                               DType::F32, {2, 6, 10, 12}));
               }, 1e-10});
  c.push_back({"conv_transpose2d_dilated", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {1, 3, 4, 4});
                 const int w = b.constant_f32("w", {3, 2, 2, 3}, random_floats(36, 19, -0.3f, 0.3f));
                 // stride 1, padding 0, dilation 2: (4-1) + 2*(2-1) + 1 = 6, (4-1) + 2*2 + 1 = 8.
                 b.output(b.op("tern::conv_transpose2d",
                               {x, w, b.none(), b.int_list({1, 1}), b.int_list({0, 0}), b.int_list({0, 0}),
                                b.int_value(1), b.int_list({2, 2})},
                               DType::F32, {1, 2, 6, 8}));
               }, 1e-10});
  c.push_back({"compare_where_broadcast", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {3, 4, 5});
                 const int y = b.input("y", DType::F32, {4, 1});
                 const int gt = b.op("tern::gt", {x, y}, DType::Bool, {3, 4, 5});
                 const int le = b.op("tern::le", {x, b.double_value(0.25)}, DType::Bool, {3, 4, 5});
                 const int both = b.op("tern::logical_or", {gt, le}, DType::Bool, {3, 4, 5});
                 const int w = b.op("tern::where", {both, x, b.double_value(-3.0)}, DType::F32, {3, 4, 5});
                 const int ne = b.op("tern::logical_not", {gt}, DType::Bool, {3, 4, 5});
                 const int as_f = b.op("tern::cast", {ne}, DType::F32, {3, 4, 5});
                 b.output(b.op("tern::add", {w, as_f}, DType::F32, {3, 4, 5}));
               }});
  c.push_back({"bool_mask_where_scalar_tensors", [](GraphBuilder& b) {  // BERT's extended mask
                 const int x = b.input("x", DType::F32, {2, 16});
                 const int ids = b.op("tern::cast", {x}, DType::I64, {2, 16});  // truncates
                 const int keep = b.op("tern::ne", {ids, b.int_value(0)}, DType::Bool, {2, 16});
                 const int row = b.op("tern::view", {keep, b.int_list({2, 1, 1, 16})}, DType::Bool, {2, 1, 1, 16});
                 const int tri = b.op("tern::ge", {b.op("tern::view", {x, b.int_list({2, 1, 16, 1})}, DType::F32, {2, 1, 16, 1}),
                                                   b.double_value(-0.5)},
                                      DType::Bool, {2, 1, 16, 1});
                 const int m = b.op("tern::logical_and", {tri, row}, DType::Bool, {2, 1, 16, 16});
                 const int zero = b.constant_f32("zero", {}, {0.0f});
                 const int low = b.constant_f32("low", {}, {-1e9f});
                 b.output(b.op("tern::where", {m, zero, low}, DType::F32, {2, 1, 16, 16}));
               }});
  c.push_back({"index_select_and_int_permute", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {4, 6, 3});
                 const int idx = i64_constant(b, "idx", {5}, {5, 0, 2, 2, 4});
                 const int s = b.op("tern::index_select", {x, b.int_value(1), idx}, DType::F32, {4, 5, 3});
                 const int i = b.op("tern::cast", {s}, DType::I32, {4, 5, 3});
                 const int p = b.op("tern::permute", {i, b.int_list({2, 0, 1})}, DType::I32, {3, 4, 5});
                 b.output(b.op("tern::cast", {p}, DType::F32, {3, 4, 5}));
               }});
  c.push_back({"cat_chain_of_ten_and_one_part", [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {2, 3, 4});
                 std::vector<int> parts;
                 for (int k = 0; k < 10; ++k) {
                   parts.push_back(b.op("tern::mul", {x, b.double_value(k + 1.0)}, DType::F32, {2, 3, 4}));
                 }
                 const int cat = b.op("tern::cat", {tensor_list(b, parts), b.int_value(1)}, DType::F32, {2, 30, 4});
                 b.output(b.op("tern::cat", {tensor_list(b, {cat}), b.int_value(0)}, DType::F32, {2, 30, 4}));
               }});
  // ---- f16 / bf16 compute: the same graphs with 16-bit storage, f32 accumulation ----
  const std::vector<Case> f32_cases = c;
  for (const char* name : {"linear", "bmm", "conv3x3_pad", "conv_depthwise_multiplier",
                           "conv_grouped_dilated", "layer_norm", "softmax_last", "mean_hw",
                           "attention_causal", "attention_float_mask_scale", "group_norm",
                           "rms_norm_default_eps", "upsample_bilinear", "pad_reflect",
                           "conv1d_grouped", "conv_transpose2d", "split_cat", "tern::gelu",
                           "tern::add_broadcast", "batch_norm", "max_pool_ceil_dilated",
                           "cat_chain_of_ten_and_one_part"}) {
    // (Not the comparison and cast cases: a value rounded to 16 bits may flip a comparison or
    // a truncation, which no NMSE bound covers.)
    for (const cuda::ComputeDType dt : {cuda::ComputeDType::F16, cuda::ComputeDType::BF16}) {
      for (const Case& base : f32_cases) {
        if (base.name != name) continue;
        Case h = base;
        const bool f16 = dt == cuda::ComputeDType::F16;
        h.name = base.name + (f16 ? "_f16" : "_bf16");
        h.compute = dt;
        h.max_nmse = f16 ? 1e-5 : 3e-4;
        h.max_rel = f16 ? 1e-2 : 5e-2;
        c.push_back(h);
      }
    }
  }
  return c;
}

class CudaConformanceTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override { register_all(); }
};

TEST_P(CudaConformanceTest, MatchesPortable) {
  const Case c = cases()[GetParam()];
  GraphBuilder b;
  c.build(b);
  ASSERT_TRUE(compiler::CudaBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back())
                  .empty())
      << c.name;
  delegate_cuda(b, 0, static_cast<int>(b.num_nodes()) - 1, c.compute);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  // Checked on every machine: the case lowers, and the reader accepts its blob.
  const std::vector<uint8_t>& blob = graph.delegates[0].blob;
  cuda::BlobPlan plan;
  ASSERT_EQ(cuda::parse_blob(Span<const uint8_t>(blob.data(), blob.size()), &plan), Error::Ok)
      << c.name << ": " << last_error_message();
  cuda::free_blob_plan(&plan);
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  const std::vector<std::vector<float>> inputs = random_inputs(graph, 100);
  const RunResult device = run_program(pte, graph, inputs, false, 3);
  const RunResult portable = run_program(pte, graph, inputs, true);
  ASSERT_EQ(device.paths.size(), 1u);
  EXPECT_EQ(device.paths[0], DelegatePath::Backend) << c.name;
  ASSERT_EQ(device.outputs.size(), portable.outputs.size());
  for (size_t i = 0; i < device.outputs.size(); ++i) {
    for (float f : device.outputs[i]) {
      if (!std::isfinite(f)) {
        // Only where the reference is not finite either (log/rsqrt of a negative input).
        bool ref_nonfinite = false;
        for (float r : portable.outputs[i]) ref_nonfinite |= !std::isfinite(r);
        EXPECT_TRUE(ref_nonfinite) << c.name << ": non-finite output";
        break;
      }
    }
    EXPECT_LE(nmse(device.outputs[i], portable.outputs[i]), c.max_nmse) << c.name;
    EXPECT_LE(max_rel(device.outputs[i], portable.outputs[i]), c.max_rel) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaConformanceTest, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string n = cases()[info.param].name;
                           for (char& ch : n) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace tern::cuda_test
