// Seeds of fuzz_cuda_blob (see cuda_blob_seeds.h).
#include "tests/fuzz/cuda_blob_seeds.h"

#include <cstring>
#include <string>
#include <utility>

#include "backends/cuda/compile/cuda_backend_compiler.h"
#include "tests/fuzz/seed_constants.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/quantize.h"

namespace tern::fuzz {
namespace {

using compiler::GraphBuilder;

/// The blob of one cuda region over every node of `b`'s graph.
Seed blob_of(const std::string& name, GraphBuilder& b,
             cuda::ComputeDType compute = cuda::ComputeDType::F32) {
  const int index = b.delegate("cuda", 0, static_cast<int>(b.num_nodes()) - 1);
  compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
  return {name + ".blob", compiler::CudaBackendCompiler(compute).lower(b.graph(), region).blob};
}

/// Gemm (linear, batched matmul with a shared operand, addmm), Binary (broadcast, scalar),
/// Unary, Softmax (both), LayerNorm, Reduce, StridedCopy, views (aliases).
Seed dense() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {3, 16});
  const int h = b.op("tern::linear", {x, seed_constant(b, "w", {8, 16}, 1), seed_constant(b, "b", {8}, 2)},
                     DType::F32, {3, 8});
  const int g = b.op("tern::gelu", {h, b.string_value("tanh")}, DType::F32, {3, 8});
  const int p = b.op("tern::mul", {g, seed_constant(b, "m", {1, 8}, 3)}, DType::F32, {3, 8});
  const int n = b.op("tern::layer_norm", {p, b.int_list({8}), seed_constant(b, "lw", {8}, 4),
                                          seed_constant(b, "lb", {8}, 5), b.double_value(1e-5)},
                     DType::F32, {3, 8});
  const int t = b.op("tern::transpose", {n, b.int_value(0), b.int_value(1)}, DType::F32, {8, 3});
  const int s = b.op("tern::softmax", {t, b.int_value(-1)}, DType::F32, {8, 3});
  const int a = b.op("tern::addmm", {seed_constant(b, "ab", {5}, 6), s, seed_constant(b, "aw", {3, 5}, 7),
                                     b.double_value(1.0), b.double_value(2.0)},
                     DType::F32, {8, 5});
  const int v = b.op("tern::view", {a, b.int_list({2, 4, 5})}, DType::F32, {2, 4, 5});
  const int mm = b.op("tern::matmul", {v, seed_constant(b, "mw", {5, 6}, 8)}, DType::F32, {2, 4, 6});
  const int ls = b.op("tern::log_softmax", {mm, b.int_value(-1)}, DType::F32, {2, 4, 6});
  const int d = b.op("tern::sub", {ls, seed_constant(b, "c", {4, 1}, 9)}, DType::F32, {2, 4, 6});
  b.output(b.op("tern::sum", {d, b.int_list({-1}), b.bool_value(true)}, DType::F32, {2, 4, 1}));
  b.output(b.op("tern::sqrt", {b.op("tern::abs", {h}, DType::F32, {3, 8})}, DType::F32, {3, 8}));
  return blob_of("dense", b);
}

/// Conv2d (im2col, depthwise, 1x1), BatchNorm, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
/// Reduce (mean over (2, 3)), Gemm.
Seed convnet() {
  GraphBuilder b("forward");
  auto conv = [&](int x, int64_t cin, int64_t cout, int64_t k, int64_t groups, int64_t hw,
                  uint32_t seed) {
    return b.op("tern::conv2d",
                {x, seed_constant(b, "w", {cout, cin / groups, k, k}, seed),
                 seed_constant(b, "b", {cout}, seed + 1), b.int_list({1, 1}),
                 b.int_list({k / 2, k / 2}), b.int_list({1, 1}), b.int_value(groups)},
                DType::F32, {1, cout, hw, hw});
  };
  const int x = b.input("x", DType::F32, {1, 4, 8, 8});
  const int c = conv(x, 4, 8, 3, 2, 8, 11);
  std::vector<float> var = seed_weights(8, 15);
  for (float& v : var) v += 1.0f;
  const int bn = b.op("tern::batch_norm",
                      {c, seed_constant(b, "g", {8}, 13), seed_constant(b, "be", {8}, 14),
                       seed_constant(b, "rm", {8}, 16), b.constant_f32("rv", {8}, var),
                       b.double_value(1e-5)},
                      DType::F32, {1, 8, 8, 8});
  const int r = b.op("tern::relu", {bn}, DType::F32, {1, 8, 8, 8});
  const int dw = conv(r, 8, 8, 3, 8, 8, 17);
  const int pw = conv(dw, 8, 8, 1, 1, 8, 19);
  const int m = b.op("tern::max_pool2d",
                     {pw, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.bool_value(false)},
                     DType::F32, {1, 8, 4, 4});
  const int a = b.op("tern::avg_pool2d",
                     {m, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                      b.bool_value(false), b.bool_value(true), b.none()},
                     DType::F32, {1, 8, 2, 2});
  const int g = b.op("tern::adaptive_avg_pool2d", {a, b.int_list({1, 1})}, DType::F32, {1, 8, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 8});
  const int mean = b.op("tern::mean", {m, b.int_list({2, 3}), b.bool_value(false)}, DType::F32, {1, 8});
  const int sum = b.op("tern::add", {f, mean}, DType::F32, {1, 8});
  b.output(b.op("tern::linear", {sum, seed_constant(b, "fw", {5, 8}, 21), b.none()}, DType::F32, {1, 5}));
  return blob_of("convnet", b);
}

