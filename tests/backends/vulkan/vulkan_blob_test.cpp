// The vulkan blob as untrusted input: a lowered blob parses back to what was written; every
// corrupt field is refused with a message naming it (never a crash); every single-byte flip of
// a real blob is refused or harmless (the reader keeps every shader access inside its buffers);
// a blob the device cannot run (another version, f16 storage on a device without its
// features) falls back; f16-storage blobs hold f16 constants and no quantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/compile/register_vulkan_backend_compiler.h"
#include "backends/vulkan/runtime/blob_reader.h"
#include "tests/backends/vulkan/vulkan_test_util.h"
#include "runtime/kernels/portable/dtype_convert.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::vulkan_test {
namespace {

using vulkan::BlobHeader;
using vulkan::BlobNode;
using vulkan::BlobValue;

/// linear -> gelu -> layer_norm -> conv-free tail: a blob with constants, internals and edges.
compiler::Graph small_graph(uint32_t storage = vulkan::kStorageF32) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {3, 16});
  const int w = b.constant_f32("w", {8, 16}, random_floats(128, 1));
  const int bias = b.constant_f32("b", {8}, random_floats(8, 2));
  const int h = b.op("tern::linear", {x, w, bias}, DType::F32, {3, 8});
  const int g = b.op("tern::gelu", {h, b.string_value("none")}, DType::F32, {3, 8});
  const int t = b.op("tern::transpose", {g, b.int_value(0), b.int_value(1)}, DType::F32, {8, 3});
  b.output(b.op("tern::softmax", {t, b.int_value(-1)}, DType::F32, {8, 3}));
  b.output(h);
  delegate_vulkan(b, 0, 3, storage);
  return b.build();
}

/// The blob of one vulkan region over nodes [0, last] of `b`, whether it parsed (and the
/// message if not), and node `index` of it: its offset in the blob and its bytes.
struct DelegatedNode {
  std::vector<uint8_t> blob;
  bool parsed = false;
  std::string error;
  size_t offset = 0;
  BlobNode node{};
};

DelegatedNode delegated_node(GraphBuilder& b, int last, uint32_t index) {
  delegate_vulkan(b, 0, last);
  DelegatedNode d;
  d.blob = b.build().delegates.at(0).blob;
  d.parsed = parse(d.blob) == Error::Ok;
  if (!d.parsed) {
    d.error = last_error_message();
    return d;
  }
  d.offset = node_offset(d.blob, index);
  std::memcpy(&d.node, d.blob.data() + d.offset, sizeof(d.node));
  return d;
}

TEST(VulkanBlob, RoundTrip) {
  const compiler::Graph g = small_graph();
  const std::vector<uint8_t>& blob = g.delegates.at(0).blob;
  AlignedBlob a(blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), blob.size()), &plan), Error::Ok)
      << last_error_message();
  EXPECT_EQ(plan.header.version, vulkan::kBlobVersion);
  EXPECT_EQ(plan.header.num_nodes, 4u);
  // Every boundary value is an argument: x, w, b, the scalar attributes, then 2 outputs.
  EXPECT_EQ(plan.header.num_args,
            g.delegates[0].inputs.size() + g.delegates[0].outputs.size());
  EXPECT_EQ(g.delegates[0].outputs.size(), 2u);
  EXPECT_EQ(plan.header.workgroup_size, 256u);
  EXPECT_EQ(plan.header.matmul_tile, 16u);
  EXPECT_EQ(plan.nodes[0].op, static_cast<uint32_t>(vulkan::NodeOp::MatMul));
  EXPECT_EQ(plan.nodes[1].op, static_cast<uint32_t>(vulkan::NodeOp::Unary));
  EXPECT_EQ(plan.nodes[2].op, static_cast<uint32_t>(vulkan::NodeOp::Copy));
  EXPECT_EQ(plan.nodes[3].op, static_cast<uint32_t>(vulkan::NodeOp::Softmax));
  // The weight's bytes are the graph's.
  const BlobValue& wv = plan.values[plan.nodes[0].inputs[1]];
  ASSERT_EQ(wv.kind, static_cast<uint32_t>(vulkan::ValueKind::Constant));
  EXPECT_EQ(std::memcmp(plan.data + wv.data_offset, g.values[1].data.data(), 128 * 4), 0);
  vulkan::free_blob_plan(&plan);
}

