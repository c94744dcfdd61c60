// Seeds of fuzz_cpu_blob (see cpu_blob_seeds.h).
#include "tests/fuzz/cpu_blob_seeds.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"
#include "tests/fuzz/sample_programs.h"
#include "tools/compiler/compile.h"
#include "tests/fuzz/seed_constants.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/quantize.h"

namespace tern::fuzz {
namespace {

using compiler::GraphBuilder;

/// x[1, 3, 16, 16] -> conv 3x3/2 -> relu -> max_pool 3x3/2 -> depthwise conv 3x3 ->
/// hardswish -> avg_pool 2x2/2 -> global pool -> flatten -> linear -> softmax.
compiler::Graph convnet_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 3, 16, 16});
  const int c1 = b.op("tern::conv2d",
                      {x, seed_constant(b, "w1", {8, 3, 3, 3}, 1), seed_constant(b, "b1", {8}, 2),
                       b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
                      DType::F32, {1, 8, 8, 8});
  const int r1 = b.op("tern::relu", {c1}, DType::F32, {1, 8, 8, 8});
  const int p1 = b.op("tern::max_pool2d",
                      {r1, b.int_list({3, 3}), b.int_list({2, 2}), b.int_list({1, 1}),
                       b.int_list({1, 1}), b.bool_value(false)},
                      DType::F32, {1, 8, 4, 4});
  const int d = b.op("tern::conv2d",
                     {p1, seed_constant(b, "wd", {8, 1, 3, 3}, 3), seed_constant(b, "bd", {8}, 4),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(8)},
                     DType::F32, {1, 8, 4, 4});
  const int h = b.op("tern::hardswish", {d}, DType::F32, {1, 8, 4, 4});
  const int a = b.op("tern::avg_pool2d",
                     {h, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                      b.bool_value(false), b.bool_value(true), b.none()},
                     DType::F32, {1, 8, 2, 2});
  const int g =
      b.op("tern::adaptive_avg_pool2d", {a, b.int_list({1, 1})}, DType::F32, {1, 8, 1, 1});
  const int f = b.op("tern::flatten", {g, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 8});
  const int l = b.op("tern::linear", {f, seed_constant(b, "wf", {5, 8}, 5), seed_constant(b, "bf", {5}, 6)},
                     DType::F32, {1, 5});
  b.output(b.op("tern::softmax", {l, b.int_value(-1)}, DType::F32, {1, 5}));
  return b.build();
}

/// x[2, 8] -> linear 16 -> sigmoid -> - c -> / d -> hardtanh(-1, 1) -> linear 4.
compiler::Graph dense_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 8});
  const int l1 =
      b.op("tern::linear", {x, seed_constant(b, "w1", {16, 8}, 11), seed_constant(b, "b1", {16}, 12)},
           DType::F32, {2, 16});
  const int s = b.op("tern::sigmoid", {l1}, DType::F32, {2, 16});
  const int sub =
      b.op("tern::sub", {s, seed_constant(b, "c", {16}, 13), b.int_value(1)}, DType::F32, {2, 16});
  const int div =
      b.op("tern::div", {sub, seed_constant(b, "d", {2, 16}, 14), b.none()}, DType::F32, {2, 16});
  const int t =
      b.op("tern::hardtanh", {div, b.double_value(-1), b.double_value(1)}, DType::F32, {2, 16});
  b.output(b.op("tern::linear", {t, seed_constant(b, "w2", {4, 16}, 15), b.none()}, DType::F32, {2, 4}));
  return b.build();
}

/// x[1, 3, 4, 5] -> conv 1x1 -> pad (constant 0.25) -> sigmoid.
compiler::Graph pad_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 3, 4, 5});
  const int c = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {4, 3, 1, 1}, 21), b.none(), b.int_list({1, 1}),
                      b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 4, 4, 5});
  const int p =
      b.op("tern::pad",
           {c, b.int_list({1, 2, 0, 1, 1, 0}), b.string_value("constant"), b.double_value(0.25)},
           DType::F32, {1, 5, 5, 8});
  b.output(b.op("tern::sigmoid", {p}, DType::F32, {1, 5, 5, 8}));
  return b.build();
}

/// x[1, 16, 8, 16] -> 3x3 conv (32 tiles of 2x2: tern's Winograd conv) + x -> relu.
compiler::Graph winograd_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 16, 8, 16});
  const int c = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {16, 16, 3, 3}, 23), b.none(), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 16, 8, 16});
  const int s = b.op("tern::add", {c, x}, DType::F32, {1, 16, 8, 16});
  b.output(b.op("tern::relu", {s}, DType::F32, {1, 16, 8, 16}));
  return b.build();
}

/// Blob version 30's F(4x4, 3x3) tile (compiled with cpu:winograd=f4): x[1, 16, 28, 27] ->
/// 3x3 conv + bias (7 x 7 tiles of 4x4, the last column 3 wide) -> relu.
compiler::Graph v30_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 16, 28, 27});
  const int c = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {16, 16, 3, 3}, 301),
                      seed_constant(b, "b", {16}, 302), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 16, 28, 27});
  b.output(b.op("tern::relu", {c}, DType::F32, {1, 16, 28, 27}));
  return b.build();
}

/// Two PackedBottleneck nodes: x[1, 16, 12, 12] -> 1x1 16->64 + relu6 -> dw 3x3 + relu6 ->
/// 1x1 64->16 -> + x (MobileNetV2's block), then 1x1 16->48 + hardswish -> dw 5x5/2 +
/// hardswish (no project) -> global mean.
compiler::Graph bottleneck_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 16, 12, 12}, hs{1, 64, 12, 12};
  const int x = b.input("x", DType::F32, xs);
  auto conv = [&](int in, int64_t c_in, int64_t c_out, int64_t k, int64_t stride, int64_t groups,
                  int64_t hw, uint32_t seed) {
    const int64_t o = (hw + 2 * (k / 2) - k) / stride + 1;
    return b.op("tern::conv2d",
                {in, seed_constant(b, "w" + std::to_string(seed), {c_out, c_in / groups, k, k}, seed),
                 seed_constant(b, "b" + std::to_string(seed), {c_out}, seed + 1),
                 b.int_list({stride, stride}), b.int_list({k / 2, k / 2}), b.int_list({1, 1}),
                 b.int_value(groups)},
                DType::F32, {1, c_out, o, o});
  };
  auto relu6 = [&](int in, const std::vector<int64_t>& s) {
    return b.op("tern::hardtanh", {in, b.double_value(0), b.double_value(6)}, DType::F32, s);
  };
  const int e = relu6(conv(x, 16, 64, 1, 1, 1, 12, 31), hs);
  const int d = relu6(conv(e, 64, 64, 3, 1, 64, 12, 33), hs);
  const int y = b.op("tern::add", {conv(d, 64, 16, 1, 1, 1, 12, 35), x}, DType::F32, xs);
  const int e2 = b.op("tern::hardswish", {conv(y, 16, 48, 1, 1, 1, 12, 37)}, DType::F32,
                      {1, 48, 12, 12});
  const int d2 =
      b.op("tern::hardswish", {conv(e2, 48, 48, 5, 2, 48, 12, 39)}, DType::F32, {1, 48, 6, 6});
  b.output(b.op("tern::mean", {d2, b.int_list({-1, -2}), b.bool_value(true)}, DType::F32,
                {1, 48, 1, 1}));
  return b.build();
}