/// Embedding (i64 indices), Attention (causal; a bool mask), StridedCopy (transpose).
Seed attention() {
  GraphBuilder b("forward");
  const int ids = b.input("ids", DType::I64, {1, 6});
  const int e = b.op("tern::embedding", {seed_constant(b, "table", {10, 8}, 31), ids}, DType::F32, {1, 6, 8});
  const int r = b.op("tern::view", {e, b.int_list({1, 6, 2, 4})}, DType::F32, {1, 6, 2, 4});
  const int q = b.op("tern::transpose", {r, b.int_value(1), b.int_value(2)}, DType::F32, {1, 2, 6, 4});
  const int o = b.op("tern::scaled_dot_product_attention",
                     {q, q, q, b.none(), b.bool_value(true), b.none()}, DType::F32, {1, 2, 6, 4});
  std::vector<uint8_t> mask(36);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = i % 6 <= i / 6;
  const int mk = b.constant("mask", DType::Bool, {6, 6}, mask);
  b.output(b.op("tern::scaled_dot_product_attention",
                {o, q, q, mk, b.bool_value(false), b.double_value(0.5)}, DType::F32, {1, 2, 6, 4}));
  return blob_of("attention", b);
}

/// Split (StridedCopy per piece) then Concat of the pieces in another order.
Seed split_cat() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 9, 4});
  const int p0 = b.tensor("p0", DType::F32, {2, 4, 4});
  const int p1 = b.tensor("p1", DType::F32, {2, 4, 4});
  const int p2 = b.tensor("p2", DType::F32, {2, 1, 4});
  b.op_into("tern::split", {x, b.int_list({4}), b.int_value(1)}, {p0, p1, p2});
  const int list = b.tensor("l", DType::F32, {});
  b.graph().values[static_cast<size_t>(list)].kind = compiler::Value::Kind::TensorList;
  b.graph().values[static_cast<size_t>(list)].tensors = {p2, p0, p1};
  b.output(b.op("tern::cat", {list, b.int_value(1)}, DType::F32, {2, 9, 4}));
  return blob_of("split_cat", b);
}