TEST(VulkanBlob, CorruptFieldsAreRefusedWithTheirName) {
  const std::vector<uint8_t> blob = small_graph().delegates.at(0).blob;
  struct Bad {
    std::vector<uint8_t> bytes;
    Error error;
    const char* message;
  };
  const size_t n0 = node_offset(blob, 0), n3 = node_offset(blob, 3);
  const std::vector<Bad> bad = {
      {std::vector<uint8_t>(blob.begin(), blob.begin() + 20), Error::InvalidProgram, "header"},
      {patched<char>(blob, 0, 'X'), Error::InvalidProgram, "magic"},
      {patched<uint32_t>(blob, 4, 1), Error::DelegateInvalidCompatibility, "version 1"},
      {patched<uint32_t>(blob, 4, 2), Error::DelegateInvalidCompatibility,
       "version 2, this runtime reads version 10"},
      {patched<uint32_t>(blob, 4, 3), Error::DelegateInvalidCompatibility, "version 3"},
      {patched<uint32_t>(blob, 4, 4), Error::DelegateInvalidCompatibility, "version 4"},
      {patched<uint32_t>(blob, 4, 5), Error::DelegateInvalidCompatibility, "version 5"},
      {patched<uint32_t>(blob, 4, 6), Error::DelegateInvalidCompatibility, "version 6"},
      {patched<uint32_t>(blob, 4, 7), Error::DelegateInvalidCompatibility, "version 7"},
      {patched<uint32_t>(blob, 4, 8), Error::DelegateInvalidCompatibility, "version 8"},
      {patched<uint32_t>(blob, 4, 9), Error::DelegateInvalidCompatibility, "version 9"},
      {patched<uint32_t>(blob, 4, 11), Error::DelegateInvalidCompatibility, "version 11"},
      {patched<uint32_t>(blob, offsetof(BlobHeader, storage), 2),
       Error::DelegateInvalidCompatibility, "storage type 2"},
      // An f32 blob read as f16: its constants hold 4 bytes per element, not 2 (w: 8 x 16).
      {patched<uint32_t>(blob, offsetof(BlobHeader, storage), 1), Error::InvalidProgram,
       "expected 256 bytes"},
      {patched<uint32_t>(blob, offsetof(BlobHeader, workgroup_size), 2048), Error::InvalidProgram,
       "workgroup_size 2048"},
      {patched<uint32_t>(blob, offsetof(BlobHeader, matmul_tile), 64), Error::InvalidProgram,
       "matmul_tile 64"},
      {patched<uint64_t>(blob, offsetof(BlobHeader, data_size), 1ull << 40), Error::InvalidProgram,
       "data section"},
      {patched<uint32_t>(blob, offsetof(BlobHeader, num_values), 0), Error::InvalidProgram,
       "num_values 0"},
      {patched<uint32_t>(blob, sizeof(BlobHeader) + offsetof(BlobValue, kind), 9),
       Error::InvalidProgram, "kind 9"},
      {patched<uint64_t>(blob, sizeof(BlobHeader) + offsetof(BlobValue, dims), 0),
       Error::InvalidProgram, "dims[0] = 0"},
      {patched<uint32_t>(blob, n0 + offsetof(BlobNode, op), 99), Error::InvalidProgram, "op 99"},
      {patched<uint32_t>(blob, n0 + offsetof(BlobNode, inputs), 1000), Error::InvalidProgram,
       "input 0 is value 1000"},
      // matmul K grows: a reads past its end.
      {patched<int32_t>(blob, n0 + offsetof(BlobNode, params) + 3 * 4, 17), Error::InvalidProgram,
       "reaches element"},
      {patched<int32_t>(blob, n0 + offsetof(BlobNode, params) + 1 * 4, -3), Error::InvalidProgram,
       "params[1] = -3"},
      // softmax rows grow past the output.
      {patched<int32_t>(blob, n3 + offsetof(BlobNode, params), 9), Error::InvalidProgram,
       "output elements"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    clear_error_message();
    EXPECT_EQ(parse(bad[i].bytes), bad[i].error) << "case " << i;
    EXPECT_NE(std::string(last_error_message()).find(bad[i].message), std::string::npos)
        << "case " << i << ": " << last_error_message();
  }
}

/// `blob` with the node record at `offset` replaced by `node` after `edit` must be refused as
/// InvalidProgram, the message holding `expected`.
void expect_node_refused(const std::vector<uint8_t>& blob, size_t offset, BlobNode node,
                         const std::function<void(BlobNode&)>& edit, const char* expected) {
  std::vector<uint8_t> bad = blob;
  edit(node);
  std::memcpy(bad.data() + offset, &node, sizeof(node));
  EXPECT_EQ(parse(bad), Error::InvalidProgram) << expected;
  EXPECT_NE(std::string(last_error_message()).find(expected), std::string::npos)
      << expected << ": " << last_error_message();
}

// A pad node's reads stay inside x: reflect pads are checked against their dim, the mode and
// the output's element count too.
TEST(VulkanBlob, PadNodeRefusesReadsOutsideItsInput) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 4, 5});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 4, 5});
  b.output(b.op("tern::pad", {r, b.int_list({2, 1, 3, 0}), b.string_value("reflect"), b.none()},
                DType::F32, {2, 7, 8}));
  const DelegatedNode d = delegated_node(b, 1, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t pad_node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Pad));
  ASSERT_EQ(n.params[0], 1);       // reflect
  ASSERT_EQ(n.params[17], 3);      // 3 rows before (dim 4 of 6)
  struct Case {
    int index;
    int32_t value;
    const char* message;
  } cases[] = {
      {17, 4, "reflect padding of a dim below its size"},   // 4 rows before a dim of 4
      {18, -1, "reflect padding of a dim below its size"},  // negative (a crop) in reflect mode
      {0, 2, "mode"},
      {12, 6, "x reaches element"},                         // input dims past x's 40 elements
      {6, 9, "output elements"},
  };
  for (const Case& c : cases) {
    expect_node_refused(blob, pad_node, n, [&](BlobNode& m) {
      m.params[c.index] = c.value;
      if (c.index == 12) m.params[6] = 9;  // keep the output consistent: only x's extent is wrong
    }, c.message);
  }
}

// A flip (version 7): a Copy node whose source stride is negative, reading x backwards from
// the flipped dim's last element; a stride or offset that reaches before x's first element, or
// a stride beyond 2^30, is refused.
TEST(VulkanBlob, CopyNodeWithNegativeStridesStaysInsideItsInput) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 4, 5});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 4, 5});
  b.output(b.op("tern::flip", {r, b.int_list({1})}, DType::F32, {2, 4, 5}));
  const DelegatedNode d = delegated_node(b, 1, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t copy_node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Copy));
  // Dims [1, 1, 1, 2, 4, 5] (padded to 6 at the front): strides [.., 20, -5, 1] from element 15.
  ASSERT_EQ(n.params[1 + 4], 4);
  ASSERT_EQ(n.params[7 + 4], -5);
  ASSERT_EQ(n.params[19], 15);
  struct Case {
    int index;
    int32_t value;
    const char* message;
  } cases[] = {
      {19, 14, "source reaches element -1, before the first"},  // one element too early
      {11, -6, "source reaches element -3"},                    // a step too long backwards
      {7 + 5, -1, "source reaches element"},                    // the last dim backwards too
      {11, -(1 << 30) - 1, "expected a source stride in -2^30..2^30"},
      {13 + 4, -5, "params[17] = -5"},  // destination strides stay >= 0
      {19, 25, "source reaches element 50 of a value of 40"},  // past x's end
  };
  for (const Case& c : cases) {
    expect_node_refused(blob, copy_node, n, [&](BlobNode& m) { m.params[c.index] = c.value; },
                        c.message);
  }
}