/// EfficientNet's MBConv: x[1, 16, 10, 10] -> 1x1 16->64 + silu -> dw 3x3 + silu ->
/// squeeze-excitation (mean, 1x1 64->4 + silu, 1x1 4->64, sigmoid, mul) -> 1x1 64->16 -> + x
/// (one PackedBottleneck node with squeeze-excitation), then 1x1 16->64 + silu (tern's GEMM with
/// activation 4) -> global mean.
compiler::Graph squeeze_excite_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 16, 10, 10}, hs{1, 64, 10, 10}, ps{1, 64, 1, 1};
  const int x = b.input("x", DType::F32, xs);
  auto conv = [&](int in, int64_t c_in, int64_t c_out, int64_t k, int64_t groups, int64_t hw,
                  uint32_t seed) {
    return b.op("tern::conv2d",
                {in, seed_constant(b, "w" + std::to_string(seed), {c_out, c_in / groups, k, k}, seed),
                 seed_constant(b, "b" + std::to_string(seed), {c_out}, seed + 1), b.int_list({1, 1}),
                 b.int_list({k / 2, k / 2}), b.int_list({1, 1}), b.int_value(groups)},
                DType::F32, {1, c_out, hw, hw});
  };
  auto silu = [&](int in, const std::vector<int64_t>& s) {
    return b.op("tern::silu", {in}, DType::F32, s);
  };
  const int e = silu(conv(x, 16, 64, 1, 1, 10, 41), hs);
  const int d = silu(conv(e, 64, 64, 3, 64, 10, 43), hs);
  const int m = b.op("tern::mean", {d, b.int_list({-1, -2}), b.bool_value(true)}, DType::F32, ps);
  const int s1 = silu(conv(m, 64, 4, 1, 1, 1, 45), {1, 4, 1, 1});
  const int g = b.op("tern::sigmoid", {conv(s1, 4, 64, 1, 1, 1, 47)}, DType::F32, ps);
  const int y = b.op("tern::mul", {d, g}, DType::F32, hs);
  const int r = b.op("tern::add", {conv(y, 64, 16, 1, 1, 10, 49), x}, DType::F32, xs);
  const int h = silu(conv(r, 16, 64, 1, 1, 10, 51), hs);
  b.output(b.op("tern::mean", {h, b.int_list({2, 3}), b.bool_value(true)}, DType::F32, ps));
  return b.build();
}

/// The bytes of every "cpu" delegate blob of the compiled program `pte`.
/// GoogLeNet's shape of block: x[1, 8, 7, 7] -> 1x1 8->6 + relu, 1x1 8->4 + relu, x and a ceil
/// max pool 3x3/1/1 -> 1x1 8->5 + relu, concatenated (two Concat nodes: 3 parts, then 2), then
/// a ceil max pool 2x2/2 of 7 -> 4 (extra bottom/right padding).
compiler::Graph inception_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 8, 7, 7};
  const int x = b.input("x", DType::F32, xs);
  auto branch = [&](int in, int64_t o, uint32_t seed) {
    const int y = b.op("tern::conv2d",
                       {in, seed_constant(b, "w" + std::to_string(seed), {o, 8, 1, 1}, seed),
                        seed_constant(b, "b" + std::to_string(seed), {o}, seed + 1),
                        b.int_list({1, 1}), b.int_list({0, 0}), b.int_list({1, 1}),
                        b.int_value(1)},
                       DType::F32, {1, o, 7, 7});
    return b.op("tern::relu", {y}, DType::F32, {1, o, 7, 7});
  };
  const int b1 = branch(x, 6, 61), b2 = branch(x, 4, 63);
  const int p = b.op("tern::max_pool2d",
                     {x, b.int_list({3, 3}), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_list({1, 1}), b.bool_value(true)},
                     DType::F32, xs);
  const int b3 = branch(p, 5, 65);
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {b1, b2, x, b3};
  b.graph().values.push_back(list);
  const int list_id = static_cast<int>(b.graph().values.size()) - 1;
  const int cat = b.op("tern::cat", {list_id, b.int_value(1)}, DType::F32, {1, 23, 7, 7});
  b.output(b.op("tern::max_pool2d",
                {cat, b.int_list({2, 2}), b.int_list({2, 2}), b.int_list({0, 0}),
                 b.int_list({1, 1}), b.bool_value(true)},
                DType::F32, {1, 23, 4, 4}));
  return b.build();
}

/// Attention (blob version 9's ops): x[1, 8, 16] -> linear to q, k, v -> split -> heads (view,
/// transpose: StridedCopy) -> causal scaled_dot_product_attention (two BatchMatMul nodes around
/// a softmax) -> heads back -> linear, and the result's rows concatenated with x's along dim 1
/// (Concat's rows form).
compiler::Graph attention_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 8, 16});
  const int qkv =
      b.op("tern::linear",
           {x, seed_constant(b, "wqkv", {48, 16}, 81), seed_constant(b, "bqkv", {48}, 82)},
           DType::F32, {1, 8, 48});
  std::vector<int> heads;
  for (int i = 0; i < 3; ++i) {
    const int part =
        b.op("tern::slice",
             {qkv, b.int_value(2), b.int_value(16 * i), b.int_value(16 * i + 16), b.int_value(1)},
             DType::F32, {1, 8, 16});
    const int v = b.op("tern::view", {part, b.int_list({1, 8, 2, 8})}, DType::F32, {1, 8, 2, 8});
    heads.push_back(
        b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32, {1, 2, 8, 8}));
  }
  const int a = b.op("tern::scaled_dot_product_attention",
                     {heads[0], heads[1], heads[2], b.none(), b.bool_value(true), b.none()},
                     DType::F32, {1, 2, 8, 8});
  const int t =
      b.op("tern::transpose", {a, b.int_value(1), b.int_value(2)}, DType::F32, {1, 8, 2, 8});
  const int y = b.op("tern::linear",
                     {b.op("tern::view", {t, b.int_list({1, 8, 16})}, DType::F32, {1, 8, 16}),
                      seed_constant(b, "wo", {16, 16}, 83), b.none()},
                     DType::F32, {1, 8, 16});
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {y, x};
  b.graph().values.push_back(list);
  const int list_id = static_cast<int>(b.graph().values.size()) - 1;
  b.output(b.op("tern::cat", {list_id, b.int_value(1)}, DType::F32, {1, 16, 16}));
  return b.build();
}

/// ShuffleNet v2's unit (blob version 11's RowConcat): x[1, 8, 4, 4] -> conv 1x1 -> split in
/// halves -> conv 1x1 on the second -> cat with the first (read in place) -> channel shuffle in
/// 2 groups (view, transpose, clone, view: folded into the concat) -> conv 1x1.
compiler::Graph shuffle_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 8, 4, 4}, hs{1, 4, 4, 4};
  auto conv1x1 = [&](int in, int64_t c_in, int64_t c_out, uint32_t seed) {
    return b.op("tern::conv2d",
                {in, seed_constant(b, "w" + std::to_string(seed), {c_out, c_in, 1, 1}, seed),
                 b.none(), b.int_list({1, 1}), b.int_list({0, 0}), b.int_list({1, 1}),
                 b.int_value(1)},
                DType::F32, {1, c_out, 4, 4});
  };
  const int x = b.input("x", DType::F32, xs);
  const int y = conv1x1(x, 8, 8, 91);
  const int first = b.op("tern::split", {y, b.int_list({4, 4}), b.int_value(1)}, DType::F32, hs);
  compiler::Node& split = b.graph().nodes.back();
  b.graph().values.push_back(b.graph().values[static_cast<size_t>(first)]);
  split.outputs.push_back(static_cast<int>(b.graph().values.size()) - 1);
  const int branch = conv1x1(split.outputs[1], 4, 4, 92);
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {first, branch};
  b.graph().values.push_back(list);
  const int list_id = static_cast<int>(b.graph().values.size()) - 1;
  const int joined = b.op("tern::cat", {list_id, b.int_value(1)}, DType::F32, xs);
  const int v = b.op("tern::view", {joined, b.int_list({1, 2, 4, 4, 4})}, DType::F32, {1, 2, 4, 4, 4});
  const int t = b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32, {1, 4, 2, 4, 4});
  const int c = b.op("tern::clone", {t}, DType::F32, {1, 4, 2, 4, 4});
  const int s = b.op("tern::view", {c, b.int_list(xs)}, DType::F32, xs);
  b.output(conv1x1(s, 8, 6, 93));
  return b.build();
}