/// An f16 blob (Cast nodes at its edges, 16-bit values and constants) with the version-2 ops:
/// GroupNorm, RmsNorm, Upsample2d, Pad, ConvTranspose2d, Conv2d as conv1d, Compare, Where,
/// Cast (i64), IndexSelect, a chained Concat.
Seed version2_f16() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 4, 6, 6});
  const int gn = b.op("tern::group_norm", {x, b.int_value(2), seed_constant(b, "gw", {4}, 41),
                                           seed_constant(b, "gb", {4}, 42), b.double_value(1e-5)},
                      DType::F32, {1, 4, 6, 6});
  const int up = b.op("tern::upsample_bilinear2d", {gn, b.bool_value(false), b.double_value(2.0),
                                                    b.double_value(2.0)},
                      DType::F32, {1, 4, 12, 12});
  const int pd = b.op("tern::pad", {up, b.int_list({1, 1, 2, 0}), b.string_value("reflect"), b.none()},
                      DType::F32, {1, 4, 14, 14});
  const int ct = b.op("tern::conv_transpose2d",
                      {pd, seed_constant(b, "tw", {4, 2, 3, 3}, 43), seed_constant(b, "tb", {4}, 44),
                       b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(2),
                       b.int_list({1, 1})},
                      DType::F32, {1, 4, 28, 28});
  const int flat = b.op("tern::view", {ct, b.int_list({1, 4, 784})}, DType::F32, {1, 4, 784});
  const int c1 = b.op("tern::conv1d", {flat, seed_constant(b, "cw", {4, 2, 3}, 45), b.none(),
                                       b.int_list({2}), b.int_list({1}), b.int_list({1}),
                                       b.int_value(2)},
                      DType::F32, {1, 4, 392});
  const int rn = b.op("tern::rms_norm", {c1, b.int_list({392}), seed_constant(b, "rw", {392}, 46), b.none()},
                      DType::F32, {1, 4, 392});
  const int gt = b.op("tern::gt", {rn, b.double_value(0.0)}, DType::Bool, {1, 4, 392});
  const int wh = b.op("tern::where", {gt, rn, b.double_value(-1.0)}, DType::F32, {1, 4, 392});
  std::vector<uint8_t> idx(3 * 8);
  const int64_t picks[3] = {3, 0, 1};
  std::memcpy(idx.data(), picks, idx.size());
  const int is = b.op("tern::index_select", {wh, b.int_value(1), b.constant("idx", DType::I64, {3}, idx)},
                      DType::F32, {1, 3, 392});
  const int ci = b.op("tern::cast", {is}, DType::I64, {1, 3, 392});
  b.output(b.op("tern::cast", {ci}, DType::F32, {1, 3, 392}));
  const int list = b.tensor("l", DType::F32, {});
  b.graph().values[static_cast<size_t>(list)].kind = compiler::Value::Kind::TensorList;
  b.graph().values[static_cast<size_t>(list)].tensors = std::vector<int>(9, is);
  b.output(b.op("tern::cat", {list, b.int_value(1)}, DType::F32, {1, 27, 392}));
  return blob_of("version2_f16", b, cuda::ComputeDType::F16);
}

/// QuantEmbedding and QuantLinear (a GEMM of 3 rows, a GEMV of 1 with K % 8 == 0) on weights
/// quantized by the compiler's pass with `scheme`.
Seed quantized(const char* name, const char* scheme) {
  GraphBuilder b("forward");
  const int idx = b.input("idx", DType::I64, {3});
  const int e = b.op("tern::embedding", {seed_constant(b, "emb", {20, 40}, 71), idx}, DType::F32, {3, 40});
  const int h = b.op("tern::linear", {e, seed_constant(b, "w1", {24, 40}, 72), seed_constant(b, "b1", {24}, 73)},
                     DType::F32, {3, 24});
  b.output(b.op("tern::linear", {h, seed_constant(b, "w2", {9, 24}, 74), b.none()}, DType::F32, {3, 9}));
  const int x = b.input("x", DType::F32, {1, 40});
  b.output(b.op("tern::linear", {x, seed_constant(b, "w3", {16, 40}, 75), b.none()}, DType::F32, {1, 16}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.graph());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme(scheme);
  compiler::quantize_program(program, options);
  b.graph() = program.methods[0];
  return blob_of(name, b);
}

/// A mixture of experts' products (blob version 5): GroupedMatmul with f32 experts and i64
/// ends, QuantGroupedLinear with nf4 experts and i32 ends.
Seed experts() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {5, 16});
  const int e64 = b.input("ends64", DType::I64, {3});
  const int e32 = b.input("ends32", DType::I32, {2});
  const int h = b.op("tern::grouped_mm", {x, seed_constant(b, "w1", {3, 16, 8}, 81), e64},
                     DType::F32, {5, 8});
  b.output(b.op("tern::grouped_mm", {h, seed_constant(b, "experts.w2", {2, 8, 32}, 82), e32},
                DType::F32, {5, 32}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.graph());
  compiler::QuantizeOptions options;
  options.rules.push_back(compiler::parse_quant_rule("experts.*=nf4:block=32"));
  compiler::quantize_program(program, options);
  b.graph() = program.methods[0];
  return blob_of("experts", b);
}

}  // namespace

std::vector<Seed> cuda_blob_seeds() {
  return {dense(),       convnet(),     attention(),
          split_cat(),   version2_f16(), quantized("quant_nf4_double", "nf4:block=32:double"),
          quantized("quant_fp8_tiles", "fp8_e4m3:block=16x8"), experts()};
}

}  // namespace tern::fuzz