// A 3-D conv node: its depth fields (D, OD, KD, stride, pad, dilation) are checked like the
// 2-D ones, unused parameters must be 0, and extents whose product would wrap 64 bits (x's
// five dims each 2^30) are refused instead of wrapping to a small number.
TEST(VulkanBlob, ConvNodeChecksItsDepthFields) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 2, 3, 5, 5});
  const int w = b.constant_f32("w", {4, 2, 3, 3, 3}, random_floats(4 * 2 * 27, 7, -0.5f, 0.5f));
  const int c = b.op("tern::conv3d",
                     {x, w, b.none(), b.int_list({1, 2, 2}), b.int_list({1, 1, 1}),
                      b.int_list({1}), b.int_value(1)},
                     DType::F32, {1, 4, 3, 3, 3});
  b.output(b.op("tern::relu", {c}, DType::F32, {1, 4, 3, 3, 3}));
  const DelegatedNode d = delegated_node(b, 1, 0);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t conv_node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Conv));
  // D, OD, KD, stride d, pad d, dilation d as lowered from the graph.
  EXPECT_EQ(std::vector<int32_t>(n.params + 18, n.params + 24),
            (std::vector<int32_t>{3, 3, 3, 1, 1, 1}));
  struct Case {
    std::vector<std::pair<int, int32_t>> set;
    const char* message;
  } cases[] = {
      {{{20, 0}}, "params[20] = 0"},          // a kernel of depth 0
      {{{21, 0}}, "params[21] = 0"},          // depth stride 0
      {{{22, -1}}, "params[22] = -1"},        // negative depth padding
      {{{25, 1}}, "unused parameter"},
      {{{18, 4}}, "x reaches element"},       // one frame more than x holds
      {{{19, 4}}, "output elements"},
      {{{0, 1 << 30}, {1, 1 << 30}, {18, 1 << 30}, {2, 1 << 30}, {3, 1 << 30}}, "x reaches element"},
  };
  for (const Case& k : cases) {
    expect_node_refused(blob, conv_node, n, [&](BlobNode& m) {
      for (const auto& [index, value] : k.set) m.params[index] = value;
    }, k.message);
  }
}

// An upsample node's source steps (fparams) must be finite and >= 0 and its input sizes at
// most 2^24 (the shader clamps indices in f32): otherwise an index could leave x.
TEST(VulkanBlob, UpsampleNodeChecksItsSteps) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 2, 5, 4});
  const int r = b.op("tern::relu", {x}, DType::F32, {1, 2, 5, 4});
  b.output(b.op("tern::upsample_bilinear2d", {r, b.bool_value(false), b.none(), b.none()},
                DType::F32, {1, 2, 7, 9}));
  const DelegatedNode d = delegated_node(b, 1, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Upsample2d));
  EXPECT_FLOAT_EQ(n.fparams[0], 5.0f / 7.0f);  // in / out without a scale
  EXPECT_FLOAT_EQ(n.fparams[1], 4.0f / 9.0f);
  struct Case {
    int param;  ///< -1: fparams[0] = value
    double value;
    const char* message;
  } cases[] = {
      {-1, std::nan(""), "source step 0"},
      {-1, -0.5, "source step 0"},
      {-1, std::numeric_limits<float>::infinity(), "source step 0"},
      {5, 2, "flag parameter"},
      {7, 1, "unused parameter"},
      {1, (1 << 24) + 1, "input size <= 2^24"},
      {3, 8, "output elements"},
  };
  for (const Case& c : cases) {
    expect_node_refused(blob, node, n, [&](BlobNode& m) {
      if (c.param < 0) {
        m.fparams[0] = static_cast<float>(c.value);
      } else {
        m.params[c.param] = static_cast<int32_t>(c.value);
      }
    }, c.message);
  }
}

// rms_norm is the layer-norm node in RMS mode (params[4] = 1, version 9): the flag must be 0 or
// 1, an RMS norm has no bias, and the parameters after it are 0.
TEST(VulkanBlob, NormNodeChecksItsRmsFlag) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 8});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 8});
  b.output(b.op("tern::rms_norm", {r, b.int_list({8}), b.none(), b.none()}, DType::F32, {2, 8}));
  const DelegatedNode d = delegated_node(b, 1, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::LayerNorm));
  EXPECT_EQ(n.params[4], 1);
  EXPECT_FLOAT_EQ(n.fparams[0], 1.1920929e-7f);  // eps None: f32's machine epsilon
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[4] = 2; }, "flag parameter");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[3] = 1; }, "bias of an RMS norm");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[5] = 1; }, "unused parameter");
}

// A transposed conv (node op 19, version 9): the output extent must be the window's, plus an
// output padding below the stride; a bias flag without a bias input, channels the groups do
// not divide and parameters after the used ones are refused by name.
TEST(VulkanBlob, ConvTransposeNodeChecksItsWindow) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 4, 3, 5});
  const int r = b.op("tern::relu", {x}, DType::F32, {1, 4, 3, 5});
  const int w = b.constant_f32("w", {4, 2, 3, 3}, std::vector<float>(72, 0.5f));
  b.output(b.op("tern::conv_transpose2d",
                {r, w, b.none(), b.int_list({2}), b.int_list({1}), b.int_list({1}), b.int_value(1),
                 b.int_list({1})},
                DType::F32, {1, 2, 6, 10}));
  const DelegatedNode d = delegated_node(b, 1, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t node = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::ConvTranspose));
  EXPECT_EQ(n.params[5], 6);   // (3 - 1) * 2 - 2 + 2 + 1 + output padding 1
  EXPECT_EQ(n.params[6], 10);  // (5 - 1) * 2 - 2 + 2 + 1 + 1
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[5] = 7; }, "OH");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[6] = 8; }, "OW");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[16] = 1; }, "has_bias vs inputs");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[15] = 3; }, "divisible by groups");
  expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[17] = 1; }, "unused parameter");
}

