// Conformance of what the cpu backend takes for EfficientNet, MNASNet and RegNet against the
// portable kernels (harness: cpu_conformance_util.h): SiLU on its own (XNNPACK's sigmoid and
// multiply) and folded into tern's GEMM and convolution epilogues (activation 4), sigmoid folded
// into tern's GEMM (activation 5), the fused bottleneck's SiLU stages (epilogue 4) and its
// squeeze-excitation (EfficientNet's MBConv with a sigmoid gate, MobileNetV3's with a
// hardsigmoid one, the gate applied to the project's weight rows or to d, no expand, stride 2,
// 5x5, batch 2, either mul operand order), chains that must not fuse (d leaving the graph, no
// project after the gate), RegNet's grouped convolutions, a dilated one; then the blob fields of
// the squeeze-excitation and what the reader refuses.
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

constexpr uint32_t op_code(cpu::NodeOp op) { return static_cast<uint32_t>(op); }
constexpr uint32_t kLow = (1u << cpu::kBottleneckHighShift) - 1;

/// 1x1 conv (bias) of x [n, c, h, w] to o channels.
int pointwise(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, uint32_t seed,
              bool bias = true) {
  return conv(b, x, xs, o, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, bias, seed);
}

int silu(GraphBuilder& b, int x, const std::vector<int64_t>& s) {
  return b.op("tern::silu", {x}, DType::F32, s);
}

/// What an MBConv block looks like.
struct MbConv {
  std::vector<int64_t> xs;  ///< x [n, c, h, w]
  int64_t expanded = 0;     ///< E (== c: no expand conv)
  int64_t out = 0;          ///< O
  int64_t k = 3, stride = 1;
  int64_t squeeze = 0;       ///< S (0: no squeeze-excitation)
  std::string squeeze_act = "silu";  ///< silu, relu or none
  std::string gate = "sigmoid";      ///< sigmoid or hardsigmoid
  std::string act = "silu";          ///< the expand's and the depthwise's: silu or hardswish
  bool adaptive_pool = false;        ///< adaptive_avg_pool2d rather than mean
  bool gate_first = false;           ///< mul(gate, d) rather than mul(d, gate)
  bool residual = false;             ///< + x (needs stride 1 and O == c)
  bool d_is_output = false;          ///< d also leaves the graph (nothing fuses past it)
  bool gated_is_output = false;      ///< the block ends at the mul (no project)
  uint32_t seed = 200;
};

/// EfficientNet's MBConv (torchvision's layout): [1x1 expand -> act ->] dw kxk -> act ->
/// [squeeze-excitation ->] 1x1 project [-> + x].
void build_mbconv(GraphBuilder& b, const MbConv& m) {
  const int x = b.input("x", DType::F32, m.xs);
  const int64_t n = m.xs[0], c = m.xs[1], h = m.xs[2], w = m.xs[3], e = m.expanded;
  const std::vector<int64_t> es{n, e, h, w};
  const int64_t oh = (h + 2 * (m.k / 2) - m.k) / m.stride + 1;
  const int64_t ow = (w + 2 * (m.k / 2) - m.k) / m.stride + 1;
  const std::vector<int64_t> ds{n, e, oh, ow}, ps{n, e, 1, 1};
  uint32_t seed = m.seed;
  auto act = [&](int v, const std::vector<int64_t>& s) {
    return m.act == "silu" ? silu(b, v, s) : b.op("tern::hardswish", {v}, DType::F32, s);
  };
  int t = x;
  if (e != c) t = act(pointwise(b, x, m.xs, e, seed += 2), es);
  const int d = act(conv(b, t, es, e, m.k, m.k, {m.stride, m.stride}, {m.k / 2, m.k / 2},
                         {1, 1}, e, true, seed += 2),
                    ds);
  if (m.d_is_output) b.output(d);
  int y = d;
  if (m.squeeze > 0) {
    const int pooled =
        m.adaptive_pool
            ? b.op("tern::adaptive_avg_pool2d", {d, b.int_list({1, 1})}, DType::F32, ps)
            : b.op("tern::mean", {d, b.int_list({-1, -2}), b.bool_value(true)}, DType::F32, ps);
    const std::vector<int64_t> ss{n, m.squeeze, 1, 1};
    int s = pointwise(b, pooled, ps, m.squeeze, seed += 2);
    if (m.squeeze_act == "silu") s = silu(b, s, ss);
    if (m.squeeze_act == "relu") s = b.op("tern::relu", {s}, DType::F32, ss);
    const int g = b.op(m.gate == "sigmoid" ? "tern::sigmoid" : "tern::hardsigmoid",
                       {pointwise(b, s, ss, e, seed += 2)}, DType::F32, ps);
    y = b.op("tern::mul", m.gate_first ? std::vector<int>{g, d} : std::vector<int>{d, g},
             DType::F32, ds);
  }
  if (m.gated_is_output) {
    b.output(y);
    return;
  }
  const int p = pointwise(b, y, ds, m.out, seed += 2);
  b.output(m.residual ? b.op("tern::add", {p, x}, DType::F32, {n, m.out, oh, ow}) : p);
}