std::vector<std::vector<uint8_t>> cpu_blobs(const std::vector<uint8_t>& pte) {
  void* raw = nullptr;
  if (posix_memalign(&raw, 64, pte.size()) != 0) throw std::bad_alloc();
  std::unique_ptr<void, void (*)(void*)> copy(raw, std::free);
  std::memcpy(raw, pte.data(), pte.size());
  BufferDataLoader loader(raw, pte.size());
  auto program = Program::load(&loader);
  if (!program.ok()) throw std::runtime_error(std::string("seed program: ") + last_error_message());
  std::vector<std::vector<uint8_t>> blobs;
  const auto* methods = program->flatbuffer()->methods();
  for (uint32_t m = 0; methods != nullptr && m < methods->size(); ++m) {
    const auto* delegates = methods->Get(m)->delegates();
    for (uint32_t d = 0; delegates != nullptr && d < delegates->size(); ++d) {
      const fb::Delegate* delegate = delegates->Get(d);
      if (delegate->backend() == nullptr || delegate->backend()->str() != "cpu") continue;
      auto bytes = program->segment_data(delegate->segment());
      if (!bytes.ok()) throw std::runtime_error(last_error_message());
      blobs.emplace_back(bytes->data(), bytes->data() + bytes->size());
    }
  }
  return blobs;
}

/// Blob version 13's GroupNorm (op 30): x[1, 4, 5, 5] -> conv 3x3 4->8 -> group_norm (4 groups,
/// weight and bias) -> relu -> conv 1x1 8->6; and grouped-query attention folded into its rows:
/// q[1, 2, 2, 4, 8], k and v [1, 2, 1, 4, 8] -> causal attention -> neg.
compiler::Graph group_norm_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 4, 5, 5}, ys{1, 8, 5, 5};
  const int x = b.input("x", DType::F32, xs);
  const int y = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {8, 4, 3, 3}, 111), seed_constant(b, "b", {8}, 112),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, ys);
  const int n = b.op("tern::group_norm",
                     {y, b.int_value(4), seed_constant(b, "gn_w", {8}, 113),
                      seed_constant(b, "gn_b", {8}, 114), b.double_value(1e-5)},
                     DType::F32, ys);
  const int r = b.op("tern::relu", {n}, DType::F32, ys);
  b.output(b.op("tern::conv2d",
                {r, seed_constant(b, "w2", {6, 8, 1, 1}, 115), b.none(), b.int_list({1, 1}),
                 b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                DType::F32, {1, 6, 5, 5}));
  const int q = b.input("q", DType::F32, {1, 2, 2, 4, 8});
  const int k = b.input("k", DType::F32, {1, 2, 1, 4, 8});
  const int v = b.input("v", DType::F32, {1, 2, 1, 4, 8});
  const int a = b.op("tern::scaled_dot_product_attention",
                     {q, k, v, b.none(), b.bool_value(true), b.none()}, DType::F32,
                     {1, 2, 2, 4, 8});
  b.output(b.op("tern::neg", {a}, DType::F32, {1, 2, 2, 4, 8}));
  return b.build();
}

/// Blob version 14: a conv1d stem (its result a view of the NHWC conv output) with a 3-D group
/// norm and a GELU folded into the second conv, a class token cat with a constant part, a GRN
/// sum over H, W of a channels-last tensor, an amax, and a bilinear resize (op 31).
compiler::Graph v14_graph() {
  GraphBuilder b("forward");
  const int a = b.input("audio", DType::F32, {1, 2, 40});
  const int c1 = b.op("tern::conv1d",
                      {a, seed_constant(b, "c1", {6, 2, 4}, 121), b.none(), b.int_list({2}),
                       b.int_list({0}), b.int_list({1}), b.int_value(1)},
                      DType::F32, {1, 6, 19});
  const int g = b.op("tern::group_norm",
                     {c1, b.int_value(6), b.none(), b.none(), b.double_value(1e-5)}, DType::F32,
                     {1, 6, 19});
  const int c2 = b.op("tern::conv1d",
                      {g, seed_constant(b, "c2", {6, 6, 3}, 122), seed_constant(b, "c2b", {6}, 123),
                       b.int_list({1}), b.int_list({1}), b.int_list({1}), b.int_value(1)},
                      DType::F32, {1, 6, 19});
  const int ge = b.op("tern::gelu", {c2}, DType::F32, {1, 6, 19});
  const int t = b.op("tern::transpose", {ge, b.int_value(1), b.int_value(2)}, DType::F32,
                     {1, 19, 6});
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {seed_constant(b, "cls", {1, 1, 6}, 124), t};
  b.graph().values.push_back(list);
  const int list_id = static_cast<int>(b.graph().values.size()) - 1;
  const int cat = b.op("tern::cat", {list_id, b.int_value(1)}, DType::F32, {1, 20, 6});
  b.output(b.op("tern::amax", {cat, b.int_list({1}), b.bool_value(true)}, DType::F32, {1, 1, 6}));
  const std::vector<int64_t> xs{1, 3, 4, 6};
  const int x = b.input("x", DType::F32, xs);
  const int y = b.op("tern::conv2d",
                     {x, seed_constant(b, "w", {5, 3, 1, 1}, 125), b.none(), b.int_list({1, 1}),
                      b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 5, 4, 6});
  const int p = b.op("tern::permute", {y, b.int_list({0, 2, 3, 1})}, DType::F32, {1, 4, 6, 5});
  b.output(b.op("tern::sum", {p, b.int_list({1, 2}), b.bool_value(true)}, DType::F32,
                {1, 1, 1, 5}));
  b.output(b.op("tern::upsample_bilinear2d", {y, b.bool_value(false), b.none(), b.none()},
                DType::F32, {1, 5, 8, 12}));
  return b.build();
}

/// Blob version 15: attention written out (bmm, a view, a scale, an added mask made from an
/// input, softmax, a view back, bmm) as one Attention node (op 32) with four inputs, k
/// transposed.
compiler::Graph v15_graph() {
  GraphBuilder b("forward");
  const int64_t h = 2, t = 5, e = 4;
  const int q = b.input("q", DType::F32, {h, t, e});
  const int kt = b.input("kt", DType::F32, {h, e, t});
  const int v = b.input("v", DType::F32, {h, t, e});
  const int pad = b.input("pad", DType::F32, {1, 1, 1, t});
  const int s = b.op("tern::bmm", {q, kt}, DType::F32, {h, t, t});
  const int s4 = b.op("tern::view", {s, b.int_list({1, h, t, t})}, DType::F32, {1, h, t, t});
  const int sc = b.op("tern::mul", {s4, b.double_value(0.5)}, DType::F32, {1, h, t, t});
  const int m = b.op("tern::add", {sc, pad}, DType::F32, {1, h, t, t});
  const int p = b.op("tern::softmax", {m, b.int_value(-1)}, DType::F32, {1, h, t, t});
  const int p3 = b.op("tern::view", {p, b.int_list({h, t, t})}, DType::F32, {h, t, t});
  b.output(b.op("tern::bmm", {p3, v}, DType::F32, {h, t, e}));
  return b.build();
}