// Grouped-query attention: q [1, 2, 3, L, E] against k/v [1, 2, 1, S, E] lowers with kv group 3
// (query batch z reads k/v batch z / 3), a mask [2, 1, L, S] with mask group 3; a group below 1,
// one that does not divide the batch, and one that makes an input's extent outgrow its buffer
// are refused by name.
TEST(VulkanBlob, AttentionKvGroupIsChecked) {
  GraphBuilder b;
  const int q = b.input("q", DType::F32, {1, 2, 3, 4, 8});
  const int k = b.input("k", DType::F32, {1, 2, 1, 5, 8});
  const int v = b.input("v", DType::F32, {1, 2, 1, 5, 8});
  const int m = b.input("m", DType::F32, {2, 1, 4, 5});
  b.output(b.op("tern::scaled_dot_product_attention", {q, k, v, m, b.bool_value(false), b.none()},
                DType::F32, {1, 2, 3, 4, 8}));
  const DelegatedNode d = delegated_node(b, 0, 0);
  ASSERT_TRUE(d.parsed) << d.error;
  const std::vector<uint8_t>& blob = d.blob;
  const size_t at = d.offset;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Attention));
  ASSERT_EQ(n.params[0], 6);   // batch 1 * 2 * 3
  ASSERT_EQ(n.params[13], 3);  // kv group
  ASSERT_EQ(n.params[8], 40);  // k batch stride S * E
  ASSERT_EQ(n.params[14], 3);  // mask group: the mask holds the kv-head dim, broadcasts rep
  ASSERT_EQ(n.params[10], 20);  // mask batch stride L * S
  struct Case {
    int index;
    int32_t group;
    const char* message;
  } cases[] = {{13, 0, "params[13] = 0"},
               {13, 4, "kv group dividing the batch"},
               {13, 1, "k reaches element"},
               {14, 0, "params[14] = 0"},
               {14, 4, "mask group dividing the batch"},
               {14, 1, "mask reaches element"}};
  for (const Case& c : cases) {
    std::vector<uint8_t> bad = blob;
    BlobNode m = n;
    m.params[c.index] = c.group;
    std::memcpy(bad.data() + at, &m, sizeof(m));
    EXPECT_EQ(parse(bad), Error::InvalidProgram) << c.message;
    EXPECT_NE(std::string(last_error_message()).find(c.message), std::string::npos)
        << c.message << ": " << last_error_message();
  }
}

TEST(VulkanBlob, EveryByteFlipIsRefusedOrHarmless) {
  // The header and tables of a real blob (the constants' bytes are data: any value is valid).
  const compiler::Graph g = small_graph();
  const std::vector<uint8_t> blob = g.delegates.at(0).blob;
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  size_t refused = 0, accepted = 0;
  for (size_t i = 0; i < h.data_offset; ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> b = blob;
      b[i] ^= mask;
      if (parse(b) == Error::Ok) {
        ++accepted;
      } else {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, accepted);
  std::printf("vulkan blob byte flips: %zu refused, %zu accepted\n", refused, accepted);
}

/// embedding (nf4 table) -> linear (nf4 weight, bias): a blob with ops 15 and 14.
std::vector<uint8_t> quant_blob(const char* scheme) {
  GraphBuilder b;
  const int idx = b.input("idx", DType::I64, {3});
  const int t = b.constant_f32("t", {20, 16}, random_floats(320, 5));
  const int w = b.constant_f32("w", {9, 16}, random_floats(144, 6));
  const int bias = b.constant_f32("b", {9}, random_floats(9, 7));
  const int e = b.op("tern::embedding", {t, idx}, DType::F32, {3, 16});
  b.output(b.op("tern::linear", {e, w, bias}, DType::F32, {3, 9}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.build());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme(scheme);
  compiler::quantize_program(program, options);
  compiler::Graph& g = program.methods[0];
  compiler::register_vulkan_backend_compiler();
  compiler::partition(g, {"vulkan"});
  return compiler::VulkanBackendCompiler().lower(g, g.delegates.at(0)).blob;
}

// A quantized weight's bytes are exactly its scheme's layout for the node's shape; the scheme
// is legal; each node's input has the type the op reads. Errors name expected and found.
TEST(VulkanBlob, QuantizedWeightsAreChecked) {
  const std::vector<uint8_t> blob = quant_blob("nf4:block=32:double");
  ASSERT_EQ(parse(blob), Error::Ok) << last_error_message();
  AlignedBlob a(blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), blob.size()), &plan), Error::Ok);
  ASSERT_EQ(plan.header.num_nodes, 2u);
  const BlobNode emb = plan.nodes[0], lin = plan.nodes[1];
  ASSERT_EQ(emb.op, static_cast<uint32_t>(vulkan::NodeOp::QuantEmbedding));
  ASSERT_EQ(lin.op, static_cast<uint32_t>(vulkan::NodeOp::QuantLinear));
  const uint32_t wv = lin.inputs[1];
  // [9, 16] nf4: 72 code bytes (18 words), 5 blocks of 32: 2 words of dq codes, 1 absmax2,
  // the 256-entry table.
  EXPECT_EQ(plan.values[wv].type, static_cast<uint32_t>(vulkan::ValueType::Quant));
  EXPECT_EQ(plan.values[wv].data_bytes, 4u * (18 + 2 + 1 + 256));
  EXPECT_EQ(lin.params[vulkan::kQFormat], 1);
  EXPECT_EQ(lin.params[vulkan::kQBlockSize], 32);
  EXPECT_EQ(lin.params[vulkan::kQDqBlockSize], 256);
  const size_t value_base = sizeof(BlobHeader) + wv * sizeof(BlobValue);
  const uint64_t bytes = plan.values[wv].data_bytes;
  vulkan::free_blob_plan(&plan);
  const size_t n1 = node_offset(blob, 1), n0 = node_offset(blob, 0);
  const size_t qp = n1 + offsetof(BlobNode, params);
  struct Bad {
    std::vector<uint8_t> bytes;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {patched<uint64_t>(blob, value_base + offsetof(BlobValue, data_bytes), bytes - 4),
       "of 1104 bytes, expected 1108 (72 bytes of nf4 codes for [9, 16] and 5 blocks' absmax)"},
      {patched<uint64_t>(blob, value_base + offsetof(BlobValue, data_bytes), bytes - 2),
       "expected a positive multiple of 4"},
      {patched<int32_t>(blob, qp + 4 * vulkan::kQBlockSize, 48), "block 48"},
      {patched<int32_t>(blob, qp + 4 * vulkan::kQFormat, 7), "format 7"},
      {patched<int32_t>(blob, qp + 4 * vulkan::kQDqBlockSize, 0), "dq block 0"},
      {patched<int32_t>(blob, qp + 4 * vulkan::kQTableWord, 20),
       "section words 18, 20, 20 (scales, absmax2, table), expected 18, 20, 21"},
      {patched<int32_t>(blob, qp + 4 * vulkan::kQRows, 10), "expected [9, 16] from the node's shape"},
      {patched<int32_t>(blob, qp + 4 * 4, 0), "expected [16, 9] from the node's shape"},  // W not transposed
      {patched<int32_t>(blob, qp + 4 * 2, 17), "expected [9, 17]"},                      // K
      {patched<int32_t>(blob, qp + 4 * 27, 1), "unused parameter after the scheme"},
      {patched<float>(blob, n1 + offsetof(BlobNode, fparams), std::numeric_limits<float>::infinity()),
       "offset not finite"},
      {patched<uint32_t>(blob, n1 + offsetof(BlobNode, inputs) + 4, lin.inputs[0]),
       "is f32, expected quantized weight"},
      {patched<uint32_t>(blob, n0 + offsetof(BlobNode, inputs), emb.inputs[1]),
       "is i64, expected quantized weight"},
      {patched<uint32_t>(blob, value_base + offsetof(BlobValue, kind), 1), "type 2"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    clear_error_message();
    EXPECT_EQ(parse(bad[i].bytes), Error::InvalidProgram) << "case " << i;
    EXPECT_NE(std::string(last_error_message()).find(bad[i].message), std::string::npos)
        << "case " << i << ": " << last_error_message();
  }
  // Every FP8 granularity parses; a tile on a per-channel scheme does not.
  for (const char* scheme : {"fp8_e4m3", "fp8_e5m2:per_tensor", "fp8_e4m3:block=4x8", "nf4"}) {
    EXPECT_EQ(parse(quant_blob(scheme)), Error::Ok) << scheme << ": " << last_error_message();
  }
  const std::vector<uint8_t> fp8 = quant_blob("fp8_e4m3");
  EXPECT_EQ(parse(patched<int32_t>(fp8, node_offset(fp8, 1) + offsetof(BlobNode, params) +
                                            4 * vulkan::kQBlockRows, 4)),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("tile 4x0"), std::string::npos)
      << last_error_message();
}

