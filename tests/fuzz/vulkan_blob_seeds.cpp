// Seeds of fuzz_vulkan_blob (see vulkan_blob_seeds.h).
#include "tests/fuzz/vulkan_blob_seeds.h"

#include <cstring>
#include <string>
#include <utility>

#include "backends/vulkan/compile/vulkan_backend_compiler.h"
#include "tests/fuzz/seed_constants.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/quantize.h"

namespace tern::fuzz {
namespace {

using compiler::GraphBuilder;

/// The blob of one vulkan region over every node of `b`'s graph, of `storage` (f32, or f16:
/// `vulkan:f16`'s f16 constants and header).
Seed blob_of(const std::string& name, GraphBuilder& b, uint32_t storage = vulkan::kStorageF32) {
  const int index = b.delegate("vulkan", 0, static_cast<int>(b.num_nodes()) - 1);
  compiler::DelegateRegion& region = b.graph().delegates[static_cast<size_t>(index)];
  return {name + ".blob", compiler::VulkanBackendCompiler(storage).lower(b.graph(), region).blob};
}

/// matmul (linear, addmm), elementwise, unary, softmax, layer_norm, copy, reduce.
Seed dense(uint32_t storage = vulkan::kStorageF32) {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {3, 16});
  const int h = b.op("tern::linear", {x, seed_constant(b, "w", {8, 16}, 1), seed_constant(b, "b", {8}, 2)},
                     DType::F32, {3, 8});
  const int g = b.op("tern::gelu", {h, b.string_value("none")}, DType::F32, {3, 8});
  const int p = b.op("tern::pow", {g, b.double_value(2.0)}, DType::F32, {3, 8});
  const int n = b.op("tern::layer_norm", {p, b.int_list({8}), seed_constant(b, "lw", {8}, 3),
                                          seed_constant(b, "lb", {8}, 4), b.double_value(1e-5)},
                     DType::F32, {3, 8});
  const int t = b.op("tern::transpose", {n, b.int_value(0), b.int_value(1)}, DType::F32, {8, 3});
  const int s = b.op("tern::softmax", {t, b.int_value(-1)}, DType::F32, {8, 3});
  const int a = b.op("tern::addmm", {seed_constant(b, "ab", {5}, 5), s, seed_constant(b, "aw", {3, 5}, 6),
                                     b.double_value(0.5), b.double_value(2.0)},
                     DType::F32, {8, 5});
  const int d = b.op("tern::sub", {a, seed_constant(b, "c", {1, 5}, 7)}, DType::F32, {8, 5});
  b.output(b.op("tern::mean", {d, b.int_list({-1}), b.bool_value(true)}, DType::F32, {8, 1}));
  b.output(h);
  return blob_of(storage == vulkan::kStorageF16 ? "dense_f16" : "dense", b, storage);
}

/// conv2d (grouped), channel_affine (batch_norm), pad, pool2d (max, avg, adaptive), copy, matmul.
Seed convnet() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 4, 8, 8});
  const int c = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {8, 2, 3, 3}, 11), seed_constant(b, "b", {8}, 12),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(2)},
                     DType::F32, {1, 8, 8, 8});
  std::vector<float> var = seed_weights(8, 15);
  for (float& v : var) v += 1.0f;
  const int bn = b.op("tern::batch_norm",
                      {c, seed_constant(b, "g", {8}, 13), seed_constant(b, "be", {8}, 14),
                       seed_constant(b, "rm", {8}, 16), b.constant_f32("rv", {8}, var),
                       b.double_value(1e-5)},
                      DType::F32, {1, 8, 8, 8});
  const int r = b.op("tern::relu", {bn}, DType::F32, {1, 8, 8, 8});
  const int pd = b.op("tern::pad", {r, b.int_list({1, 1, 1, 1}), b.string_value("constant"),
                                    b.double_value(0.5)},
                      DType::F32, {1, 8, 10, 10});
  const int m = b.op("tern::max_pool2d",
                     {pd, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.bool_value(false)},
                     DType::F32, {1, 8, 5, 5});
  const int a = b.op("tern::avg_pool2d",
                     {m, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                      b.bool_value(false), b.bool_value(true), b.none()},
                     DType::F32, {1, 8, 2, 2});
  const int g = b.op("tern::adaptive_avg_pool2d", {a, b.int_list({1, 1})}, DType::F32, {1, 8, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 8});
  b.output(b.op("tern::linear", {f, seed_constant(b, "fw", {5, 8}, 17), b.none()}, DType::F32, {1, 5}));
  return blob_of("convnet", b);
}