/// Blob version 16: R3D's basic block on a tiny clip, x[1, 3, 3, 4, 4] -> conv3d 3x3x3 (relu)
/// -> conv3d 3x3x3 (relu) -> conv3d 3x3x3 + the first's output (relu): three PackedConv3d nodes
/// (op 33), the last with a residual input.
compiler::Graph v16_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 3, 3, 4, 4}, hs{1, 4, 3, 4, 4};
  const int x = b.input("x", DType::F32, xs);
  auto conv = [&](int in, int64_t c, uint32_t seed) {
    const int w = seed_constant(b, "w" + std::to_string(seed), {4, c, 3, 3, 3}, seed);
    return b.op("tern::conv3d",
                {in, w, seed_constant(b, "b" + std::to_string(seed), {4}, seed + 1),
                 b.int_list({1, 1, 1}), b.int_list({1, 1, 1}), b.int_list({1, 1, 1}),
                 b.int_value(1)},
                DType::F32, hs);
  };
  const int h = b.op("tern::relu", {conv(x, 3, 111)}, DType::F32, hs);
  const int h2 = b.op("tern::relu", {conv(h, 4, 113)}, DType::F32, hs);
  const int sum = b.op("tern::add", {conv(h2, 4, 115), h}, DType::F32, hs);
  b.output(b.op("tern::relu", {sum}, DType::F32, hs));
  return b.build();
}

/// Blob version 17: a bidirectional RNN's reverse direction, x[1, 6, 8] flipped along time
/// (a StridedCopy with a negative stride) -> linear -> flipped back along time and features;
/// then the maximum with a constant (op 35) and a where with a constant condition (ops 36 and
/// 35 by constant bounds).
compiler::Graph v17_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 6, 8});
  const int f = b.op("tern::flip", {x, b.int_list({1})}, DType::F32, {1, 6, 8});
  const int h = b.op("tern::linear",
                     {f, seed_constant(b, "w", {5, 8}, 121), seed_constant(b, "b", {5}, 122)},
                     DType::F32, {1, 6, 5});
  const int r = b.op("tern::flip", {h, b.int_list({-1, 1})}, DType::F32, {1, 6, 5});
  const int m = b.op("tern::maximum", {r, seed_constant(b, "floor", {5}, 123)}, DType::F32,
                     {1, 6, 5});
  compiler::Value cond;
  cond.kind = compiler::Value::Kind::Tensor;
  cond.dtype = DType::Bool;
  cond.sizes = {6, 1};
  cond.is_constant = true;
  cond.data = std::vector<uint8_t>{1, 0, 0, 1, 1, 0};
  b.graph().values.push_back(cond);
  const int c = static_cast<int>(b.graph().values.size()) - 1;
  b.output(b.op("tern::where", {c, m, b.double_value(-2.5)}, DType::F32, {1, 6, 5}));
  return b.build();
}

/// Blob version 18: View values. One LSTM-like step over x[4, 24]: a projection by tern's GEMM
/// (32 x 24 x 4 rows, above XNNPACK's share), its rows and a split of a sum into chunks read
/// in place (a view of a view among them), and a reshape of a chunk; then ops 38 and 39.
compiler::Graph v18_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {4, 24});
  const int p = b.op("tern::linear",
                     {x, seed_constant(b, "w", {400, 24}, 131), seed_constant(b, "b", {400}, 132)},
                     DType::F32, {4, 400});
  const int r0 = b.op("tern::select", {p, b.int_value(0), b.int_value(1)}, DType::F32, {400});
  const int r1 = b.op("tern::select", {p, b.int_value(0), b.int_value(3)}, DType::F32, {400});
  const int s = b.op("tern::add", {r0, r1}, DType::F32, {400});
  const int g = b.op("tern::split", {s, b.int_list({100, 300}), b.int_value(0)}, DType::F32, {100});
  b.graph().values.push_back(b.graph().values[static_cast<size_t>(g)]);
  b.graph().values.back().sizes = {300};
  const int rest = static_cast<int>(b.graph().values.size()) - 1;
  b.graph().nodes.back().outputs.push_back(rest);
  const int q = b.op("tern::slice",
                     {rest, b.int_value(0), b.int_value(200), b.int_value(300), b.int_value(1)},
                     DType::F32, {100});
  const int gs = b.op("tern::sigmoid", {g}, DType::F32, {100});
  const int m = b.op("tern::mul", {gs, q}, DType::F32, {100});
  b.output(b.op("tern::view", {m, b.int_list({10, 10})}, DType::F32, {10, 10}));
  // Ops 38 and 39: softplus (beta 2, threshold 5) and a running sum over a chunk.
  const int sp = b.op("tern::softplus", {q, b.double_value(2.0), b.double_value(5.0)},
                      DType::F32, {100});
  b.output(b.op("tern::cumsum", {b.op("tern::exp", {sp}, DType::F32, {100}), b.int_value(0)},
                DType::F32, {100}));
  return b.build();
}

/// Blob version 19: a decoder's upsampling by XNNPACK's deconvolution (op 41: kernel 3, stride
/// 2, padding 1, output padding 1) after a conv, then the Snake activation (op 38's sin) and a
/// log of a square root (op 38's log, op 28).
compiler::Graph v19_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 3, 6, 6});
  const int c = b.op("tern::conv2d",
                     {x, seed_constant(b, "cw", {4, 3, 3, 3}, 141), seed_constant(b, "cb", {4}, 142),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 4, 6, 6});
  const std::vector<int64_t> ys{1, 2, 12, 12};
  const int d = b.op("tern::conv_transpose2d",
                     {c, seed_constant(b, "dw", {4, 2, 3, 3}, 143), seed_constant(b, "db", {2}, 144),
                      b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1),
                      b.int_list({1, 1})},
                     DType::F32, ys);
  const int s = b.op("tern::sin", {d}, DType::F32, ys);
  const int snake = b.op("tern::add", {d, b.op("tern::mul", {s, s}, DType::F32, ys)}, DType::F32, ys);
  const int a = b.op("tern::abs", {snake}, DType::F32, ys);
  b.output(b.op("tern::log", {b.op("tern::sqrt", {a}, DType::F32, ys)}, DType::F32, ys));
  return b.build();
}

/// Blob version 20: DETR's cross-attention of constant object queries (op 32's q a constant)
/// over the keys and values of a projected memory x[1, 6, 8]; then a gather of its output by a
/// constant index that is no affine walk (op 42, the same picks in each query row).
compiler::Graph v20_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 6, 8});
  const int k = b.op("tern::linear",
                     {x, seed_constant(b, "wk", {8, 8}, 151), seed_constant(b, "bk", {8}, 152)},
                     DType::F32, {1, 6, 8});
  const int q = seed_constant(b, "queries", {1, 3, 8}, 153);
  const int a = b.op("tern::scaled_dot_product_attention",
                     {q, k, x, b.none(), b.bool_value(false), b.none()}, DType::F32, {1, 3, 8});
  b.output(b.op("tern::relu", {a}, DType::F32, {1, 3, 8}));
  compiler::Value index;
  index.kind = compiler::Value::Kind::Tensor;
  index.dtype = DType::I64;
  index.sizes = {1, 3, 4};
  index.is_constant = true;
  const std::vector<int64_t> picks{7, 0, 3, 3, 7, 0, 3, 3, 7, 0, 3, 3};
  std::vector<uint8_t> bytes(picks.size() * 8);
  std::memcpy(bytes.data(), picks.data(), bytes.size());
  index.data = bytes;
  b.graph().values.push_back(index);
  const int i = static_cast<int>(b.graph().values.size()) - 1;
  b.output(b.op("tern::gather", {a, b.int_value(2), i}, DType::F32, {1, 3, 4}));
  return b.build();
}