/// The region's blob holds exactly `ops`.
std::function<void(const std::vector<uint8_t>&)> ops_are(std::vector<uint32_t> ops) {
  return [ops](const std::vector<uint8_t>& blob) { EXPECT_EQ(blob_ops(blob), ops); };
}

/// The blob's one node is a PackedBottleneck with these fields.
std::function<void(const std::vector<uint8_t>&)> one_bottleneck(uint32_t flags, int64_t squeeze,
                                                                  uint32_t squeeze_epi,
                                                                  uint32_t gate, uint32_t dw_epi) {
  return [=](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{op_code(cpu::NodeOp::PackedBottleneck)});
    const cpu::BlobNode n = blob_node(blob, 0);
    EXPECT_EQ(n.params[cpu::kBottleneckFlags] & kLow, flags);
    EXPECT_EQ(n.params[cpu::kBottleneckFlags] >> cpu::kBottleneckHighShift,
              static_cast<uint32_t>(squeeze));
    EXPECT_EQ(n.params[cpu::kBottleneckExpandEpilogue] >> cpu::kBottleneckHighShift, squeeze_epi);
    EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue] >> cpu::kBottleneckHighShift, gate);
    EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue] & kLow, dw_epi);
  };
}

constexpr uint32_t kSilu = static_cast<uint32_t>(cpu::BottleneckEpilogue::Silu);
constexpr uint32_t kRelu = static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu);
constexpr uint32_t kHardswish = static_cast<uint32_t>(cpu::BottleneckEpilogue::Hardswish);
constexpr uint32_t kSigmoidGate = static_cast<uint32_t>(cpu::SqueezeGate::Sigmoid);
constexpr uint32_t kClampGate = static_cast<uint32_t>(cpu::SqueezeGate::Clamp01);
constexpr uint32_t kAll = cpu::kBottleneckHasExpand | cpu::kBottleneckHasProject |
                          cpu::kBottleneckHasSqueezeExcite;

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  const double kConv = 1e-9, kTranscendental = 1e-9;
  // ---- SiLU and sigmoid ----
  c.push_back(unary("silu_4d_sigmoid_and_multiply", "tern::silu", {2, 8, 5, 7}));
  c.back().threshold = kTranscendental;
  c.back().check_blob = ops_are({op_code(cpu::NodeOp::Sigmoid), op_code(cpu::NodeOp::Multiply)});
  c.push_back(unary("silu_2d", "tern::silu", {3, 40}));
  c.back().threshold = kTranscendental;
  c.push_back({"silu_folds_into_linear",  // 64 x 96 -> 48: tern's GEMM, activation 4
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {64, 96});
                 const int w = constant(b, "w", {48, 96}, 11, 2.0f);
                 const int y = b.op("tern::linear", {x, w, constant(b, "b", {48}, 12)},
                                    DType::F32, {64, 48});
                 b.output(silu(b, y, {64, 48}));
               },
               kTranscendental, false, [](const std::vector<uint8_t>& blob) {
                 ASSERT_EQ(blob_ops(blob),
                           std::vector<uint32_t>{op_code(cpu::NodeOp::PackedFullyConnected)});
                 EXPECT_EQ(blob_node(blob, 0).params[2], 4u);
               }});
  c.push_back({"sigmoid_folds_into_linear",  // activation 5
               [](GraphBuilder& b) {
                 const int x = b.input("x", DType::F32, {64, 96});
                 const int w = constant(b, "w", {48, 96}, 13, 2.0f);
                 const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {64, 48});
                 b.output(b.op("tern::sigmoid", {y}, DType::F32, {64, 48}));
               },
               kTranscendental, false, [](const std::vector<uint8_t>& blob) {
                 ASSERT_EQ(blob_ops(blob),
                           std::vector<uint32_t>{op_code(cpu::NodeOp::PackedFullyConnected)});
                 EXPECT_EQ(blob_node(blob, 0).params[2], 5u);
               }});
  c.push_back({"silu_folds_into_stem_conv",  // EfficientNet's stem: 3x3/2 on RGB, op 18
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 32, 32};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 15);
                 b.output(silu(b, y, {1, 32, 16, 16}));
               },
               kTranscendental, false, [](const std::vector<uint8_t>& blob) {
                 ASSERT_EQ(blob_ops(blob),
                           std::vector<uint32_t>{op_code(cpu::NodeOp::PackedConv2d)});
                 EXPECT_EQ(blob_node(blob, 0).params[cpu::kPackedActivation], 4u);
               }});
  c.push_back({"silu_folds_into_head_conv1x1",  // EfficientNet's head: 1x1 320 -> 1280
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 40, 7, 7};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(silu(b, pointwise(b, x, xs, 160, 17), {1, 160, 7, 7}));
               },
               kTranscendental, false,
               ops_are({op_code(cpu::NodeOp::PackedFullyConnected)})});
  c.push_back({"silu_after_xnnpack_depthwise",  // a small depthwise conv stays XNNPACK's
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 8, 6, 6};
                 const int x = b.input("x", DType::F32, xs);
                 const int d = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 19);
                 b.output(silu(b, d, xs));
               },
               kTranscendental});
  // ---- the fused bottleneck with SiLU stages and squeeze-excitation ----
  c.push_back({"bottleneck_silu_stages_residual",  // no squeeze-excitation
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 16, 12, 12};
                 m.expanded = 64;
                 m.out = 16;
                 m.residual = true;
                 build_mbconv(b, m);
               },
               kConv, true,
               one_bottleneck(cpu::kBottleneckHasExpand | cpu::kBottleneckHasProject, 0, 0, 0,
                              kSilu)});
  c.push_back({"mbconv6_se_residual",  // EfficientNet: 24 -> 144 -> 24, SE of 6, + x
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 24, 14, 14};
                 m.expanded = 144;
                 m.out = 24;
                 m.squeeze = 6;
                 m.residual = true;
                 build_mbconv(b, m);
               },
               kConv, true, one_bottleneck(kAll, 6, kSilu, kSigmoidGate, kSilu)});
  c.push_back({"mbconv1_se_no_expand_adaptive_pool",  // EfficientNet's first block
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 32, 20, 20};
                 m.expanded = 32;
                 m.out = 16;
                 m.squeeze = 8;
                 m.adaptive_pool = true;
                 build_mbconv(b, m);
               },
               kConv, true,
               one_bottleneck(cpu::kBottleneckHasProject | cpu::kBottleneckHasSqueezeExcite, 8,
                              kSilu, kSigmoidGate, kSilu)});
  c.push_back({"mbconv6_se_stride2_k5_gate_into_d",  // 7x7 output: fewer pixels than weights
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 40, 14, 14};
                 m.expanded = 240;
                 m.out = 80;
                 m.k = 5;
                 m.stride = 2;
                 m.squeeze = 10;
                 m.gate_first = true;
                 build_mbconv(b, m);
               },
               kConv, true, one_bottleneck(kAll, 10, kSilu, kSigmoidGate, kSilu)});
  c.push_back({"mbconv6_se_batch2",  // a gate per image
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {2, 16, 9, 11};
                 m.expanded = 96;
                 m.out = 16;
                 m.squeeze = 4;
                 m.residual = true;
                 build_mbconv(b, m);
               },
               kConv, true, one_bottleneck(kAll, 4, kSilu, kSigmoidGate, kSilu)});
  c.push_back({"mobilenet_v3_se_hardsigmoid",  // relu squeeze, hardsigmoid gate folded
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 24, 10, 10};
                 m.expanded = 96;
                 m.out = 40;
                 m.k = 5;
                 m.stride = 2;
                 m.squeeze = 24;
                 m.squeeze_act = "relu";
                 m.gate = "hardsigmoid";
                 m.act = "hardswish";
                 build_mbconv(b, m);
               },
               kConv, true, one_bottleneck(kAll, 24, kRelu, kClampGate, kHardswish)});
  c.push_back({"mbconv_se_no_squeeze_activation",
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 8, 8, 8};
                 m.expanded = 48;
                 m.out = 8;
                 m.squeeze = 2;
                 m.squeeze_act = "none";
                 build_mbconv(b, m);
               },
               kConv, true, one_bottleneck(kAll, 2, 0, kSigmoidGate, kSilu)});
  c.push_back({"mbconv_se_depthwise_output_leaves",  // d is a graph output: no fusing past it
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 16, 10, 10};
                 m.expanded = 64;
                 m.out = 16;
                 m.squeeze = 4;
                 m.d_is_output = true;
                 build_mbconv(b, m);
               },
               kConv, true, [](const std::vector<uint8_t>& blob) {
                 const cpu::BlobNode n = blob_node(blob, 0);
                 ASSERT_EQ(n.op, op_code(cpu::NodeOp::PackedBottleneck));
                 EXPECT_EQ(n.params[cpu::kBottleneckFlags], cpu::kBottleneckHasExpand);
               }});
  c.push_back({"mbconv_se_without_project",  // the gated tensor leaves: the gate stays apart
               [](GraphBuilder& b) {
                 MbConv m;
                 m.xs = {1, 16, 10, 10};
                 m.expanded = 64;
                 m.squeeze = 4;
                 m.gated_is_output = true;
                 build_mbconv(b, m);
               },
               kConv, true});
  // ---- RegNet's convolutions ----
  c.push_back({"regnet_grouped_conv_stride2",  // group width 8: 48 channels in 6 groups
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 48, 14, 14};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 48, 3, 3, {2, 2}, {1, 1}, {1, 1}, 6, false, 41);
                 b.output(b.op("tern::relu", {y}, DType::F32, {1, 48, 7, 7}));
               },
               kConv});
  c.push_back({"regnet_y_block_grouped_conv_se",  // 1x1, grouped 3x3, SE (relu, sigmoid), 1x1
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 24, 8, 8}, ps{1, 24, 1, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int a = b.op("tern::relu", {pointwise(b, x, xs, 24, 43)}, DType::F32, xs);
                 const int g = b.op("tern::relu",
                                    {conv(b, a, xs, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 3, true, 45)},
                                    DType::F32, xs);
                 const int m = b.op("tern::mean", {g, b.int_list({2, 3}), b.bool_value(true)},
                                    DType::F32, ps);
                 const int s1 = b.op("tern::relu", {pointwise(b, m, ps, 6, 47)}, DType::F32,
                                     {1, 6, 1, 1});
                 const int s2 = b.op("tern::sigmoid", {pointwise(b, s1, {1, 6, 1, 1}, 24, 49)},
                                     DType::F32, ps);
                 const int y = b.op("tern::mul", {g, s2}, DType::F32, xs);
                 const int p = pointwise(b, y, xs, 24, 51, false);
                 b.output(b.op("tern::relu", {b.op("tern::add", {p, x}, DType::F32, xs)},
                               DType::F32, xs));
               },
               kConv});
  c.push_back({"resnext_grouped_conv_residual_relu",  // group width 4; add + relu fold in
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 32, 9, 9};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, true, 55);
                 b.output(b.op("tern::relu", {b.op("tern::add", {y, x}, DType::F32, xs)},
                               DType::F32, xs));
               },
               kConv});
  c.push_back({"grouped_conv_hardsigmoid_dilated",  // the hardsigmoid folds into each group
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 12, 10, 11};
                 const int x = b.input("x", DType::F32, xs);
                 const int y = conv(b, x, xs, 18, 3, 3, {1, 1}, {2, 2}, {2, 2}, 3, true, 57);
                 b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {1, 18, 10, 11}));
               },
               kConv});
  c.push_back({"dilated_conv_3x3_dilation2",  // one group: tern's conv with the dilation
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 12, 12};
                 const int x = b.input("x", DType::F32, xs);
                 b.output(conv(b, x, xs, 16, 3, 3, {1, 1}, {2, 2}, {2, 2}, 1, true, 53));
               },
               kConv});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceSe, cases());