TEST(VulkanBlob, QuantizedBlobByteFlipsAreRefusedOrInBounds) {
  for (const char* scheme : {"nf4:double", "fp8_e5m2:block=4x8"}) {
    const std::vector<uint8_t> blob = quant_blob(scheme);
    BlobHeader h;
    std::memcpy(&h, blob.data(), sizeof(h));
    size_t refused = 0, accepted = 0;
    for (size_t i = 0; i < h.data_offset; ++i) {
      for (uint8_t mask : {0x01, 0x80, 0xFF}) {
        std::vector<uint8_t> b = blob;
        b[i] ^= mask;
        (parse(b) == Error::Ok ? accepted : refused) += 1;
      }
    }
    EXPECT_GT(refused, accepted) << scheme;
  }
}

TEST(VulkanBlob, IncompatibleBlobsAndSpecsFallBack) {
  register_all();
  const compiler::Graph g = small_graph();
  const BackendInterface& be = vulkan_backend_interface();
  BackendInitContext ctx;
  {
    AlignedBlob a(patched<uint32_t>(g.delegates.at(0).blob, 4, vulkan::kBlobVersion + 1));
    EXPECT_EQ(be.init(ctx, a.buffer(), {}).error(), Error::DelegateInvalidCompatibility);
  }
  {
    AlignedBlob a(g.delegates.at(0).blob);
    const uint8_t bf16[] = {'b', 'f', '1', '6'};
    const CompileSpecView spec{"storage", Span<const uint8_t>(bf16, 4)};
    EXPECT_EQ(be.init(ctx, a.buffer(), Span<const CompileSpecView>(&spec, 1)).error(),
              Error::DelegateInvalidCompatibility);
    EXPECT_NE(std::string(last_error_message()).find("implements f32 and f16"), std::string::npos)
        << last_error_message();
  }
  {
    // The spec and the blob disagree: malformed.
    AlignedBlob a(g.delegates.at(0).blob);
    const uint8_t f16[] = {'f', '1', '6'};
    const CompileSpecView spec{"storage", Span<const uint8_t>(f16, 3)};
    EXPECT_EQ(be.init(ctx, a.buffer(), Span<const CompileSpecView>(&spec, 1)).error(),
              Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("blob's storage is 0"), std::string::npos)
        << last_error_message();
  }
  {
    AlignedBlob a(patched<uint32_t>(g.delegates.at(0).blob, 0, 0));
    EXPECT_EQ(be.init(ctx, a.buffer(), {}).error(), Error::InvalidProgram);
  }
}

// f16 storage: header storage 1, version 6, constants as f16 (2 bytes per element, rounded
// to nearest even from the graph's f32), the compile spec storage=f16.
TEST(VulkanBlob, F16StorageRoundTrip) {
  const compiler::Graph g = small_graph(vulkan::kStorageF16);
  const compiler::DelegateRegion& region = g.delegates.at(0);
  ASSERT_EQ(region.compile_specs.size(), 1u);
  EXPECT_EQ(region.compile_specs[0].first, "storage");
  EXPECT_EQ(std::string(region.compile_specs[0].second.begin(), region.compile_specs[0].second.end()),
            "f16");
  AlignedBlob a(region.blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), region.blob.size()), &plan), Error::Ok)
      << last_error_message();
  EXPECT_EQ(plan.header.version, vulkan::kBlobVersion);
  EXPECT_EQ(plan.header.storage, vulkan::kStorageF16);
  const BlobValue& wv = plan.values[plan.nodes[0].inputs[1]];
  ASSERT_EQ(wv.kind, static_cast<uint32_t>(vulkan::ValueKind::Constant));
  ASSERT_EQ(wv.data_bytes, 128u * 2);
  EXPECT_EQ(vulkan::value_bytes(wv, plan.header.storage), 256u);
  EXPECT_EQ(vulkan::value_bytes(wv, vulkan::kStorageF32), 512u);
  const std::vector<float> w = random_floats(128, 1);
  for (size_t i = 0; i < 128; ++i) {
    uint16_t h;
    std::memcpy(&h, plan.data + wv.data_offset + 2 * i, 2);
    ASSERT_EQ(h, portable::float_to_half(w[i])) << "element " << i;
  }
  vulkan::free_blob_plan(&plan);
  // The f16 blob read as f32: its constants are half the size.
  EXPECT_EQ(parse(patched<uint32_t>(region.blob, offsetof(BlobHeader, storage), 0)),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("expected 512 bytes"), std::string::npos)
      << last_error_message();
}