/// Blob version 21: RMS norms (op 25's mode 1) with and without a weight, then expm1 and
/// log1p (op 38's functions 6 and 7): xIELU's and xLSTM's pieces on a linear's output; a
/// select (op 44) of them by a bool input (a BoolPlain value).
compiler::Graph v21_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{2, 5, 8};
  const int x = b.input("x", DType::F32, xs);
  const int h = b.op("tern::linear",
                     {x, seed_constant(b, "w", {8, 8}, 171), seed_constant(b, "b", {8}, 172)},
                     DType::F32, xs);
  const int n = b.op("tern::rms_norm",
                     {h, b.int_list({8}), seed_constant(b, "g", {8}, 173), b.double_value(1e-6)},
                     DType::F32, xs);
  const int m = b.op("tern::rms_norm", {n, b.int_list({8}), b.none(), b.none()}, DType::F32, xs);
  const int e = b.op("tern::expm1", {m}, DType::F32, xs);
  const int a = b.op("tern::abs", {e}, DType::F32, xs);
  const int l = b.op("tern::log1p", {a}, DType::F32, xs);
  const int c = b.input("c", DType::Bool, {1, 5, 1});
  b.output(b.op("tern::where", {c, l, m}, DType::F32, xs));
  return b.build();
}

/// Blob version 22: selects whose conditions are comparisons of activations with numbers,
/// fused (op 44's modes 1..6): xIELU's where(h > 0, h * h, expm1(h)) on a linear's output, and
/// the other five comparisons of a relu's output (exact zeros: the equal cases) with 0; a
/// tril of the select's output (mode 1 comparing a constant triangle mask); op 38's pow and atan;
/// op 45's index rows (an index_select along a middle dim by run-time ids).
compiler::Graph v22_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{2, 5, 8};
  const int x = b.input("x", DType::F32, xs);
  const int h = b.op("tern::linear",
                     {x, seed_constant(b, "w", {8, 8}, 181), seed_constant(b, "b", {8}, 182)},
                     DType::F32, xs);
  const int sq = b.op("tern::mul", {h, h}, DType::F32, xs);
  const int em = b.op("tern::expm1", {h}, DType::F32, xs);
  const int pos = b.op("tern::gt", {h, b.double_value(0.0)}, DType::Bool, xs);
  const int y = b.op("tern::where", {pos, sq, em}, DType::F32, xs);
  const int r = b.op("tern::relu", {y}, DType::F32, xs);
  for (const char* op : {"tern::ge", "tern::lt", "tern::le", "tern::eq", "tern::ne"}) {
    const int m = b.op(op, {r, b.double_value(0.0)}, DType::Bool, xs);
    b.output(b.op("tern::where", {m, r, b.double_value(-1.0)}, DType::F32, xs));
  }
  b.output(b.op("tern::tril", {y, b.int_value(-1)}, DType::F32, xs));  // a constant x: the mask
  b.output(b.op("tern::pow", {r, b.double_value(9.0)}, DType::F32, xs));  // op 38's 11
  b.output(b.op("tern::atan", {y}, DType::F32, xs));                       // op 38's 10
  const int at = b.input("at", DType::I64, {4});       // op 45 along a middle dim
  b.output(b.op("tern::index_select", {y, b.int_value(1), at}, DType::F32, {2, 4, 8}));
  return b.build();
}

/// Blob version 23's grouped product (op 46): a mixture-of-experts MLP, both grouped products
/// reading int32 ends (the Int32Plain layout), and one with int64 ends on N not a multiple of
/// the packed panels (recipe PackGroupedKn each).
compiler::Graph v23_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {6, 8});
  const int h = b.op("tern::linear", {x, seed_constant(b, "w", {8, 8}, 191), b.none()},
                     DType::F32, {6, 8});
  const int ends = b.input("ends", DType::I32, {3});
  const int up = b.op("tern::grouped_mm", {h, seed_constant(b, "up", {3, 8, 12}, 192), ends},
                      DType::F32, {6, 12});
  const int act = b.op("tern::silu", {up}, DType::F32, {6, 12});
  b.output(b.op("tern::grouped_mm", {act, seed_constant(b, "down", {3, 12, 8}, 193), ends},
                DType::F32, {6, 8}));
  const int ends64 = b.input("ends64", DType::I64, {2});
  b.output(b.op("tern::grouped_mm", {h, seed_constant(b, "wide", {2, 8, 21}, 194), ends64},
                DType::F32, {6, 21}));
  return b.build();
}

/// Blob version 24's gated products (op 17's multiplier): StarNet's block, x[1, 16, 8, 8] ->
/// 1x1 convs f1, f2 to 160 channels -> relu6(f1) · f2 (the relu6 in f1's bounds, the product
/// f2's epilogue) -> 1x1 conv back to 16 + x; and (linear(h) + r) · m, a GEMM with a residual
/// and a multiplier (four inputs). Each product above 2^17 multiply-adds (tern's GEMM).
compiler::Graph v24_graph() {
  GraphBuilder b("forward");
  const std::vector<int64_t> xs{1, 16, 8, 8}, hs{1, 160, 8, 8};
  const int x = b.input("x", DType::F32, xs);
  auto conv1x1 = [&](int in, int64_t c, int64_t o, uint32_t seed) {
    return b.op("tern::conv2d",
                {in, seed_constant(b, "w" + std::to_string(seed), {o, c, 1, 1}, seed),
                 seed_constant(b, "b" + std::to_string(seed), {o}, seed + 1), b.int_list({1, 1}),
                 b.int_list({0, 0}), b.int_list({1, 1}), b.int_value(1)},
                DType::F32, {1, o, 8, 8});
  };
  const int f1 = conv1x1(x, 16, 160, 201);
  const int f2 = conv1x1(x, 16, 160, 203);
  const int a = b.op("tern::hardtanh", {f1, b.double_value(0.0), b.double_value(6.0)}, DType::F32,
                     hs);
  const int g = conv1x1(b.op("tern::mul", {a, f2}, DType::F32, hs), 160, 16, 205);
  b.output(b.op("tern::add", {g, x}, DType::F32, xs));
  const int h = b.input("h", DType::F32, {16, 32});
  const int r = b.input("r", DType::F32, {16, 272});
  const int m = b.input("m", DType::F32, {16, 272});
  const int y = b.op("tern::linear", {h, seed_constant(b, "lw", {272, 32}, 207), b.none()},
                     DType::F32, {16, 272});
  b.output(b.op("tern::mul", {b.op("tern::add", {y, r}, DType::F32, {16, 272}), m}, DType::F32,
                {16, 272}));
  return b.build();
}

/// Blob version 20's grid sample (op 43): a conv's NHWC output sampled bilinearly at points a
/// linear of the queries makes (Mask2Former's deformable attention), then by a constant grid
/// (nearest, reflection); and a bmm of a constant a by an activation (op 26's a a constant).
compiler::Graph v20_grid_graph() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 2, 6, 5});
  const int f = b.op("tern::conv2d",
                     {x, seed_constant(b, "cw", {3, 2, 3, 3}, 161), seed_constant(b, "cb", {3}, 162),
                      b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
                     DType::F32, {1, 3, 6, 5});
  const int q = b.input("q", DType::F32, {1, 6, 4});
  const int pts = b.op("tern::tanh",
                       {b.op("tern::linear", {q, seed_constant(b, "ow", {2, 4}, 163), b.none()},
                             DType::F32, {1, 6, 2})},
                       DType::F32, {1, 6, 2});
  const int grid = b.op("tern::view", {pts, b.int_list({1, 2, 3, 2})}, DType::F32, {1, 2, 3, 2});
  const int s = b.op("tern::grid_sample2d",
                     {f, grid, b.int_value(0), b.int_value(0), b.bool_value(false)}, DType::F32,
                     {1, 3, 2, 3});
  b.output(b.op("tern::grid_sample2d",
                {s, seed_constant(b, "g", {1, 4, 4, 2}, 164), b.int_value(1), b.int_value(2),
                 b.bool_value(true)},
                DType::F32, {1, 3, 4, 4}));
  b.output(b.op("tern::bmm", {seed_constant(b, "a", {1, 5, 6}, 165), q}, DType::F32, {1, 5, 4}));
  return b.build();
}