/// conv3d (r3d_18's stem: 3x7x7, depth padding, spatial stride 2), relu, mean over the clip;
/// upsample2d (nearest by 2, bilinear with align_corners).
Seed video() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 3, 4, 8, 8});
  const int c = b.op("tern::conv3d",
                     {x, seed_constant(b, "w", {4, 3, 3, 7, 7}, 31), seed_constant(b, "b", {4}, 32),
                      b.int_list({1, 2, 2}), b.int_list({1, 3, 3}), b.int_list({1, 1, 1}),
                      b.int_value(1)},
                     DType::F32, {1, 4, 4, 4, 4});
  const int r = b.op("tern::relu", {c}, DType::F32, {1, 4, 4, 4, 4});
  b.output(b.op("tern::mean", {r, b.int_list({2, 3, 4}), b.bool_value(false)}, DType::F32, {1, 4}));
  const int y = b.input("y", DType::F32, {1, 2, 3, 4});
  const int u = b.op("tern::upsample_nearest2d", {y, b.none(), b.none()}, DType::F32, {1, 2, 6, 8});
  b.output(b.op("tern::upsample_bilinear2d", {u, b.bool_value(true), b.none(), b.none()},
                DType::F32, {1, 2, 9, 11}));
  return blob_of("video", b);
}

/// embedding (i64 indices), attention (causal; a bool mask), where, matmul (batched).
Seed attention() {
  GraphBuilder b("forward");
  const int ids = b.input("ids", DType::I64, {1, 6});
  const int e = b.op("tern::embedding", {seed_constant(b, "table", {10, 8}, 21), ids}, DType::F32, {1, 6, 8});
  const int q = b.op("tern::view", {e, b.int_list({1, 2, 6, 4})}, DType::F32, {1, 2, 6, 4});
  const int o = b.op("tern::scaled_dot_product_attention",
                     {q, q, q, b.none(), b.bool_value(true), b.none()}, DType::F32, {1, 2, 6, 4});
  std::vector<uint8_t> mask(36);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = i % 6 <= i / 6;
  const int mk = b.constant("mask", DType::Bool, {6, 6}, mask);
  const int o2 = b.op("tern::scaled_dot_product_attention",
                      {o, q, q, mk, b.bool_value(false), b.none()}, DType::F32, {1, 2, 6, 4});
  const int kt = b.op("tern::transpose", {q, b.int_value(-1), b.int_value(-2)}, DType::F32,
                      {1, 2, 4, 6});
  const int sc = b.op("tern::matmul", {o2, kt}, DType::F32, {1, 2, 6, 6});
  const int fill = b.constant_f32("fill", {}, {-1e9f});
  const int w = b.op("tern::where", {mk, sc, fill}, DType::F32, {1, 2, 6, 6});
  b.output(b.op("tern::exp", {w}, DType::F32, {1, 2, 6, 6}));
  return blob_of("attention", b);
}

/// quant_embedding (nf4, double quantization) and quant_linear (fp8 2-D tiles, and nf4) after
/// the compiler's quantization pass; pad.
Seed quantized() {
  GraphBuilder b("forward");
  const int ids = b.input("ids", DType::I64, {4});
  const int e = b.op("tern::embedding", {seed_constant(b, "emb.weight", {40, 16}, 31), ids},
                     DType::F32, {4, 16});
  const int h = b.op("tern::linear", {e, seed_constant(b, "fc.weight", {12, 16}, 32),
                                      seed_constant(b, "fc.bias", {12}, 33)},
                     DType::F32, {4, 12});
  const int p = b.op("tern::pad", {h, b.int_list({1, 1}), b.string_value("reflect"), b.none()},
                     DType::F32, {4, 14});
  b.output(b.op("tern::linear", {p, seed_constant(b, "out.weight", {5, 14}, 34), b.none()},
                DType::F32, {4, 5}));
  compiler::ProgramGraph holder;
  holder.methods.push_back(b.graph());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme("nf4:block=32:double");
  options.rules.push_back(compiler::parse_quant_rule("fc.*=fp8_e4m3:block=8x8"));
  options.rules.push_back(compiler::parse_quant_rule("out.*=nf4:block=32"));
  compiler::quantize_program(holder, options);
  b.graph() = holder.methods[0];
  return blob_of("quantized", b);
}

/// A mixture of experts' products (blob version 8): grouped_matmul with f32 experts and int64
/// ends, quant_grouped_linear with nf4 experts and int32 ends (value types 1 and 3).
Seed experts() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {5, 16});
  const int e64 = b.input("ends64", DType::I64, {3});
  const int e32 = b.input("ends32", DType::I32, {2});
  const int h = b.op("tern::grouped_mm", {x, seed_constant(b, "w1", {3, 16, 8}, 41), e64},
                     DType::F32, {5, 8});
  b.output(b.op("tern::grouped_mm", {h, seed_constant(b, "experts.w2", {2, 8, 32}, 42), e32},
                DType::F32, {5, 32}));
  compiler::ProgramGraph holder;
  holder.methods.push_back(b.graph());
  compiler::QuantizeOptions options;
  options.rules.push_back(compiler::parse_quant_rule("experts.*=nf4:block=32"));
  compiler::quantize_program(holder, options);
  b.graph() = holder.methods[0];
  return blob_of("experts", b);
}