TEST(VulkanBlob, F16StorageByteFlipsAreRefusedOrInBounds) {
  const std::vector<uint8_t> blob = small_graph(vulkan::kStorageF16).delegates.at(0).blob;
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  size_t refused = 0, accepted = 0;
  for (size_t i = 0; i < h.data_offset; ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> b = blob;
      b[i] ^= mask;
      (parse(b) == Error::Ok ? accepted : refused) += 1;
    }
  }
  EXPECT_GT(refused, accepted);
}

// Quantized weights are f32-storage only: the f16 compiler does not take them (the partitioner
// keeps them out of f16 regions), and the reader refuses them in an f16 blob.
TEST(VulkanBlob, F16StorageRefusesQuantizedWeights) {
  const std::vector<uint8_t> blob = quant_blob("nf4:block=32");
  EXPECT_EQ(parse(patched<uint32_t>(blob, offsetof(BlobHeader, storage), 1)),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("f32-storage blob"), std::string::npos)
      << last_error_message();

  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 64});
  const int w = b.constant_f32("w", {8, 64}, random_floats(512, 3));
  b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 8}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.build());
  compiler::QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme("nf4:block=32");
  compiler::quantize_program(program, options);
  const compiler::Graph& g = program.methods[0];
  EXPECT_TRUE(compiler::VulkanBackendCompiler().supports(g, g.nodes[0]));
  EXPECT_FALSE(compiler::VulkanBackendCompiler(vulkan::kStorageF16).supports(g, g.nodes[0]));
  EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(g, g.nodes[0], vulkan::kStorageF16)
                .find("f16 storage (vulkan:f16) takes no quantized weights"),
            std::string::npos);
}

// `--backend vulkan:f16` / `vulkan:f32`: the options the partitioner hands to with_options.
TEST(VulkanBlob, WithOptionsParsesTheStorageType) {
  const compiler::VulkanBackendCompiler f32;
  EXPECT_EQ(f32.with_options("f32"), nullptr);
  EXPECT_NE(f32.with_options("f16"), nullptr);
  EXPECT_EQ(f32.with_options("f16:f32"), nullptr);  // the last one wins
  const compiler::VulkanBackendCompiler f16(vulkan::kStorageF16);
  EXPECT_EQ(f16.with_options("f16"), nullptr);
  EXPECT_NE(f16.with_options("f32"), nullptr);
  try {
    (void)f32.with_options("bf16");
    ADD_FAILURE() << "bf16 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'bf16' in 'vulkan:bf16' (options: f32, f16"),
              std::string::npos)
        << e.what();
  }
  // Through the partitioner: the f16 region's blob and spec.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 8});
  const int r = b.op("tern::relu", {x}, DType::F32, {4, 8});
  b.output(b.op("tern::sigmoid", {r}, DType::F32, {4, 8}));
  compiler::Graph g = b.build();
  compiler::register_vulkan_backend_compiler();
  compiler::partition(g, {"vulkan:f16"});
  ASSERT_EQ(g.delegates.size(), 1u);
  BlobHeader h;
  std::memcpy(&h, g.delegates[0].blob.data(), sizeof(h));
  EXPECT_EQ(h.storage, vulkan::kStorageF16);
  ASSERT_EQ(g.delegates[0].compile_specs.size(), 1u);
}