/// Blob version 18's fused LSTM cell (op 37): two steps of an LSTM (hidden 8) over x[2, 1, 6]
/// from a constant zero state, each step's gates the recurrent product plus its row of the
/// input projection, c' and h' views of the cell's output; then one GRU step (op 40).
compiler::Graph v18_lstm_graph() {
  GraphBuilder b("forward");
  const int64_t h = 8;
  const int x = b.input("x", DType::F32, {2, 1, 6});
  const int p = b.op("tern::linear",
                     {x, seed_constant(b, "wi", {4 * h, 6}, 141), seed_constant(b, "bi", {4 * h}, 142)},
                     DType::F32, {2, 1, 4 * h});
  int hv = b.constant_f32("h0", {1, h}, std::vector<float>(h, 0.0f));
  int cv = b.constant_f32("c0", {1, h}, std::vector<float>(h, 0.0f));
  const int wh = seed_constant(b, "wh", {4 * h, h}, 143);
  const std::vector<int64_t> gate{1, h};
  for (int64_t t = 0; t < 2; ++t) {
    const int xt = b.op("tern::select", {p, b.int_value(0), b.int_value(t)}, DType::F32, {1, 4 * h});
    const int rec = b.op("tern::linear", {hv, wh, b.none()}, DType::F32, {1, 4 * h});
    const int g = b.op("tern::add", {rec, xt}, DType::F32, {1, 4 * h});
    const int s = b.op("tern::split", {g, b.int_list({h, h, h, h}), b.int_value(1)}, DType::F32, gate);
    std::vector<int> parts{s};
    for (int k = 1; k < 4; ++k) {
      b.graph().values.push_back(b.graph().values[static_cast<size_t>(s)]);
      parts.push_back(static_cast<int>(b.graph().values.size()) - 1);
      b.graph().nodes.back().outputs.push_back(parts.back());
    }
    const int i = b.op("tern::sigmoid", {parts[0]}, DType::F32, gate);
    const int f = b.op("tern::sigmoid", {parts[1]}, DType::F32, gate);
    const int gg = b.op("tern::tanh", {parts[2]}, DType::F32, gate);
    const int o = b.op("tern::sigmoid", {parts[3]}, DType::F32, gate);
    const int fc = b.op("tern::mul", {f, cv}, DType::F32, gate);
    const int ig = b.op("tern::mul", {i, gg}, DType::F32, gate);
    cv = b.op("tern::add", {fc, ig}, DType::F32, gate);
    const int tc = b.op("tern::tanh", {cv}, DType::F32, gate);
    hv = b.op("tern::mul", {o, tc}, DType::F32, gate);
  }
  b.output(hv);
  b.output(cv);
  // One GRU step (op 40) from the LSTM's last hidden state: gi a linear of x's first row, gh
  // a linear of h, both split in three.
  const std::vector<int64_t> row{1, h};
  auto split3 = [&](int v) {
    const int s = b.op("tern::split", {v, b.int_list({h, h, h}), b.int_value(1)}, DType::F32, row);
    std::vector<int> parts{s};
    for (int k = 1; k < 3; ++k) {
      b.graph().values.push_back(b.graph().values[static_cast<size_t>(s)]);
      parts.push_back(static_cast<int>(b.graph().values.size()) - 1);
      b.graph().nodes.back().outputs.push_back(parts.back());
    }
    return parts;
  };
  const int x0 = b.op("tern::select", {x, b.int_value(0), b.int_value(0)}, DType::F32, {1, 6});
  const std::vector<int> xs = split3(b.op(
      "tern::linear", {x0, seed_constant(b, "gi_w", {3 * h, 6}, 144), b.none()}, DType::F32,
      {1, 3 * h}));
  const std::vector<int> hs = split3(b.op(
      "tern::linear", {hv, seed_constant(b, "gh_w", {3 * h, h}, 145), b.none()}, DType::F32,
      {1, 3 * h}));
  const int r = b.op("tern::sigmoid", {b.op("tern::add", {hs[0], xs[0]}, DType::F32, row)},
                     DType::F32, row);
  const int z = b.op("tern::sigmoid", {b.op("tern::add", {hs[1], xs[1]}, DType::F32, row)},
                     DType::F32, row);
  const int nn = b.op("tern::tanh",
                      {b.op("tern::add", {xs[2], b.op("tern::mul", {hs[2], r}, DType::F32, row)},
                            DType::F32, row)},
                      DType::F32, row);
  const int d = b.op("tern::sub", {hv, nn}, DType::F32, row);
  b.output(b.op("tern::add", {b.op("tern::mul", {d, z}, DType::F32, row), nn}, DType::F32, row));
  return b.build();
}

/// Bounded-dynamic rows (blob version 12): x[1, seq<=6, 16] -> linear -> linear, both in one
/// delegate (the hidden value internal and dynamic), run by the fuzzer at the bound.
compiler::Graph dynamic_rows_graph() {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 6);
  const int x = b.input("x", DType::F32, {1, 6, 16});
  b.dynamic_dims(x, {-1, seq, -1});
  const int h = b.op("tern::linear",
                     {x, seed_constant(b, "w1", {24, 16}, 101), seed_constant(b, "b1", {24}, 102)},
                     DType::F32, {1, 6, 24});
  b.dynamic_dims(h, {-1, seq, -1});
  const int y =
      b.op("tern::linear", {h, seed_constant(b, "w2", {8, 24}, 103), b.none()}, DType::F32, {1, 6, 8});
  b.dynamic_dims(y, {-1, seq, -1});
  b.output(y);
  return b.build();
}

/// Blob version 25's rows maps on dynamic values: x[1, seq<=6, 16] -> RMS norm written out
/// (pow, mean, add, rsqrt, two muls: XNNPACK's nodes on the bound's rows) -> silu(gate) · up
/// (op 17's activation and multiplier) -> down + x -> viewed as [seq, 16] (a reshape that
/// moves the dynamic dim) -> softmax.
compiler::Graph v25_graph() {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 6);
  auto dyn = [&](int v) {
    b.dynamic_dims(v, {-1, seq, -1});
    return v;
  };
  const std::vector<int64_t> xs{1, 6, 16}, fs{1, 6, 24}, ms{1, 6, 1};
  const int x = dyn(b.input("x", DType::F32, xs));
  const int sq = dyn(b.op("tern::pow", {x, b.double_value(2.0)}, DType::F32, xs));
  const int m = dyn(b.op("tern::mean", {sq, b.int_list({-1}), b.bool_value(true)}, DType::F32, ms));
  const int r = dyn(b.op("tern::rsqrt", {dyn(b.op("tern::add", {m, b.double_value(1e-6)},
                                                   DType::F32, ms))},
                         DType::F32, ms));
  const int n = dyn(b.op("tern::mul", {seed_constant(b, "g", {16}, 211),
                                       dyn(b.op("tern::mul", {x, r}, DType::F32, xs))},
                         DType::F32, xs));
  const int gate = dyn(b.op("tern::linear", {n, seed_constant(b, "wg", {24, 16}, 212), b.none()},
                            DType::F32, fs));
  const int up = dyn(b.op("tern::linear", {n, seed_constant(b, "wu", {24, 16}, 213), b.none()},
                          DType::F32, fs));
  const int a = dyn(b.op("tern::mul", {dyn(b.op("tern::silu", {gate}, DType::F32, fs)), up},
                         DType::F32, fs));
  const int h = dyn(b.op("tern::add",
                         {x, dyn(b.op("tern::linear",
                                      {a, seed_constant(b, "wd", {16, 24}, 214), b.none()},
                                      DType::F32, xs))},
                         DType::F32, xs));
  const int shape = b.int_list({6, 16});
  b.int_symbols(shape, {seq, -1});
  const int flat = b.op("tern::view", {h, shape}, DType::F32, {6, 16});
  b.dynamic_dims(flat, {seq, -1});
  const int y = b.op("tern::softmax", {flat, b.int_value(-1)}, DType::F32, {6, 16});
  b.dynamic_dims(y, {seq, -1});
  b.output(y);
  return b.build();
}