/// The blob of an EfficientNet MBConv with squeeze-excitation (one PackedBottleneck node).
std::vector<uint8_t> se_blob(std::vector<int>* args = nullptr) {
  GraphBuilder b;
  MbConv m;
  m.xs = {1, 16, 12, 12};
  m.expanded = 64;
  m.out = 16;
  m.squeeze = 4;
  m.residual = true;
  build_mbconv(b, m);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  if (args != nullptr) *args = b.graph().delegates[0].inputs;
  return b.graph().delegates[0].blob;
}

TEST(CpuSqueezeExciteBlob, OneNodeWithItsWeights) {
  register_all();
  const std::vector<uint8_t> blob = se_blob();
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{op_code(cpu::NodeOp::PackedBottleneck)});
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[cpu::kBottleneckFlags], kAll | (4u << cpu::kBottleneckHighShift));
  EXPECT_EQ(n.params[cpu::kBottleneckExpandEpilogue],
            kSilu | (kSilu << cpu::kBottleneckHighShift));
  EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue],
            kSilu | (kSigmoidGate << cpu::kBottleneckHighShift));
  ASSERT_EQ(n.num_inputs, 3u);
  EXPECT_EQ(n.inputs[2], n.inputs[0]);  // the residual is x
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobValue w;
  std::memcpy(&w, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue), sizeof(w));
  EXPECT_EQ(w.dims[0], cpu::bottleneck_weight_floats(true, true, 16, 64, 16, 3, 3, 4));
  std::string message;
  EXPECT_EQ(parse(blob, &message), Error::Ok) << message;
}