// A device without shaderFloat16 / storageBuffer16BitAccess (simulated: the features hidden)
// refuses an f16 blob as DelegateInvalidCompatibility naming the missing features; a program
// then runs the portable fallback with the same outputs. With the features, the backend runs.
// A blob built for bigger workgroups than the device allows (simulated: a device capped at 128
// invocations; the blob's 1-D shaders use 256): init refuses it as incompatible naming both,
// and the program runs its portable fallback with the portable outputs.
TEST(VulkanBlob, AWorkgroupLargerThanTheDeviceAllowsFallsBack) {
  register_all();
  const compiler::Graph g = small_graph();
  AlignedBlob probe(g.delegates.at(0).blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(probe.data(), g.delegates.at(0).blob.size()),
                               &plan), Error::Ok);
  ASSERT_EQ(plan.header.workgroup_size, 256u);
  vulkan::free_blob_plan(&plan);
  const BackendInterface& be = vulkan_backend_interface();
  BackendInitContext ctx;
  set_vulkan_max_invocations_override(128);
  {
    AlignedBlob a(g.delegates.at(0).blob);
    EXPECT_EQ(be.init(ctx, a.buffer(), {}).error(), Error::DelegateInvalidCompatibility);
    EXPECT_NE(std::string(last_error_message())
                  .find("workgroup of 256 invocations exceeds device"), std::string::npos)
        << last_error_message();
    EXPECT_NE(std::string(last_error_message()).find("max 128 invocations"), std::string::npos)
        << last_error_message();
  }
  const std::vector<uint8_t> pte = testing::compile_graph(g);
  const std::vector<std::vector<float>> inputs = {random_floats(48, 78)};
  const RunResult capped = run_program(pte, g, inputs, /*disable=*/false);
  set_vulkan_max_invocations_override(0);
  const RunResult portable = run_program(pte, g, inputs, /*disable=*/true);
  const RunResult device = run_program(pte, g, inputs, /*disable=*/false);
  EXPECT_EQ(capped.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  EXPECT_EQ(device.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  EXPECT_EQ(capped.outputs, portable.outputs);
}

TEST(VulkanBlob, F16StorageFallsBackOnADeviceWithoutTheFeatures) {
  register_all();
  ASSERT_TRUE(vulkan_device_has_f16_storage()) << "lavapipe reports both features";
  const compiler::Graph g = small_graph(vulkan::kStorageF16);
  const BackendInterface& be = vulkan_backend_interface();
  BackendInitContext ctx;
  const uint8_t f16[] = {'f', '1', '6'};
  const CompileSpecView spec{"storage", Span<const uint8_t>(f16, 3)};
  set_vulkan_hide_f16_features(true);
  {
    AlignedBlob a(g.delegates.at(0).blob);
    EXPECT_EQ(be.init(ctx, a.buffer(), Span<const CompileSpecView>(&spec, 1)).error(),
              Error::DelegateInvalidCompatibility);
    EXPECT_NE(std::string(last_error_message())
                  .find("lacks shaderFloat16 and storageBuffer16BitAccess"),
              std::string::npos)
        << last_error_message();
  }
  const std::vector<uint8_t> pte = testing::compile_graph(g);
  const std::vector<std::vector<float>> inputs = {random_floats(48, 77)};
  const RunResult hidden = run_program(pte, g, inputs, /*disable=*/false);
  set_vulkan_hide_f16_features(false);
  const RunResult portable = run_program(pte, g, inputs, /*disable=*/true);
  const RunResult device = run_program(pte, g, inputs, /*disable=*/false);
  EXPECT_EQ(hidden.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  EXPECT_EQ(device.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(hidden.outputs.size(), 2u);
  ASSERT_EQ(device.outputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(hidden.outputs[i], portable.outputs[i]) << "output " << i;
    EXPECT_LE(nmse(device.outputs[i], portable.outputs[i]), 1e-5) << "output " << i;
  }
}

// index_select by a constant index map (version 10): the indices are an i64 constant of raw
// int64 bytes (f16 storage too), the node the embedding node with an outer count; an index the
// blob's bytes carry outside [0, size) is refused at parse, naming it, and so is an i64
// constant whose byte count is not 8 per element, and an outer count past the table.
TEST(VulkanBlob, ConstantIndicesAreCheckedAtParse) {
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {2, 5, 3});
    const int r = b.op("tern::relu", {x}, DType::F32, {2, 5, 3});
    const std::vector<int64_t> map{4, 0, 0, 2};
    std::vector<uint8_t> bytes(map.size() * 8);
    std::memcpy(bytes.data(), map.data(), bytes.size());
    const int idx = b.constant("map", DType::I64, {4}, bytes);
    b.output(b.op("tern::index_select", {r, b.int_value(1), idx}, DType::F32, {2, 4, 3}));
    delegate_vulkan(b, 0, 1, storage);
    const std::vector<uint8_t> blob = b.build().delegates.at(0).blob;
    ASSERT_EQ(parse(blob), Error::Ok) << last_error_message();
    const size_t node = node_offset(blob, 1);
    BlobNode n;
    std::memcpy(&n, blob.data() + node, sizeof(n));
    ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Embedding));
    EXPECT_EQ(n.params[0], 5);  // rows of the selected dim
    EXPECT_EQ(n.params[1], 3);  // inner
    EXPECT_EQ(n.params[2], 4);  // indices
    EXPECT_EQ(n.params[3], 2);  // outer
    BlobHeader h;
    std::memcpy(&h, blob.data(), sizeof(h));
    const size_t value_at = sizeof(BlobHeader) + n.inputs[1] * sizeof(BlobValue);
    BlobValue v;
    std::memcpy(&v, blob.data() + value_at, sizeof(v));
    ASSERT_EQ(v.kind, static_cast<uint32_t>(vulkan::ValueKind::Constant));
    ASSERT_EQ(v.type, static_cast<uint32_t>(vulkan::ValueType::I64));
    EXPECT_EQ(v.data_bytes, 32u);  // raw int64, whatever the storage
    const size_t data_at = h.data_offset + v.data_offset;
    EXPECT_EQ(std::memcmp(blob.data() + data_at, map.data(), 32), 0);
    for (int64_t bad : {int64_t{5}, int64_t{-1}}) {
      std::vector<uint8_t> corrupt = blob;
      std::memcpy(corrupt.data() + data_at + 16, &bad, 8);
      EXPECT_EQ(parse(corrupt), Error::InvalidProgram);
      EXPECT_NE(std::string(last_error_message())
                    .find("constant index " + std::to_string(bad) + " at position 2 outside [0, 5)"),
                std::string::npos)
          << last_error_message();
    }
    std::vector<uint8_t> short_bytes = blob;
    BlobValue sv = v;
    sv.data_bytes = 16;
    std::memcpy(short_bytes.data() + value_at, &sv, sizeof(sv));
    EXPECT_EQ(parse(short_bytes), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("expected 32 bytes"), std::string::npos)
        << last_error_message();
    expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[3] = 3; }, "weight reaches");
    expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[3] = 0; }, "params[3] = 0");
    expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[5] = 1; }, "unused parameter");
    // params[4] = 1 says the indices are floats: these are i64.
    expect_node_refused(blob, node, n, [](BlobNode& m) { m.params[4] = 1; }, "float-held indices");
  }
}

// A cumsum node (version 10) reads and writes outer x size x inner elements, each count at
// least 1, nothing after them; a reduce node's kind (version 10) is 0 (sum), 1 (max), 2 (min),
// 3 (argmax) or 4 (argmin).
TEST(VulkanBlob, CumsumAndReduceKindAreChecked) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 5, 3});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 5, 3});
  const int c = b.op("tern::cumsum", {r, b.int_value(1)}, DType::F32, {2, 5, 3});
  b.output(b.op("tern::amax", {c, b.int_list({2}), b.bool_value(false)}, DType::F32, {2, 5}));
  const DelegatedNode d = delegated_node(b, 2, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  BlobNode n = d.node;
  ASSERT_EQ(n.op, static_cast<uint32_t>(vulkan::NodeOp::Cumsum));
  EXPECT_EQ(n.params[0], 2);
  EXPECT_EQ(n.params[1], 5);
  EXPECT_EQ(n.params[2], 3);
  expect_node_refused(d.blob, d.offset, n, [](BlobNode& m) { m.params[1] = 6; }, "x reaches element 36");
  expect_node_refused(d.blob, d.offset, n, [](BlobNode& m) { m.params[0] = 1; }, "output elements");
  expect_node_refused(d.blob, d.offset, n, [](BlobNode& m) { m.params[2] = 0; }, "params[2] = 0");
  expect_node_refused(d.blob, d.offset, n, [](BlobNode& m) { m.params[3] = 1; }, "unused parameter");
  const size_t reduce_at = node_offset(d.blob, 2);
  BlobNode red;
  std::memcpy(&red, d.blob.data() + reduce_at, sizeof(red));
  ASSERT_EQ(red.op, static_cast<uint32_t>(vulkan::NodeOp::Reduce));
  EXPECT_EQ(red.params[0], static_cast<int32_t>(vulkan::ReduceKind::Max));
  expect_node_refused(d.blob, reduce_at, red, [](BlobNode& m) { m.params[0] = 5; }, "reduce kind");
  expect_node_refused(d.blob, reduce_at, red, [](BlobNode& m) { m.params[0] = -1; }, "reduce kind");
}