/// Blob version 26's GroupSum: x[1, 8, 5, 6] -> ResNeSt's split attention (a grouped conv of
/// 2 x 8 channels, the plain group sum, global mean, two 1x1 convs, the radix softmax, the
/// weighted group sum) and SKNet's selective kernel on its output (two dilated branches
/// stacked: a cat of views, summed plain and weighted).
compiler::Graph v26_graph() {
  GraphBuilder b("forward");
  auto conv = [&](int x, const std::vector<int64_t>& xs, int64_t o, int64_t k, int64_t d,
                  int64_t groups, uint32_t seed) {
    const int w = seed_constant(b, "w" + std::to_string(seed), {o, xs[1] / groups, k, k}, seed);
    const int64_t p = d * (k - 1) / 2;
    return b.op("tern::conv2d",
                {x, w, seed_constant(b, "b" + std::to_string(seed), {o}, seed + 1),
                 b.int_list({1, 1}), b.int_list({p, p}), b.int_list({d, d}), b.int_value(groups)},
                DType::F32, {xs[0], o, xs[2], xs[3]});
  };
  auto relu = [&](int x, const std::vector<int64_t>& s) {
    return b.op("tern::relu", {x}, DType::F32, s);
  };
  auto view = [&](int x, std::vector<int64_t> s) {
    return b.op("tern::view", {x, b.int_list(s)}, DType::F32, s);
  };
  auto sum1 = [&](int x) {
    return b.op("tern::sum", {x, b.int_list({1}), b.bool_value(false)}, DType::F32, {1, 8, 5, 6});
  };
  // The radix-2 weights [1, 2, 8, 1, 1] of a group sum g.
  auto weights = [&](int g, uint32_t seed) {
    const int m = b.op("tern::mean", {g, b.int_list({2, 3}), b.bool_value(true)}, DType::F32,
                       {1, 8, 1, 1});
    const int h = relu(conv(m, {1, 8, 1, 1}, 4, 1, 1, 1, seed), {1, 4, 1, 1});
    const int a = conv(h, {1, 4, 1, 1}, 16, 1, 1, 1, seed + 2);
    return b.op("tern::softmax", {view(a, {1, 2, 8, 1, 1}), b.int_value(1)}, DType::F32,
                {1, 2, 8, 1, 1});
  };
  const int x = b.input("x", DType::F32, {1, 8, 5, 6});
  const int y = relu(conv(x, {1, 8, 5, 6}, 16, 3, 1, 2, 221), {1, 16, 5, 6});
  const int x5 = view(y, {1, 2, 8, 5, 6});
  const int a5 = weights(sum1(x5), 231);
  const int s = sum1(b.op("tern::mul", {x5, a5}, DType::F32, {1, 2, 8, 5, 6}));
  std::vector<int> paths;
  for (int64_t d = 1; d <= 2; ++d) {
    const int p = relu(conv(s, {1, 8, 5, 6}, 8, 3, d, 1, static_cast<uint32_t>(240 + 4 * d)),
                       {1, 8, 5, 6});
    paths.push_back(view(p, {1, 1, 8, 5, 6}));
  }
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = paths;
  b.graph().values.push_back(list);
  const int stack = b.op("tern::cat", {static_cast<int>(b.graph().values.size()) - 1,
                                       b.int_value(1)},
                         DType::F32, {1, 2, 8, 5, 6});
  const int w2 = weights(sum1(stack), 251);
  b.output(sum1(b.op("tern::mul", {w2, stack}, DType::F32, {1, 2, 8, 5, 6})));
  return b.build();
}

/// Blob version 27's leaky ReLU epilogues: DarkNet's block, x[1, 8, 24, 24] -> 3x3/2 conv
/// (the direct conv) + leaky ReLU 0.1 -> 1x1 (the GEMM) + leaky -> 3x3/1 (Winograd) + leaky ->
/// + the block's input -> a linear + leaky ReLU 0.01.
compiler::Graph v27_graph() {
  GraphBuilder b("forward");
  auto conv = [&](int x, const std::vector<int64_t>& xs, int64_t o, int64_t k, int64_t stride,
                  uint32_t seed) {
    const int64_t p = (k - 1) / 2, oh = (xs[2] + 2 * p - k) / stride + 1;
    const int64_t ow = (xs[3] + 2 * p - k) / stride + 1;
    return b.op("tern::conv2d",
                {x, seed_constant(b, "w" + std::to_string(seed), {o, xs[1], k, k}, seed),
                 seed_constant(b, "b" + std::to_string(seed), {o}, seed + 1),
                 b.int_list({stride, stride}), b.int_list({p, p}), b.int_list({1, 1}),
                 b.int_value(1)},
                DType::F32, {xs[0], o, oh, ow});
  };
  auto leaky = [&](int x, double slope, const std::vector<int64_t>& s) {
    return b.op("tern::leaky_relu", {x, b.double_value(slope)}, DType::F32, s);
  };
  const std::vector<int64_t> s1{1, 32, 12, 12}, s2{1, 16, 12, 12};
  const int x = b.input("x", DType::F32, {1, 8, 24, 24});
  const int d = leaky(conv(x, {1, 8, 24, 24}, 32, 3, 2, 261), 0.1, s1);
  const int h = leaky(conv(d, s1, 16, 1, 1, 263), 0.1, s2);
  const int y = leaky(conv(h, s2, 32, 3, 1, 265), 0.1, s1);
  const int r = b.op("tern::add", {d, y}, DType::F32, s1);
  const int v = b.op("tern::view", {r, b.int_list({32, 144})}, DType::F32, {32, 144});
  b.output(leaky(b.op("tern::linear", {v, seed_constant(b, "wl", {40, 144}, 267), b.none()},
                      DType::F32, {32, 40}),
                 0.01, {32, 40}));
  return b.build();
}