/// What blob version 9 added: sin, cos, rms_norm (the layer-norm node's RMS mode), conv1d and
/// a transposed conv (node op 19) — an audio decoder's pieces — and repeat.
Seed audio() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 4, 12});
  const int s = b.op("tern::sin", {x}, DType::F32, {1, 4, 12});
  const int c = b.op("tern::cos", {x}, DType::F32, {1, 4, 12});
  const int m = b.op("tern::mul", {s, c}, DType::F32, {1, 4, 12});
  const int n = b.op("tern::rms_norm", {m, b.int_list({12}), seed_constant(b, "nw", {12}, 31),
                                        b.none()},
                     DType::F32, {1, 4, 12});
  const int k = b.op("tern::conv1d",
                     {n, seed_constant(b, "cw", {6, 4, 3}, 32), seed_constant(b, "cb", {6}, 33),
                      b.int_list({1}), b.int_list({1}), b.int_list({1}), b.int_value(1)},
                     DType::F32, {1, 6, 12});
  const int v = b.op("tern::view", {k, b.int_list({1, 6, 1, 12})}, DType::F32, {1, 6, 1, 12});
  const int t = b.op("tern::conv_transpose2d",
                     {v, seed_constant(b, "tw", {6, 2, 1, 4}, 34), seed_constant(b, "tb", {2}, 35),
                      b.int_list({1, 2}), b.int_list({0, 1}), b.int_list({0, 0}), b.int_value(1),
                      b.int_list({1, 1})},
                     DType::F32, {1, 2, 1, 24});
  b.output(b.op("tern::repeat", {t, b.int_list({2, 1, 2, 1})}, DType::F32, {2, 2, 2, 24}));
  return blob_of("audio", b);
}

/// What blob version 10 added: an i64 constant (a replicate padding's index map, as a causal
/// video VAE exports it) read by index_select, the embedding node with an outer count; cumsum
/// (node op 20), the reduce node's max and argmax kinds, and the argmax's indices held as floats
/// (a codebook lookup with params[4] = 1, an output of value type 5).
Seed index_map() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 3, 4});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 3, 4});
  std::vector<int64_t> map{0, 0, 1, 2, 3, 3};
  std::vector<uint8_t> bytes(map.size() * 8);
  std::memcpy(bytes.data(), map.data(), bytes.size());
  const int m = b.constant("map", DType::I64, {6}, bytes);
  const int s = b.op("tern::index_select", {r, b.int_value(2), m}, DType::F32, {2, 3, 6});
  const int c = b.op("tern::cumsum", {s, b.int_value(1)}, DType::F32, {2, 3, 6});
  b.output(b.op("tern::amax", {c, b.int_list({2}), b.bool_value(true)}, DType::F32, {2, 3, 1}));
  const int am = b.op("tern::argmax", {c, b.int_value(2), b.bool_value(false)}, DType::I64, {2, 3});
  b.output(b.op("tern::embedding", {seed_constant(b, "book", {6, 4}, 36), am}, DType::F32,
                {2, 3, 4}));
  b.output(am);
  return blob_of("index_map", b);
}

/// Version 10's comparisons, logical ops and where on a computed condition, with a bool input
/// and a bool output (value type 4); version 11's int64 input read only by a cast (type 6).
Seed masks() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {3, 8});
  const int m = b.input("m", DType::Bool, {3, 8});
  const int ids = b.input("attention_mask", DType::I64, {3, 8});
  const int gt = b.op("tern::gt", {x, b.double_value(0.25)}, DType::Bool, {3, 8});
  const int keep = b.op("tern::logical_and", {gt, m}, DType::Bool, {3, 8});
  const int both = b.op("tern::logical_and",
                        {keep, b.op("tern::cast", {ids}, DType::Bool, {3, 8})}, DType::Bool, {3, 8});
  b.output(b.op("tern::where", {both, x, b.double_value(-1.0)}, DType::F32, {3, 8}));
  b.output(b.op("tern::logical_not", {both}, DType::Bool, {3, 8}));
  return blob_of("masks", b);
}

}  // namespace

std::vector<Seed> vulkan_blob_seeds() {
  // dense_f16: the dense graph in f16 storage (header storage 1, 2-byte constants).
  return {dense(),     convnet(), video(), attention(), quantized(), dense(vulkan::kStorageF16),
          experts(),   audio(),    index_map(), masks()};
}

}  // namespace tern::fuzz
