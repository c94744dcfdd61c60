// Each vulkan blob node's own checks: a node whose parameters would take a shader outside
// the buffers it binds, or whose operands have the wrong type, rank or kind, is refused at
// parse with a message naming the node, the field, what was expected and what was found.
// (The blob as a whole, byte flips and storage types: vulkan_blob_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/runtime/blob_reader.h"
#include "tests/backends/vulkan/vulkan_test_util.h"

namespace tern::vulkan_test {
namespace {

using vulkan::BlobHeader;
using vulkan::BlobNode;
using vulkan::BlobValue;

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

/// The value records of `blob`, which must parse (a test failure, and none, if it does not).
std::vector<BlobValue> values_of(const std::vector<uint8_t>& blob) {
  AlignedBlob a(blob);
  vulkan::BlobPlan plan;
  if (vulkan::parse_blob(Span<const uint8_t>(a.data(), blob.size()), &plan) != Error::Ok) {
    ADD_FAILURE() << last_error_message();
    return {};
  }
  std::vector<BlobValue> values(plan.values, plan.values + plan.header.num_values);
  vulkan::free_blob_plan(&plan);
  return values;
}

/// `blob` with value record `i` changed by `edit` must be refused as InvalidProgram, the
/// message holding `expected`.
void expect_value_refused(const std::vector<uint8_t>& blob, size_t i,
                          const std::function<void(BlobValue&)>& edit, const char* expected) {
  std::vector<uint8_t> bad = blob;
  const size_t at = sizeof(BlobHeader) + i * sizeof(BlobValue);
  BlobValue v;
  std::memcpy(&v, bad.data() + at, sizeof(v));
  edit(v);
  std::memcpy(bad.data() + at, &v, sizeof(v));
  EXPECT_EQ(parse(bad), Error::InvalidProgram) << expected;
  EXPECT_NE(std::string(last_error_message()).find(expected), std::string::npos)
      << expected << ": " << last_error_message();
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
  const std::vector<BlobValue> values = values_of(blob);
  std::vector<uint32_t> kinds_of_bool, internal_types;
  size_t internal = 0;  // the first internal value (gt's)
  for (size_t i = 0; i < values.size(); ++i) {
    const BlobValue& v = values[i];
    if (v.type == static_cast<uint32_t>(vulkan::ValueType::Bool)) kinds_of_bool.push_back(v.kind);
    if (v.kind == static_cast<uint32_t>(vulkan::ValueKind::Internal)) {
      if (internal_types.empty()) internal = i;
      internal_types.push_back(v.type);
    }
  }
  EXPECT_EQ(kinds_of_bool, (std::vector<uint32_t>{1, 2}));  // m in, the logical_not out
  EXPECT_EQ(internal_types, (std::vector<uint32_t>{0, 0}));  // gt, both: 0 / 1 floats
  // The internal value written by gt made bool, or a bool constant: refused.
  for (uint32_t kind : {0u, 3u}) {
    expect_value_refused(blob, internal, [kind](BlobValue& v) {
      v.type = static_cast<uint32_t>(vulkan::ValueType::Bool);
      v.kind = kind;
    }, "type 4");
  }
}

// An int64 input read only by casts (version 11): value type 6 on the external input, read by
// the casts' copy and ne nodes; the type on an output, an internal value or a constant, or as
// an embedding's indices, is refused.
TEST(VulkanBlob, Int64ReadByCastsOnlyAsAnInput) {
  GraphBuilder b;
  const int m = b.input("m", DType::I64, {2, 4});
  const int ids = b.input("ids", DType::I64, {3});
  const int table = b.constant_f32("table", {5, 2}, random_floats(10, 3));
  b.output(b.op("tern::cast", {m}, DType::F32, {2, 4}));
  b.output(b.op("tern::cast", {m}, DType::Bool, {2, 4}));
  b.output(b.op("tern::embedding", {table, ids}, DType::F32, {3, 2}));
  delegate_vulkan(b, 0, 2);
  const std::vector<uint8_t> blob = b.build().delegates.at(0).blob;
  const uint32_t kCast = static_cast<uint32_t>(vulkan::ValueType::I64CastToFloat);
  const std::vector<BlobValue> values = values_of(blob);
  size_t m_at = 0, ids_at = 0;
  int found = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind != static_cast<uint32_t>(vulkan::ValueKind::ExternalInput)) continue;
    if (values[i].type == kCast) m_at = i, ++found;
    if (values[i].type == static_cast<uint32_t>(vulkan::ValueType::I64)) ids_at = i, ++found;
  }
  ASSERT_EQ(found, 2) << "m as i64 cast to floats, ids as i64";
  // m as an internal value, an output or a constant: refused naming the type.
  for (uint32_t kind : {0u, 2u, 3u}) {
    expect_value_refused(blob, m_at, [kind](BlobValue& v) { v.kind = kind; }, "type 6");
  }
  // The embedding's indices as type 6 (rounded floats are no indices): refused.
  expect_value_refused(blob, ids_at, [kCast](BlobValue& v) { v.type = kCast; }, "embedding");
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
  const uint32_t indices = red.output;
  const std::vector<BlobValue> values = values_of(d.blob);
  ASSERT_LT(indices, values.size());
  EXPECT_EQ(values[indices].kind, static_cast<uint32_t>(vulkan::ValueKind::ExternalOutput));
  EXPECT_EQ(values[indices].type, static_cast<uint32_t>(vulkan::ValueType::I64AsFloat));
  expect_value_refused(d.blob, indices, [](BlobValue& v) {
    v.kind = static_cast<uint32_t>(vulkan::ValueKind::Internal);
    v.arg = vulkan::kNoValue;
  }, "type 5");
}

}  // namespace
}  // namespace tern::vulkan_test