/// Blob version 28's ChannelMix: CaiT's talking heads, scores = q [4, 12, 8] · kt [4, 8, 12]
/// viewed [1, 4, 12, 12], the heads mixed (permute, linear 4 -> 4, bias added, permute back),
/// a softmax, mixed again, times v; and a [2, 6, 10] mixed over dim 1 by a transpose, a linear
/// 6 -> 3 with its bias and a transpose back. Then its post-activation affines: a ConvMixer
/// block on y [1, 32, 14, 14] (dw 7x7 → ReLU → batch norm → + y: op 21's affine and residual;
/// 1x1 conv → ReLU → batch norm: op 17's affine).
compiler::Graph v28_graph() {
  GraphBuilder b("forward");
  auto view = [&](int x, const std::vector<int64_t>& s) {
    return b.op("tern::view", {x, b.int_list(s)}, DType::F32, s);
  };
  auto mix = [&](int s, uint32_t seed) {
    const int t = view(b.op("tern::permute", {s, b.int_list({0, 2, 3, 1})}, DType::F32,
                            {1, 12, 12, 4}),
                       {12, 12, 4});
    const int u = b.op("tern::linear",
                       {t, seed_constant(b, "p" + std::to_string(seed), {4, 4}, seed), b.none()},
                       DType::F32, {12, 12, 4});
    const int a = b.op("tern::add",
                       {view(u, {1, 12, 12, 4}),
                        seed_constant(b, "c" + std::to_string(seed), {4}, seed + 1)},
                       DType::F32, {1, 12, 12, 4});
    return b.op("tern::permute", {a, b.int_list({0, 3, 1, 2})}, DType::F32, {1, 4, 12, 12});
  };
  const int q = b.input("q", DType::F32, {4, 12, 8});
  const int kt = b.input("kt", DType::F32, {4, 8, 12});
  const int v = b.input("v", DType::F32, {4, 12, 8});
  const int s = view(b.op("tern::bmm", {q, kt}, DType::F32, {4, 12, 12}), {1, 4, 12, 12});
  const int p = b.op("tern::softmax", {mix(s, 281), b.int_value(-1)}, DType::F32,
                     {1, 4, 12, 12});
  b.output(b.op("tern::bmm", {view(mix(p, 283), {4, 12, 12}), v}, DType::F32, {4, 12, 8}));
  const int x = b.input("x", DType::F32, {2, 6, 10});
  const int t = b.op("tern::transpose",
                     {b.op("tern::relu", {x}, DType::F32, {2, 6, 10}), b.int_value(1),
                      b.int_value(2)},
                     DType::F32, {2, 10, 6});
  const int u = b.op("tern::linear",
                     {t, seed_constant(b, "w", {3, 6}, 285), seed_constant(b, "b", {3}, 286)},
                     DType::F32, {2, 10, 3});
  b.output(b.op("tern::transpose", {u, b.int_value(1), b.int_value(2)}, DType::F32,
                {2, 3, 10}));
  const std::vector<int64_t> cm{1, 32, 14, 14};
  auto norm = [&](int v, uint32_t seed) {
    std::vector<float> var = seed_weights(32, seed + 3);
    for (float& f : var) f += 1.0f;  // positive
    return b.op("tern::batch_norm",
                {v, seed_constant(b, "g" + std::to_string(seed), {32}, seed),
                 seed_constant(b, "be" + std::to_string(seed), {32}, seed + 1),
                 seed_constant(b, "m" + std::to_string(seed), {32}, seed + 2),
                 b.constant_f32("v" + std::to_string(seed), {32}, var), b.double_value(1e-5)},
                DType::F32, cm);
  };
  auto conv_relu = [&](int v, int64_t k, int64_t groups, uint32_t seed) {
    const int64_t p = (k - 1) / 2;
    const int c = b.op("tern::conv2d",
                       {v, seed_constant(b, "cw" + std::to_string(seed), {32, 32 / groups, k, k},
                                         seed),
                        seed_constant(b, "cb" + std::to_string(seed), {32}, seed + 1),
                        b.int_list({1, 1}), b.int_list({p, p}), b.int_list({1, 1}),
                        b.int_value(groups)},
                       DType::F32, cm);
    return b.op("tern::relu", {c}, DType::F32, cm);
  };
  const int y = b.input("y", DType::F32, cm);
  const int r = b.op("tern::add", {norm(conv_relu(y, 7, 32, 291), 293), y}, DType::F32, cm);
  b.output(norm(conv_relu(r, 1, 1, 297), 299));
  return b.build();
}

}  // namespace

std::vector<Seed> cpu_blob_seeds() {
  compiler::register_cpu_backend_compiler();
  compiler::CompileOptions options;
  options.backends = {"cpu"};
  std::vector<std::pair<std::string, compiler::ProgramGraph>> programs;
  for (const SampleProgram& p : sample_programs()) programs.emplace_back(p.name, p.graph);
  const std::pair<const char*, compiler::Graph> extra[] = {
      {"convnet", convnet_graph()},
      {"dense", dense_graph()},
      {"pad", pad_graph()},
      {"winograd", winograd_graph()},
      {"bottleneck", bottleneck_graph()},
      {"squeeze_excite", squeeze_excite_graph()},
      {"inception", inception_graph()},
      {"attention", attention_graph()},
      {"shuffle", shuffle_graph()},
      {"group_norm", group_norm_graph()},
      {"v14", v14_graph()},
      {"v15", v15_graph()},
      {"v16", v16_graph()},
      {"v17", v17_graph()},
      {"v18", v18_graph()},
      {"v18_lstm", v18_lstm_graph()},
      {"v19", v19_graph()},
      {"v20", v20_graph()},
      {"v20_grid", v20_grid_graph()},
      {"v21", v21_graph()},
      {"v22", v22_graph()},
      {"v23", v23_graph()},
      {"v24", v24_graph()},
      {"v25", v25_graph()},
      {"v26", v26_graph()},
      {"v27", v27_graph()},
      {"v28", v28_graph()},
      {"dynamic_rows", dynamic_rows_graph()}};
  for (const auto& [name, graph] : extra) {
    compiler::ProgramGraph program;
    program.source_model = name;
    program.methods.push_back(graph);
    programs.emplace_back(name, program);
  }
  std::vector<Seed> seeds;
  // Quantized weights (ops 23, 24 and 47): an embedding (int64 indices), two linears and a
  // grouped product of two experts, NF4 with double quantization and FP8 e4m3 in 2-D blocks.
  for (const char* scheme : {"nf4:block=32:double", "fp8_e4m3:block=16x32"}) {
    GraphBuilder b("forward");
    const int idx = b.input("idx", DType::I64, {3});
    const int e = b.op("tern::embedding", {seed_constant(b, "emb", {20, 40}, 71), idx}, DType::F32, {3, 40});
    const int h = b.op("tern::linear", {e, seed_constant(b, "w1", {24, 40}, 72), seed_constant(b, "b1", {24}, 73)},
                       DType::F32, {3, 24});
    b.output(b.op("tern::linear", {h, seed_constant(b, "w2", {9, 24}, 74), b.none()}, DType::F32, {3, 9}));
    // Two experts of 16 rows: op 47 with the FP8 tiles (NF4's double quantization groups of 256
    // blocks do not split there: portable).
    const int ends = b.input("ends", DType::I32, {2});
    b.output(b.op("tern::grouped_mm", {h, seed_constant(b, "experts", {2, 24, 16}, 75), ends},
                  DType::F32, {3, 16}));
    compiler::ProgramGraph program;
    program.source_model = std::string("quantized ") + scheme;
    program.methods.push_back(b.build());
    compiler::CompileOptions q = options;
    q.quantize.scheme = compiler::parse_quant_scheme(scheme);
    const std::vector<std::vector<uint8_t>> blobs =
        cpu_blobs(compiler::compile_program(program, q).bytes);
    for (size_t i = 0; i < blobs.size(); ++i) {
      seeds.emplace_back(std::string("quantized_") + (scheme[0] == 'n' ? "nf4" : "fp8") + "_" +
                             std::to_string(i) + ".blob",
                         blobs[i]);
    }
  }
  for (const auto& [name, program] : programs) {
    const std::vector<std::vector<uint8_t>> blobs =
        cpu_blobs(compiler::compile_program(program, options).bytes);
    for (size_t i = 0; i < blobs.size(); ++i) {
      seeds.emplace_back(name + "_" + std::to_string(i) + ".blob", blobs[i]);
    }
  }
  {
    compiler::ProgramGraph program;
    program.source_model = "v30";
    program.methods.push_back(v30_graph());
    compiler::CompileOptions f4 = options;
    f4.backends = {"cpu:winograd=f4"};
    const std::vector<std::vector<uint8_t>> blobs =
        cpu_blobs(compiler::compile_program(program, f4).bytes);
    for (size_t i = 0; i < blobs.size(); ++i) {
      seeds.emplace_back("v30_" + std::to_string(i) + ".blob", blobs[i]);
    }
  }
  return seeds;
}

}  // namespace tern::fuzz