// Bool values (version 10): a bool input and a bool output are value type 4 at the edges,
// bools inside are f32; type 4 on an internal value or a constant is refused.
TEST(VulkanBlob, BoolValuesOnlyAtTheEdges) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 4});
  const int m = b.input("m", DType::Bool, {2, 4});
  const int gt = b.op("tern::gt", {x, b.double_value(0.0)}, DType::Bool, {2, 4});
  const int both = b.op("tern::logical_and", {gt, m}, DType::Bool, {2, 4});
  b.output(b.op("tern::logical_not", {both}, DType::Bool, {2, 4}));
  delegate_vulkan(b, 0, 2);
  const std::vector<uint8_t> blob = b.build().delegates.at(0).blob;
  AlignedBlob a(blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), blob.size()), &plan), Error::Ok)
      << last_error_message();
  std::vector<uint32_t> kinds_of_bool, internal_types;
  size_t internal = 0;  // the first internal value (gt's)
  for (uint32_t i = 0; i < plan.header.num_values; ++i) {
    const BlobValue& v = plan.values[i];
    if (v.type == static_cast<uint32_t>(vulkan::ValueType::Bool)) kinds_of_bool.push_back(v.kind);
    if (v.kind == static_cast<uint32_t>(vulkan::ValueKind::Internal)) {
      if (internal_types.empty()) internal = i;
      internal_types.push_back(v.type);
    }
  }
  vulkan::free_blob_plan(&plan);
  EXPECT_EQ(kinds_of_bool, (std::vector<uint32_t>{1, 2}));  // m in, the logical_not out
  EXPECT_EQ(internal_types, (std::vector<uint32_t>{0, 0}));  // gt, both: 0 / 1 floats
  // The internal value written by gt made bool, or a bool constant: refused.
  for (uint32_t kind : {0u, 3u}) {
    std::vector<uint8_t> bad = blob;
    const size_t at = sizeof(BlobHeader) + internal * sizeof(BlobValue);
    BlobValue v;
    std::memcpy(&v, bad.data() + at, sizeof(v));
    ASSERT_EQ(v.kind, 0u);
    v.type = static_cast<uint32_t>(vulkan::ValueType::Bool);
    v.kind = kind;
    std::memcpy(bad.data() + at, &v, sizeof(v));
    EXPECT_EQ(parse(bad), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("type 4"), std::string::npos)
        << last_error_message();
  }
}

// An argmax's indices (version 10): a reduce node of kind 3 writing floats, read by an
// embedding node with params[4] = 1 and leaving as value type 5 (i64 as floats); the reduced
// count is checked against the storage's exact integers, the float-index flag against the
// indices' type, and type 5 is refused on an internal value.
TEST(VulkanBlob, ArgmaxIndicesHeldAsFloatsAreChecked) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {3, 6});
  const int r = b.op("tern::relu", {x}, DType::F32, {3, 6});
  const int am = b.op("tern::argmax", {r, b.int_value(1), b.bool_value(false)}, DType::I64, {3});
  const int cb = b.constant_f32("cb", {6, 2}, std::vector<float>(12, 0.5f));
  b.output(b.op("tern::embedding", {cb, am}, DType::F32, {3, 2}));
  b.output(am);
  const DelegatedNode d = delegated_node(b, 2, 1);
  ASSERT_TRUE(d.parsed) << d.error;
  BlobNode red = d.node;
  ASSERT_EQ(red.op, static_cast<uint32_t>(vulkan::NodeOp::Reduce));
  EXPECT_EQ(red.params[0], static_cast<int32_t>(vulkan::ReduceKind::ArgMax));
  expect_node_refused(d.blob, d.offset, red, [](BlobNode& m) {
    m.params[14 + 5] = (1 << 24) + 1;  // reduced count past f32's exact integers
  }, "argmax / argmin reduced elements");
  const size_t emb_at = node_offset(d.blob, 2);
  BlobNode emb;
  std::memcpy(&emb, d.blob.data() + emb_at, sizeof(emb));
  ASSERT_EQ(emb.op, static_cast<uint32_t>(vulkan::NodeOp::Embedding));
  EXPECT_EQ(emb.params[4], 1);
  expect_node_refused(d.blob, emb_at, emb, [](BlobNode& m) { m.params[4] = 2; }, "flag parameter");
  // Without the flag the reader wants i64 indices, and the argmax's are floats.
  expect_node_refused(d.blob, emb_at, emb, [](BlobNode& m) { m.params[4] = 0; }, "indices");
  AlignedBlob a(d.blob);
  vulkan::BlobPlan plan;
  ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), d.blob.size()), &plan), Error::Ok);
  const uint32_t indices = plan.nodes[1].output;
  const BlobValue v = plan.values[indices];
  vulkan::free_blob_plan(&plan);
  EXPECT_EQ(v.kind, static_cast<uint32_t>(vulkan::ValueKind::ExternalOutput));
  EXPECT_EQ(v.type, static_cast<uint32_t>(vulkan::ValueType::I64AsFloat));
  std::vector<uint8_t> bad = d.blob;
  BlobValue iv = v;
  iv.kind = static_cast<uint32_t>(vulkan::ValueKind::Internal);
  iv.arg = vulkan::kNoValue;
  std::memcpy(bad.data() + sizeof(BlobHeader) + indices * sizeof(BlobValue), &iv, sizeof(iv));
  EXPECT_EQ(parse(bad), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("type 5"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace tern::vulkan_test