TEST(CpuSqueezeExciteBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = se_blob();
  struct Case {
    const char* what;
    std::function<void(cpu::BlobNode&)> mutate;
    const char* expect;
  };
  const uint32_t shift = cpu::kBottleneckHighShift;
  const Case cases[] = {
      {"gate 2",
       [&](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckDepthwiseEpilogue] = kSilu | (2u << shift);
       },
       "squeeze-excitation of 4 channels, squeeze epilogue 4, gate 2; expected a project"},
      {"squeeze epilogue 5",
       [&](cpu::BlobNode& n) { n.params[cpu::kBottleneckExpandEpilogue] = kSilu | (5u << shift); },
       "squeeze epilogue 5, gate 0"},
      {"without a project",
       [&](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckFlags] &= ~cpu::kBottleneckHasProject;
       },
       "flags 5, squeeze-excitation of 4 channels"},
      {"no squeeze channels",
       [&](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = kAll; },
       "flags 7, squeeze-excitation of 0 channels"},
      {"squeeze channels that do not match the weights",
       [&](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = kAll | (5u << shift); },
       "16 -> 64 -> 16 channels, 3x3 window, squeeze 5)"},
      {"the flag dropped, the fields kept",
       [&](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckFlags] &= ~cpu::kBottleneckHasSqueezeExcite;
       },
       "flags 3, squeeze-excitation of 4 channels"},
      {"squeeze channels over the parameter limit",
       [&](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = kAll | (1u << 30) << 1; },
       "parameter 13"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobNode n = blob_node(bad, 0);
    c.mutate(n);
    std::memcpy(bad.data() + node_offset(bad, 0), &n, sizeof(n));
    std::string message;
    EXPECT_EQ(parse(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tern::cpu_test
