// The cpu backend's compile half (what it claims, what it refuses, the blob it writes) and its
// runtime half's defence against bad blobs and bad arguments: every corruption is a clean
// error, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

using compiler::CpuBackendCompiler;

/// x [1, 4, 6, 6] -> conv3x3 (pad 1) -> relu -> add x; region = all three nodes.
GraphBuilder small_model() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 4, 6, 6});
  const int w = b.constant_f32("w", {4, 4, 3, 3}, random_floats(144, 3, -0.3f, 0.3f));
  const int bias = b.constant_f32("b", {4}, {0.1f, -0.2f, 0.3f, -0.4f});
  const int c =
      b.op("tern::conv2d",
           {x, w, bias, b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}), b.int_value(1)},
           DType::F32, {1, 4, 6, 6}, "conv");
  const int r = b.op("tern::relu", {c}, DType::F32, {1, 4, 6, 6}, "relu");
  b.output(b.op("tern::add", {r, x}, DType::F32, {1, 4, 6, 6}, "residual"));
  return b;
}

std::vector<uint8_t> small_blob(compiler::Graph* graph_out = nullptr) {
  GraphBuilder b = small_model();
  delegate_cpu(b, 0, 2);
  if (graph_out) *graph_out = b.build();
  return b.graph().delegates[0].blob;
}

/// Arguments for the small model's delegate call: x, w, b, 3 lists, groups (inputs), out.
/// The constants (w, b) are bound by bind_constants, from the graph (the weights the delegate
/// packs at prepare); without them the arguments are empty.
struct SmallArgs {
  std::vector<int64_t> sizes{1, 4, 6, 6};
  std::vector<float> x = random_floats(144, 9);
  std::vector<float> out = std::vector<float>(144);
  TensorView xv, ov;
  std::vector<EValue> values;
  std::vector<EValue*> ptrs;
  std::vector<TensorView> constant_views;
  explicit SmallArgs(size_t num_args) {
    xv = testing::f32_view(sizes, x);
    ov = testing::f32_view(sizes, out);
    values.resize(num_args);
    values[0] = EValue::from_tensor(&xv);
    values[num_args - 1] = EValue::from_tensor(&ov);
    for (EValue& v : values) ptrs.push_back(&v);
  }
  /// Binds every constant tensor input of `g`'s region 0 to its graph bytes, as a program binds
  /// its constants.
  void bind_constants(const compiler::Graph& g) {
    const compiler::DelegateRegion& r = g.delegates.at(0);
    constant_views.resize(r.inputs.size());
    for (size_t i = 0; i < r.inputs.size() && i < values.size(); ++i) {
      const compiler::Value& v = g.values[static_cast<size_t>(r.inputs[i])];
      if (!v.is_tensor() || !v.is_constant) continue;
      TensorView& t = constant_views[i];
      t.dtype = v.dtype;
      t.rank = static_cast<uint32_t>(v.sizes.size());
      t.sizes = v.sizes.data();
      t.data = const_cast<uint8_t*>(v.data.data());
      t.nbytes = v.data.size();
      t.name = v.name.c_str();
      values[i] = EValue::from_tensor(&t);
    }
  }
  Span<EValue*> span() { return Span<EValue*>(ptrs.data(), ptrs.size()); }
};

/// Arguments for bottleneck_blob()'s delegate call: x [1, 16, 12, 12] first, out (same dims)
/// last, the others (constants and lists the backend does not read) empty.
struct BottleneckArgs : SmallArgs {
  explicit BottleneckArgs(size_t num_args) : SmallArgs(num_args) {
    sizes = {1, 16, 12, 12};
    x = random_floats(2304, 9);
    out.assign(2304, 0.0f);
    xv = testing::f32_view(sizes, x);
    ov = testing::f32_view(sizes, out);
    values[0] = EValue::from_tensor(&xv);
    values[num_args - 1] = EValue::from_tensor(&ov);
  }
};

/// init (+ prepare + execute when init succeeds) on `blob`, the constants of `g` (when given)
/// bound; returns the first error.
template <typename Args = SmallArgs>
Error try_blob(const std::vector<uint8_t>& blob, size_t num_args, std::string* message,
               const compiler::Graph* g = nullptr) {
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ctx;
  ctx.num_threads = 1;
  AlignedBlob store(blob);
  auto h = be.init(ctx, store.buffer(), {});
  if (!h.ok()) {
    *message = last_error_message();
    return h.error();
  }
  Args args(num_args);
  if (g != nullptr) args.bind_constants(*g);
  Error e = be.prepare(h.get(), args.span());
  if (e == Error::Ok) {
    BackendExecuteContext ectx;
    e = be.execute(ectx, h.get(), args.span());
  }
  *message = e == Error::Ok ? "" : last_error_message();
  be.destroy(h.get());
  return e;
}

class CpuBlobTest : public ::testing::Test {
 protected:
  void SetUp() override { register_all(); }
};

/// Overwrites node i of `blob` with `node`.
void set_blob_node(std::vector<uint8_t>* blob, uint32_t i, const cpu::BlobNode& node) {
  std::memcpy(blob->data() + node_offset(*blob, i), &node, sizeof(node));
}

/// What parse_blob says of `blob`: its error, and its message in *message.
Error parse_result(const std::vector<uint8_t>& blob, std::string* message) {
  cpu::BlobPlan plan;
  const Error e = cpu::parse_blob(Span<const uint8_t>(blob.data(), blob.size()), &plan);
  *message = last_error_message();
  cpu::free_blob_plan(&plan);
  return e;
}

TEST_F(CpuBlobTest, BlobHeaderDescribesTheRegion) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  ASSERT_GE(blob.size(), sizeof(cpu::BlobHeader));
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  EXPECT_EQ(std::memcmp(h.magic, "TCPU", 4), 0);
  EXPECT_EQ(h.version, cpu::kBlobVersion);
  EXPECT_EQ(h.num_args, g.delegates[0].inputs.size() + g.delegates[0].outputs.size());
  EXPECT_EQ(h.num_nodes, 2u);  // tern's conv with the relu folded in, add
  EXPECT_EQ(h.num_recipes, 1u);  // the packed filter
  EXPECT_EQ(h.data_offset % 64, 0u);
  EXPECT_EQ(h.data_offset + h.data_size, blob.size());
  // Value 0 is x, NHWC [1, 6, 6, 4]; values 1 and 2 the program's w and b (Source values: the
  // delegate call's arguments 1 and 2); value 3 the packed filter made from them at prepare:
  // one panel of 16 columns, 16 bias floats then 3*3*4 = 36 rows in (kh, kw, c) order.
  const size_t tables = sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                        h.num_nodes * sizeof(cpu::BlobNode);
  cpu::BlobValue v[4];
  cpu::BlobNode n0;
  cpu::BlobRecipe r0;
  std::memcpy(v, blob.data() + sizeof(h), sizeof(v));
  std::memcpy(&n0, blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue), sizeof(n0));
  std::memcpy(&r0, blob.data() + tables, sizeof(r0));
  EXPECT_EQ(n0.op, static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  EXPECT_EQ(n0.fparams[0], 0.0f);  // relu
  EXPECT_EQ(n0.inputs[1], 3u);
  EXPECT_EQ(v[0].kind, static_cast<uint32_t>(cpu::ValueKind::ExternalInput));
  EXPECT_EQ(v[0].layout, static_cast<uint32_t>(cpu::ValueLayout::Nhwc));
  EXPECT_EQ(std::vector<uint64_t>(v[0].dims, v[0].dims + 4), (std::vector<uint64_t>{1, 6, 6, 4}));
  for (uint32_t i : {1u, 2u}) {
    EXPECT_EQ(v[i].kind, static_cast<uint32_t>(cpu::ValueKind::Source)) << i;
    EXPECT_EQ(v[i].arg, i);  // the call's arguments: x, w, b, ...
    EXPECT_EQ(v[i].source, static_cast<uint32_t>(cpu::SourceType::F32) | cpu::kSourceExclusive);
  }
  EXPECT_EQ(std::vector<uint64_t>(v[1].dims, v[1].dims + 4), (std::vector<uint64_t>{4, 4, 3, 3}));
  EXPECT_EQ(v[1].data_bytes, 144u * 4u);
  EXPECT_EQ(v[2].rank, 1u);
  EXPECT_EQ(v[3].kind, static_cast<uint32_t>(cpu::ValueKind::Derived));
  EXPECT_EQ(v[3].recipe, 0u);
  EXPECT_EQ(v[3].rank, 1u);
  EXPECT_EQ(v[3].dims[0], 16u * 37u);
  EXPECT_EQ(r0.op, static_cast<uint32_t>(cpu::RecipeOp::PackConv));
  EXPECT_EQ(std::vector<uint32_t>(r0.params, r0.params + 4), (std::vector<uint32_t>{4, 4, 3, 3}));
  EXPECT_EQ(r0.sources[0], 1u);
  EXPECT_EQ(r0.sources[1], 2u);
  // No weight bytes in the blob: its data section is only the tail padding.
  EXPECT_EQ(h.data_size, cpu::kDataTailPadding);
  // What the recipe makes (the runtime's code): filter OIHW element [o=1, i=3, h=2, w=0] is
  // row (2 * 3 + 0) * 4 + 3 = 27, lane 1.
  const auto& w = g.values[static_cast<size_t>(g.nodes[0].args[1])];
  const auto& bias = g.values[static_cast<size_t>(g.nodes[0].args[2])];
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r0, 16 * 37, &shape, &why)) << why;
  cpu::RecipeSource src[cpu::kRecipeSources];
  src[0].data = w.data.data();
  src[1].data = bias.data.data();
  std::vector<float> packed(16 * 37, -1.0f);
  cpu::run_recipe(r0, shape, src, packed.data());
  float want;
  std::memcpy(&want, w.data.data() + 4 * (((1 * 4 + 3) * 3 + 2) * 3 + 0), 4);
  EXPECT_EQ(packed[16 * (1 + 27) + 1], want);
  // Bias of channel 2 in the panel's first row; lanes past 4 channels are zero.
  EXPECT_EQ(packed[2], 0.3f);
  EXPECT_EQ(packed[16 * 5 + 9], 0.0f);
}

TEST_F(CpuBlobTest, SupportsRefusesWhatXnnpackCannotMatch) {
  struct Refused {
    const char* what;
    std::function<void(GraphBuilder&)> build;
  };
  const std::vector<Refused> refused = {
      {"avg pool with a divisor",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 2, 6, 6});
         b.op("tern::avg_pool2d",
              {x, b.int_list({2}), b.int_list({2}), b.int_list({0}), b.bool_value(false),
               b.bool_value(true), b.int_value(3)},
              DType::F32, {1, 2, 3, 3});
       }},
      {"max pool whose output is not the ceil-mode size",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 2, 7, 7});
         b.op("tern::max_pool2d",
              {x, b.int_list({2}), b.int_list({2}), b.int_list({0}), b.int_list({1}),
               b.bool_value(true)},
              DType::F32, {1, 2, 3, 3});
       }},
      {"softmax over a dim out of range",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {2, 5});
         b.op("tern::softmax", {x, b.int_value(2)}, DType::F32, {2, 5});
       }},
      // (a softmax over any other dim, of an NHWC 4-D tensor too, is taken since 2026-12-05:
      // cpu_conformance_attention_test's softmax_over_* and talking_heads_* cases)
      // (average pooling counting its padding is taken since: a zero pad, then the pool;
      // cpu_conformance_dense_test)
      {"linear of a 4-D NHWC tensor (a conv reads it too)",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 2, 3, 4});
         const int cw = b.constant_f32("cw", {2, 2, 1, 1}, std::vector<float>(4, 1.0f));
         b.op("tern::conv2d",
              {x, cw, b.none(), b.int_list({1}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
              DType::F32, {1, 2, 3, 4});
         const int w = b.constant_f32("w", {2, 4}, std::vector<float>(8, 1.0f));
         b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 2, 3, 2});
       }},
      {"linear with a runtime weight",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {2, 4});
         const int w = b.input("w", DType::F32, {3, 4});
         b.op("tern::linear", {x, w, b.none()}, DType::F32, {2, 3});
       }},
      {"conv with a runtime weight",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 2, 4, 4});
         const int w = b.input("w", DType::F32, {2, 2, 1, 1});
         b.op("tern::conv2d",
              {x, w, b.none(), b.int_list({1}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
              DType::F32, {1, 2, 4, 4});
       }},
      // (a flatten that reorders an NHWC tensor is taken since version 9: a StridedCopy;
      // cpu_conformance_attention_test)
      // (a reflect pad is taken since 2026-12-05: a GatherMap; cpu_conformance_test's
      // reflect_pad_* cases) but not one as wide as its dim (torch refuses it too)
      {"reflect pad as wide as its dim",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 4});
         b.op("tern::pad", {x, b.int_list({4, 1}), b.string_value("reflect"), b.none()}, DType::F32,
              {1, 9});
       }},
      {"negative pad (crop)",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 4});
         b.op("tern::pad", {x, b.int_list({-1, 0}), b.string_value("constant"), b.none()},
              DType::F32, {1, 3});
       }},
      {"div with rounding",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::div", {x, b.double_value(2.0), b.string_value("floor")}, DType::F32, {4});
       }},
      {"add with alpha on an activation",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         const int y = b.input("y", DType::F32, {4});
         b.op("tern::add", {x, y, b.double_value(2.0)}, DType::F32, {4});
       }},
      {"add of a 4-D and a 2-D activation",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 2, 3, 4});
         const int y = b.input("y", DType::F32, {3, 4});
         b.op("tern::add", {x, y}, DType::F32, {1, 2, 3, 4});
       }},
      {"a scalar operand that is a method input",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         const int s = b.double_value(2.0);
         b.graph().inputs.push_back(s);
         b.op("tern::mul", {x, s}, DType::F32, {4});
       }},
      {"int tensors",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::I64, {4});
         b.op("tern::relu", {x}, DType::I64, {4});
       }},
      {"silu with an extra argument",  // silu is taken (as sigmoid and multiply, or folded)
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::silu", {x, b.bool_value(false)}, DType::F32, {4});
       }},
      {"an op the backend does not take",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::erf", {x}, DType::F32, {4});
       }},
      {"gelu of an unknown form",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {4});
         b.op("tern::gelu", {x, b.string_value("erf")}, DType::F32, {4});
       }},
      {"rank 7",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {1, 1, 1, 1, 1, 1, 2});
         b.op("tern::relu", {x}, DType::F32, {1, 1, 1, 1, 1, 1, 2});
       }},
      {"unbatched conv",
       [](GraphBuilder& b) {
         const int x = b.input("x", DType::F32, {2, 4, 4});
         const int w = b.constant_f32("w", {2, 2, 1, 1}, {1, 2, 3, 4});
         b.op("tern::conv2d",
              {x, w, b.none(), b.int_list({1}), b.int_list({0}), b.int_list({1}), b.int_value(1)},
              DType::F32, {2, 4, 4});
       }},
  };
  for (const Refused& r : refused) {
    GraphBuilder b;
    r.build(b);
    const compiler::Node& node = b.graph().nodes.back();
    EXPECT_FALSE(CpuBackendCompiler().supports(b.graph(), node)) << r.what;
    EXPECT_NE(CpuBackendCompiler::unsupported_reason(b.graph(), node), "") << r.what;
    // The whole-graph answer (one layout plan for every node) is the per-node one.
    const std::vector<std::string> each = CpuBackendCompiler().why_unsupported_each(b.graph());
    ASSERT_EQ(each.size(), b.graph().nodes.size()) << r.what;
    for (size_t i = 0; i < each.size(); ++i) {
      EXPECT_EQ(each[i], CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[i]))
          << r.what << ", node " << i;
    }
    // lower() names the node it cannot take.
    const int n = static_cast<int>(b.num_nodes()) - 1;
    b.delegate("cpu", n, n);
    try {
      CpuBackendCompiler().lower(b.graph(), b.graph().delegates[0]);
      ADD_FAILURE() << r.what << ": lower() did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("node " + std::to_string(n)), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CpuBlobTest, AcceptsOnlyRegionsWithHeavyOps) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 8});
  const int r = b.op("tern::reshape", {x, b.int_list({4, 4})}, DType::F32, {4, 4});
  const int s = b.op("tern::sigmoid", {r}, DType::F32, {4, 4});
  const int w = b.constant_f32("w", {3, 4}, std::vector<float>(12, 0.5f));
  b.output(b.op("tern::linear", {s, w, b.none()}, DType::F32, {4, 3}));
  const CpuBackendCompiler cc;
  EXPECT_EQ(cc.name(), "cpu");
  EXPECT_FALSE(cc.accepts_region(b.graph(), {0}));
  EXPECT_FALSE(cc.accepts_region(b.graph(), {0, 1}));
  EXPECT_TRUE(cc.accepts_region(b.graph(), {0, 1, 2}));
}

TEST_F(CpuBlobTest, EveryTruncationIsACleanError) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  const size_t num_args = g.delegates[0].inputs.size() + g.delegates[0].outputs.size();
  for (size_t len = 0; len < blob.size(); ++len) {
    std::string msg;
    const Error e =
        try_blob(std::vector<uint8_t>(blob.begin(), blob.begin() + len), num_args, &msg, &g);
    EXPECT_EQ(e, Error::InvalidProgram) << len << " bytes: " << msg;
    EXPECT_NE(msg.find("cpu blob"), std::string::npos) << msg;
  }
  std::string msg;
  EXPECT_EQ(try_blob(blob, num_args, &msg, &g), Error::Ok) << msg;
}

TEST_F(CpuBlobTest, EveryTableByteFlipIsHandled) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  const size_t num_args = g.delegates[0].inputs.size() + g.delegates[0].outputs.size();
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  int accepted = 0, refused = 0;
  for (size_t i = 0; i < h.data_offset; ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> bad = blob;
      bad[i] ^= flip;
      std::string msg;
      const Error e = try_blob(bad, num_args, &msg, &g);  // must return, whatever it decides
      if (e == Error::Ok) {
        ++accepted;
      } else {
        ++refused;
        EXPECT_NE(msg, "") << "byte " << i << " flip " << int(flip) << ": no message";
      }
    }
  }
  EXPECT_GT(refused, accepted);
  RecordProperty("accepted", accepted);
  RecordProperty("refused", refused);
}

TEST_F(CpuBlobTest, SpecificCorruptionsNameTheProblem) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  const size_t num_args = g.delegates[0].inputs.size() + g.delegates[0].outputs.size();
  std::string msg;
  {
    std::vector<uint8_t> bad = blob;
    bad[0] = 'X';
    EXPECT_EQ(try_blob(bad, num_args, &msg), Error::InvalidProgram);
    EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  }
  // Every older version: 1 (before tern's own kernels joined the blob), 2 (before
  // PackedWinogradConv2d and Gelu), 3 (before PackedBottleneck), 4 (before SiLU, sigmoid and
  // the bottleneck's squeeze-excitation), 5 (before Concat), 6 (before the quantized ops 23, 24),
  // 7 (weights packed into the blob at compile time, before Source / Derived values), 8 (before
  // BatchMatMul, StridedCopy and Concat along other dims), 9 (before grouped op 18), 10 (before
  // RowConcat), 11 (before dynamic values: an 88-byte value record), 12 (before GroupNorm), 13
  // (before constant parts of a concatenation), 14 (before Attention: 96-byte node records), 15
  // (before PackedConv3d), 16 (before signed StridedCopy strides), 17 (before View values), 18
  // (before sin, cos and log in op 38), 19 (before a constant q in op 32), 20 (before op 25's
  // RMS mode and expm1 / log1p in op 38), 21 (before op 44's comparison modes), 22 (before
  // GroupedMatmul and the Int32Plain layout), 23 (before op 17's multiplier), 24 (before
  // dynamic rows maps), 25 (before GroupSum), 26 (before the leaky ReLU epilogue), 27 (before
  // ChannelMix), 28 (before ChannelMix's softmax).
  static_assert(cpu::kBlobVersion == 29, "add the version this one replaces to the list below");
  for (uint32_t old : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u,
                       17u, 18u, 19u, 20u, 21u, 22u, 23u, 24u, 25u, 26u, 27u, 28u}) {
    std::vector<uint8_t> bad = blob;
    std::memcpy(bad.data() + offsetof(cpu::BlobHeader, version), &old, 4);
    EXPECT_EQ(try_blob(bad, num_args, &msg, &g), Error::DelegateInvalidCompatibility) << old;
    EXPECT_NE(msg.find("version " + std::to_string(old) + ", this runtime reads version " + std::to_string(cpu::kBlobVersion)),
              std::string::npos)
        << msg;
    EXPECT_EQ(parse_result(bad, &msg), Error::DelegateInvalidCompatibility) << old;
  }
  {
    // Value 0's dim 1 (H of x): the conv output no longer matches.
    std::vector<uint8_t> bad = blob;
    bad[sizeof(cpu::BlobHeader) + offsetof(cpu::BlobValue, dims) + 8] = 7;
    EXPECT_EQ(try_blob(bad, num_args, &msg, &g), Error::InvalidProgram);
    EXPECT_NE(msg.find("node 0 (packed_conv2d)"), std::string::npos) << msg;
  }
  {
    // The derived filter (value 3) with a data offset: its bytes are made at prepare.
    std::vector<uint8_t> bad = blob;
    bad[sizeof(cpu::BlobHeader) + 3 * sizeof(cpu::BlobValue) +
        offsetof(cpu::BlobValue, data_offset) + 5] = 0x10;
    EXPECT_EQ(try_blob(bad, num_args, &msg, &g), Error::InvalidProgram);
    EXPECT_NE(msg.find("value 3: derived constant of 2368 bytes (offset 17592186044416), "
                       "expected 2368 bytes (offset 0)"),
              std::string::npos)
        << msg;
  }
  {
    // Node 0 reads a value index out of range.
    std::vector<uint8_t> bad = blob;
    cpu::BlobHeader h;
    std::memcpy(&h, blob.data(), sizeof(h));
    const size_t node0 = sizeof(h) + h.num_values * sizeof(cpu::BlobValue);
    const uint32_t big = 1000;
    std::memcpy(bad.data() + node0 + offsetof(cpu::BlobNode, inputs), &big, 4);
    EXPECT_EQ(try_blob(bad, num_args, &msg, &g), Error::InvalidProgram);
    EXPECT_NE(msg.find("value 1000"), std::string::npos) << msg;
  }
}

// BackendInterface::init promises a 64-byte aligned blob (the loader's promise); the cpu
// backend reads constants in place and refuses a blob that breaks it, naming the alignment
// (the runtime then takes the portable fallback).
TEST_F(CpuBlobTest, UnalignedBlobIsRefusedAsIncompatible) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  std::vector<uint8_t> store(blob.size() + 64);
  uint8_t* p = store.data();
  while (reinterpret_cast<uintptr_t>(p) % 64 != 1) ++p;
  std::memcpy(p, blob.data(), blob.size());
  BackendInitContext ctx;
  auto h = cpu_backend_interface().init(ctx, FreeableBuffer(p, blob.size(), nullptr), {});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), Error::DelegateInvalidCompatibility);
  EXPECT_NE(std::string(last_error_message()).find("not 64-byte aligned"), std::string::npos)
      << last_error_message();
}

TEST_F(CpuBlobTest, BadArgumentsAreRefused) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = small_blob(&g);
  const size_t num_args = g.delegates[0].inputs.size() + g.delegates[0].outputs.size();
  const BackendInterface& be = cpu_backend_interface();
  BackendInitContext ctx;
  AlignedBlob store(blob);
  auto h = be.init(ctx, store.buffer(), {});
  ASSERT_TRUE(h.ok()) << last_error_message();
  BackendExecuteContext ectx;
  {
    SmallArgs args(num_args);
    EXPECT_EQ(be.execute(ectx, h.get(), args.span()), Error::InvalidState);
  }
  {
    SmallArgs args(num_args + 1);
    EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("arguments"), std::string::npos);
  }
  {
    SmallArgs args(num_args);
    args.bind_constants(g);
    args.sizes[2] = 5;
    EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("[1, 4, 6, 6]"), std::string::npos)
        << last_error_message();
  }
  {
    SmallArgs args(num_args);
    args.bind_constants(g);
    args.values[0] = EValue();
    EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
  }
  {
    SmallArgs args(num_args);  // the weights left out: the sources are refused by name
    EXPECT_EQ(be.prepare(h.get(), args.span()), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message())
                  .find("value 1 (weight source, argument 1): expected a tensor"),
              std::string::npos)
        << last_error_message();
  }
  {
    SmallArgs args(num_args);
    args.bind_constants(g);
    ASSERT_EQ(be.prepare(h.get(), args.span()), Error::Ok) << last_error_message();
    EXPECT_EQ(be.execute(ectx, h.get(), args.span()), Error::Ok) << last_error_message();
  }
  be.destroy(h.get());
}

TEST_F(CpuBlobTest, MethodLoadFallsBackOnNewerBlobAndFailsOnCorruptOne) {
  const std::vector<float> in = random_floats(144, 77);
  for (int variant = 0; variant < 2; ++variant) {
    GraphBuilder b = small_model();
    delegate_cpu(b, 0, 2);
    std::vector<uint8_t>& blob = b.graph().delegates[0].blob;
    if (variant == 0) blob[4] = static_cast<uint8_t>(cpu::kBlobVersion + 1);  // a newer one
    if (variant == 1) blob[1] = 'Z';  // not a cpu blob at all
    const compiler::Graph graph = b.build();
    const auto pte = testing::compile_graph(graph);
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    if (variant == 0) {
      ASSERT_TRUE(method.ok()) << last_error_message();
      EXPECT_EQ(method->delegate_path(0).get(), DelegatePath::Fallback);
      const RunResult fallback = run_program(pte, graph, {in}, false);
      const RunResult portable = run_program(pte, graph, {in}, true);
      EXPECT_EQ(fallback.outputs, portable.outputs);
    } else {
      ASSERT_FALSE(method.ok());
      EXPECT_EQ(method.error(), Error::InvalidProgram);
      EXPECT_NE(std::string(last_error_message()).find("cpu blob: bad magic"), std::string::npos)
          << last_error_message();
    }
  }
}

/// x [400, 20] -> linear (w [18, 20], bias) -> relu; the region is both nodes. (400 rows: a
/// product this size is not "tiny", so tern's GEMM takes it.)
std::vector<uint8_t> linear_blob(compiler::Graph* graph_out) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {400, 20});
  const int w = b.constant_f32("w", {18, 20}, random_floats(360, 5, -1.0f, 1.0f));
  const int bias = b.constant_f32("b", {18}, random_floats(18, 6, -1.0f, 1.0f));
  const int h = b.op("tern::linear", {x, w, bias}, DType::F32, {400, 18}, "fc");
  b.output(b.op("tern::relu", {h}, DType::F32, {400, 18}, "relu"));
  delegate_cpu(b, 0, 1);
  *graph_out = b.build();
  return graph_out->delegates[0].blob;
}

float f32_at(const std::vector<float>& v, size_t i) { return v[i]; }

TEST_F(CpuBlobTest, LinearIsPackedForTernsGemmWithTheReluFolded) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = linear_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // the relu became the fc's lower bound
  cpu::BlobNode node;
  std::memcpy(&node, blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue),
              sizeof(node));
  EXPECT_EQ(node.op, static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  EXPECT_EQ(node.params[0], 18u);
  EXPECT_EQ(node.params[1], 20u);
  EXPECT_EQ(node.fparams[0], 0.0f);
  cpu::BlobValue packed;
  std::memcpy(&packed, blob.data() + sizeof(h) + node.inputs[1] * sizeof(cpu::BlobValue),
              sizeof(packed));
  // Two panels of 16 columns, each 16 bias floats then 20 rows of 16 (docs: README blob format),
  // made at prepare by a PackFc recipe from the program's w and b.
  ASSERT_EQ(packed.dims[0], 2u * 16u * 21u);
  ASSERT_EQ(packed.kind, static_cast<uint32_t>(cpu::ValueKind::Derived));
  cpu::BlobRecipe r;
  std::memcpy(&r,
              blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                  h.num_nodes * sizeof(cpu::BlobNode) + packed.recipe * sizeof(cpu::BlobRecipe),
              sizeof(r));
  EXPECT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackFc));
  EXPECT_EQ(r.params[0], 18u);
  EXPECT_EQ(r.params[1], 20u);
  const auto floats = [&](int arg) {
    const auto& v = g.values[static_cast<size_t>(g.nodes[0].args[static_cast<size_t>(arg)])];
    std::vector<float> f(v.data.size() / 4);
    std::memcpy(f.data(), v.data.data(), v.data.size());
    return f;
  };
  const std::vector<float> w = floats(1), bias = floats(2);
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r, packed.dims[0], &shape, &why)) << why;
  cpu::RecipeSource src[cpu::kRecipeSources];
  src[0].data = w.data();
  src[1].data = bias.data();
  std::vector<float> got(static_cast<size_t>(packed.dims[0]), -1.0f);
  cpu::run_recipe(r, shape, src, got.data());
  for (size_t col = 0; col < 32; ++col) {
    const size_t panel = col / 16, lane = col % 16, base = panel * 16 * 21;
    EXPECT_EQ(got[base + lane], col < 18 ? f32_at(bias, col) : 0.0f) << "bias " << col;
    for (size_t r = 0; r < 20; ++r) {
      EXPECT_EQ(got[base + 16 * (r + 1) + lane], col < 18 ? f32_at(w, col * 20 + r) : 0.0f)
          << "column " << col << " row " << r;
    }
  }
}

TEST_F(CpuBlobTest, PackedLinearFieldsAreChecked) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = linear_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  const size_t node_at = sizeof(h) + h.num_values * sizeof(cpu::BlobValue);
  struct Case {
    size_t offset;
    uint32_t value;
    const char* expect;
  };
  const Case cases[] = {
      {offsetof(cpu::BlobNode, params), 33, "is not [1008]"},  // 33 out features: 3 panels
      {offsetof(cpu::BlobNode, params) + 4, 21, "params give 21"},
      {offsetof(cpu::BlobNode, params) + 4, 0, "is 0, expected >= 1"},
      {offsetof(cpu::BlobNode, params) + 8, 8, "activation 8, expected 0 (none)"},
      {offsetof(cpu::BlobNode, params) + 12, 1, "epilogue flags 1 with 2 inputs"},
      // A slope without the leaky ReLU, and a negative one with it.
      {offsetof(cpu::BlobNode, params) + 16, 1, "parameter bits 0x00000001 with activation 0"},
      {offsetof(cpu::BlobNode, params) + 20, 1, "unused parameter 5"},
      {offsetof(cpu::BlobNode, num_inputs), 5, "5 inputs, expected 2..4"},
      // A residual input must be a value made before the node.
      {offsetof(cpu::BlobNode, num_inputs), 3, "input 2 is value 4294967295"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> bad = blob;
    std::memcpy(bad.data() + node_at + c.offset, &c.value, 4);
    cpu::BlobPlan plan;
    const Error e = cpu::parse_blob(Span<const uint8_t>(bad.data(), bad.size()), &plan);
    EXPECT_EQ(e, Error::InvalidProgram) << c.expect;
    EXPECT_NE(std::string(last_error_message()).find(c.expect), std::string::npos)
        << last_error_message();
    cpu::free_blob_plan(&plan);
  }
}

/// Version 8's records: every Source, Derived value and recipe field is checked, and a
/// corrupt one is refused naming it.
TEST_F(CpuBlobTest, RecipeAndSourceFieldsAreChecked) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = linear_blob(&g);  // x, w (source), b (source), packed, out
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_recipes, 1u);
  const cpu::BlobNode node = blob_node(blob, 0);
  const uint32_t packed = node.inputs[1];
  cpu::BlobValue pv;
  std::memcpy(&pv, blob.data() + sizeof(h) + packed * sizeof(cpu::BlobValue), sizeof(pv));
  cpu::BlobRecipe r;
  const size_t recipe_at = sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                           h.num_nodes * sizeof(cpu::BlobNode);
  std::memcpy(&r, blob.data() + recipe_at, sizeof(r));
  const uint32_t w = r.sources[0], bias = r.sources[1];
  struct Case {
    const char* what;
    std::function<void(std::vector<cpu::BlobValue>&, cpu::BlobRecipe&, cpu::BlobNode&)> mutate;
    const char* expect;
  };
  using V = std::vector<cpu::BlobValue>;
  const Case cases[] = {
      {"unknown recipe op", [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.op = 10; },
       "recipe 0 (?, op 10): unknown op"},
      {"other params", [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.params[1] = 21; },
       "recipe 0 (pack_fc) makes 704 floats, the value holds 672"},
      {"a size the value does not hold",
       [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.params[0] = 40; },
       "recipe 0 (pack_fc) makes 1008 floats, the value holds 672"},
      {"unknown flags", [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.flags = 2; },
       "unknown flags"},
      {"a scale on a packing recipe",
       [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.scale = 2.0; }, "scale/shift not 1/0"},
      {"the weight missing",
       [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.sources[0] = cpu::kNoValue; },
       "recipe 0 (pack_fc): source 0 missing"},
      {"an unused slot filled",
       [=](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.sources[5] = bias; },
       "source slot 5 is unused, found value 2"},
      {"a source that is no source",
       [](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.sources[1] = 0; },
       "source 1 is value 0, which is out of range (5 values) or no source"},
      {"the bias as the weight",
       [=](V&, cpu::BlobRecipe& rc, cpu::BlobNode&) { rc.sources[0] = bias; },
       "source 0 (value 2) has type 1 and 18 elements, expected type 1 and 360"},
      {"a quantized source for an f32 slot",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) {
         v[w].source = static_cast<uint32_t>(cpu::SourceType::Fp8E4M3);
         v[w].data_bytes = 360;
       },
       "has type 3 and 360 elements, expected type 1 and 360"},
      {"a source type out of range",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[w].source = 5; },
       "value 1: source field 0x5, expected a source type 1..4"},
      {"a source of other bytes",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[w].data_bytes = 1440 + 4; },
       "value 1: source of 1444 bytes (offset 0), expected 1440 bytes (offset 0)"},
      {"a source without its argument",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[w].arg = cpu::kNoValue; },
       "value 1: argument 4294967295 out of range"},
      {"a source bound twice",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[bias].arg = v[w].arg; },
       "is bound twice"},
      {"a recipe index out of range",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[packed].recipe = 1; },
       "recipe 1, expected one of the blob's recipes"},
      {"a recipe on a source",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[w].recipe = 0; },
       "value 1: recipe 0, expected none"},
      {"a derived value in NHWC",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) { v[packed].layout = 1; },
       "a derived value has layout 1"},
      {"a recipe no value makes",
       [=](V& v, cpu::BlobRecipe&, cpu::BlobNode&) {
         v[packed].kind = static_cast<uint32_t>(cpu::ValueKind::Constant);
         v[packed].recipe = cpu::kNoValue;
       },
       "constant bytes [0, +2688) past the data section"},
      {"a node reading a source",
       [=](V&, cpu::BlobRecipe&, cpu::BlobNode& n) { n.inputs[1] = w; },
       "input 1 is value 1, a source (read by recipes only)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    V values(h.num_values);
    std::memcpy(values.data(), bad.data() + sizeof(h), values.size() * sizeof(cpu::BlobValue));
    cpu::BlobRecipe rc = r;
    cpu::BlobNode n = node;
    c.mutate(values, rc, n);
    std::memcpy(bad.data() + sizeof(h), values.data(), values.size() * sizeof(cpu::BlobValue));
    std::memcpy(bad.data() + recipe_at, &rc, sizeof(rc));
    set_blob_node(&bad, 0, n);
    std::string message;
    EXPECT_EQ(parse_result(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
  (void)pv;
}

/// XNNPACK and own-kernel stages alternating: conv 3x3 (own) -> sigmoid (XNNPACK) -> conv 1x1
/// (own) -> sigmoid -> global pool -> flatten (XNNPACK) -> linear (own) -> softmax (XNNPACK).
TEST_F(CpuBlobTest, StagesAlternateAndLiveWorkspaceValuesNeverShareBytes) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 32, 16, 16});
  const int w1 = b.constant_f32("w1", {32, 32, 3, 3}, random_floats(9216, 7, -0.3f, 0.3f));
  const int c1 = b.op("tern::conv2d",
                      {x, w1, b.none(), b.int_list({1, 1}), b.int_list({1, 1}),
                       b.int_list({1, 1}), b.int_value(1)},
                      DType::F32, {1, 32, 16, 16});
  // abs: no epilogue of the (Winograd) conv before it, so an XNNPACK stage between the two.
  const int s1 = b.op("tern::abs", {c1}, DType::F32, {1, 32, 16, 16});
  const int w2 = b.constant_f32("w2", {32, 32, 1, 1}, random_floats(1024, 8, -0.3f, 0.3f));
  const int c2 = b.op("tern::conv2d",
                      {s1, w2, b.none(), b.int_list({1, 1}), b.int_list({0, 0}),
                       b.int_list({1, 1}), b.int_value(1)},
                      DType::F32, {1, 32, 16, 16});
  const int s2 = b.op("tern::sigmoid", {c2}, DType::F32, {1, 32, 16, 16});
  const int p = b.op("tern::adaptive_avg_pool2d", {s2, b.int_list({1})}, DType::F32, {1, 32, 1, 1});
  const int f = b.op("tern::flatten", {p, b.int_value(1), b.int_value(-1)}, DType::F32, {1, 32});
  const int w3 = b.constant_f32("w3", {5000, 32}, random_floats(160000, 9, -0.3f, 0.3f));
  const int l = b.op("tern::linear", {f, w3, b.none()}, DType::F32, {1, 5000});
  b.output(b.op("tern::softmax", {l, b.int_value(-1)}, DType::F32, {1, 5000}));
  delegate_cpu(b, 0, 7);
  const compiler::Graph g = b.build();
  const std::vector<uint8_t>& blob = g.delegates[0].blob;
  std::vector<uint64_t> store(blob.size() / 8 + 1);
  std::memcpy(store.data(), blob.data(), blob.size());
  cpu::BlobPlan plan;
  ASSERT_EQ(cpu::parse_blob(Span<const uint8_t>(reinterpret_cast<uint8_t*>(store.data()),
                                                blob.size()),
                            &plan),
            Error::Ok)
      << last_error_message();
  cpu::StagePlan stages;
  ASSERT_EQ(cpu::plan_stages(plan, 64, 16, &stages), Error::Ok);
  // own conv | abs | own conv | sigmoid, pool, reshape | own linear | softmax
  ASSERT_EQ(stages.num_stages, 6u);
  const bool own[6] = {true, false, true, false, true, false};
  for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(stages.stages[i].own_kernel, own[i]) << i;
  // Independent lifetimes: the stage of each node, per value its maker and last reader.
  std::vector<int> stage_of(plan.header.num_nodes);
  for (uint32_t s = 0; s < stages.num_stages; ++s) {
    for (uint32_t n = stages.stages[s].first_node; n < stages.stages[s].end_node; ++n) {
      stage_of[n] = static_cast<int>(s);
    }
  }
  const uint32_t nv = plan.header.num_values;
  std::vector<int> first(nv, -1), last(nv, -1);
  for (uint32_t n = 0; n < plan.header.num_nodes; ++n) {
    first[plan.nodes[n].output] = stage_of[n];
    for (uint32_t j = 0; j < plan.nodes[n].num_inputs; ++j) {
      last[plan.nodes[n].inputs[j]] = std::max(last[plan.nodes[n].inputs[j]], stage_of[n]);
    }
  }
  int workspace_values = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    if (stages.homes[i] != cpu::ValueHome::Workspace) continue;
    ++workspace_values;
    const uint64_t bi = cpu::value_numel(plan.values[i]) * 4;
    EXPECT_EQ(stages.workspace_offsets[i] % 64, 0u);
    EXPECT_LE(stages.workspace_offsets[i] + bi + 16, stages.workspace_bytes);
    for (uint32_t j = i + 1; j < nv; ++j) {
      if (stages.homes[j] != cpu::ValueHome::Workspace) continue;
      const int li = std::max(last[i], first[i]), lj = std::max(last[j], first[j]);
      if (li < first[j] || lj < first[i]) continue;  // never live together
      const uint64_t bj = cpu::value_numel(plan.values[j]) * 4;
      const uint64_t oi = stages.workspace_offsets[i], oj = stages.workspace_offsets[j];
      EXPECT_TRUE(oi + bi + 16 <= oj || oj + bj + 16 <= oi)
          << "values " << i << " and " << j << " overlap while both live";
    }
  }
  EXPECT_EQ(workspace_values, 5);  // c1, s1 (read by the conv), c2, flatten, linear
  cpu::free_stage_plan(&stages);
  cpu::free_blob_plan(&plan);
}

TEST_F(CpuBlobTest, TinyProductsStayInXnnpackLargeOnesGoToTernsKernels) {
  const auto ops_of = [](int64_t rows, int64_t in, int64_t out) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {rows, in});
    const int w = b.constant_f32("w", {out, in}, random_floats(size_t(out * in), 3, -1.0f, 1.0f));
    b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {rows, out}));
    delegate_cpu(b, 0, 0);
    return blob_node(b.graph().delegates[0].blob, 0).op;
  };
  // Below 4 rows up to 2^15 multiply-adds: 1 x 16 -> 96 (a squeeze-excitation fc of a small
  // block) stays; 1 x 576 -> 144 (MobileNetV3's, 82,944) and an LSTM's recurrent 1 x 128 ->
  // 512 (65,536) go to tern's GEMM (the snapshot's 1-row kernel waits on FMA latency).
  EXPECT_EQ(ops_of(1, 16, 96), static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  EXPECT_EQ(ops_of(1, 576, 144), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  EXPECT_EQ(ops_of(1, 128, 512), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
  // From 4 rows up to 2^17: 8 x 64 -> 128 (65,536) stays.
  EXPECT_EQ(ops_of(8, 64, 128), static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  // 1 x 576 -> 1024 (MobileNetV3's classifier): 589,824 > 2^17.
  EXPECT_EQ(ops_of(1, 576, 1024), static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected));
}

/// The ops of the nodes of `b`'s only delegate blob.
std::vector<uint32_t> blob_ops(GraphBuilder& b) {
  return cpu_test::blob_ops(b.graph().delegates[0].blob);
}

TEST_F(CpuBlobTest, HardsigmoidFoldsIntoTheLayerBeforeIt) {
  // linear -> hardsigmoid: one node (weights scaled at compile time, clamp [0, 1]), where the
  // unfused form is four (fc, add 3, clamp, divide by 6). Values: cpu_conformance_test.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 12});
  const int w = b.constant_f32("w", {20, 12}, random_floats(240, 5, -1.0f, 1.0f));
  const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 20});
  b.output(b.op("tern::hardsigmoid", {y}, DType::F32, {1, 20}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
}

TEST_F(CpuBlobTest, GeluFoldsIntoTheGemmOrRunsOnItsOwnNode) {
  {  // After tern's GEMM: its epilogue activation (params[2] = 3, GELU tanh).
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {64, 64});
    const int w = b.constant_f32("w", {64, 64}, random_floats(4096, 5, -1.0f, 1.0f));
    const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {64, 64});
    b.output(b.op("tern::gelu", {y, b.string_value("tanh")}, DType::F32, {64, 64}));
    delegate_cpu(b, 0, 1);
    ASSERT_EQ(blob_ops(b), (std::vector<uint32_t>{
                               static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)}));
    EXPECT_EQ(blob_node(b.graph().delegates[0].blob, 0).params[2], 3u);
  }
  // After XNNPACK's fc (a tiny product): tern's own gelu node.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {4, 16});
  const int w = b.constant_f32("w", {64, 16}, random_floats(1024, 5, -1.0f, 1.0f));
  const int y = b.op("tern::linear", {x, w, b.none()}, DType::F32, {4, 64});
  b.output(b.op("tern::gelu", {y, b.string_value("tanh")}, DType::F32, {4, 64}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::FullyConnected));
  EXPECT_EQ(ops[1], static_cast<uint32_t>(cpu::NodeOp::Gelu));
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode node = blob_node(blob, 1);
  EXPECT_EQ(node.params[0], 1u);  // the tanh form
  node.params[0] = 2;             // no such form
  set_blob_node(&blob, 1, node);
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("form 2, expected 0 (erf) or 1 (tanh)"), std::string::npos) << message;
}

TEST_F(CpuBlobTest, ResidualAddFoldsIntoTheGemmUnlessItBroadcasts) {
  const auto ops_of = [](int64_t out) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {64, 32});
    const int h = b.input("h", DType::F32, {64, 256});
    const int w = b.constant_f32("w", {out, 256},
                                 random_floats(size_t(out * 256), 5, -1.0f, 1.0f));
    const int y = b.op("tern::linear", {h, w, b.none()}, DType::F32, {64, out});
    b.output(b.op("tern::add", {y, x}, DType::F32, {64, 32}));
    delegate_cpu(b, 0, 1);
    return blob_ops(b);
  };
  // [64, 32] + [64, 32]: one node, the GEMM with x as its residual.
  EXPECT_EQ(ops_of(32), (std::vector<uint32_t>{
                            static_cast<uint32_t>(cpu::NodeOp::PackedFullyConnected)}));
  // [64, 1] + [64, 32] broadcasts: the add stays.
  EXPECT_EQ(ops_of(1).size(), 2u);
}

TEST_F(CpuBlobTest, ShallowConvsRunOnTernsDirectConv) {
  const auto first_op = [](int64_t c, int64_t k) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, c, 16, 16});
    const int w =
        b.constant_f32("w", {32, c, k, k}, random_floats(size_t(32 * c * k * k), 7, -1.0f, 1.0f));
    b.output(b.op("tern::conv2d",
                  {x, w, b.none(), b.int_list({2, 2}), b.int_list({k / 2, k / 2}),
                   b.int_list({1, 1}), b.int_value(1)},
                  DType::F32, {1, 32, 8, 8}));
    delegate_cpu(b, 0, 0);
    return blob_ops(b)[0];
  };
  // 3x3 on RGB: 27 taps per output, under 32: op 18, run as the direct shallow conv.
  EXPECT_EQ(first_op(3, 3), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  // ResNet's 7x7 stem on RGB: 147 taps: op 18 too (the implicit GEMM).
  EXPECT_EQ(first_op(3, 7), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
}

TEST_F(CpuBlobTest, GroupedConvsRunOnTernsConvWithTheirGroups) {
  // RegNet's grouped 3x3 (group width 8): op 18 with C = O = 32 and 4 groups; its packed
  // weight is 4 packed [8, 72] matrices.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 32, 8, 8});
  const int w = b.constant_f32("w", {32, 8, 3, 3}, random_floats(2304, 12, -1.0f, 1.0f));
  b.output(b.op("tern::conv2d",
                {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                 b.int_value(4)},
                DType::F32, {1, 32, 8, 8}));
  delegate_cpu(b, 0, 0);
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode n = blob_node(blob, 0);
  ASSERT_EQ(n.op, static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  EXPECT_EQ(n.params[cpu::kPackedInChannels], 32u);
  EXPECT_EQ(n.params[cpu::kPackedOutChannels], 32u);
  EXPECT_EQ(n.params[cpu::kPackedGroups], 4u);
  std::string message;
  ASSERT_EQ(parse_result(blob, &message), Error::Ok) << message;
  // The recipe packs each group's 8 filters as a [8, 72] matrix of its own (one panel of 16
  // lanes, 16 bias floats then 72 rows): filter OIHW element [o=9, i=2, h=1, w=2] is group 1's
  // row (1 * 3 + 2) * 8 + 2 = 42, lane 1.
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  cpu::BlobRecipe r;
  std::memcpy(&r, blob.data() + sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                      h.num_nodes * sizeof(cpu::BlobNode),
              sizeof(r));
  ASSERT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::PackConv));
  EXPECT_EQ(std::vector<uint32_t>(r.params, r.params + 5),
            (std::vector<uint32_t>{32, 8, 3, 3, 4}));
  cpu::RecipeShape shape;
  const char* why = "";
  ASSERT_TRUE(cpu::recipe_shape(r, 4 * 16 * 73, &shape, &why)) << why;
  EXPECT_EQ(shape.out_floats, 4u * 16u * 73u);
  const compiler::Graph g = b.build();
  const auto& wv = g.values[static_cast<size_t>(g.nodes[0].args[1])];
  cpu::RecipeSource src[cpu::kRecipeSources];
  src[0].data = wv.data.data();
  std::vector<float> packed(4 * 16 * 73, -1.0f);
  cpu::run_recipe(r, shape, src, packed.data());
  float want;
  std::memcpy(&want, wv.data.data() + 4 * (((9 * 8 + 2) * 3 + 1) * 3 + 2), 4);
  EXPECT_EQ(packed[16 * 73 + 16 * (1 + 42) + 1], want);
  EXPECT_EQ(packed[16 * 73 + 9], 0.0f);  // lanes past a group's 8 filters are zero
  cpu::BlobRecipe bad = r;
  bad.params[4] = 5;
  EXPECT_FALSE(cpu::recipe_shape(bad, 4 * 16 * 73, &shape, &why));
  EXPECT_STREQ(why, "groups do not divide O");
  // 3 groups do not divide 32 channels.
  n.params[cpu::kPackedGroups] = 3;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("3 groups do not divide 32 input and 32 output channels"),
            std::string::npos)
      << message;
  // 8 groups divide them, but the weight holds 4 groups' panels (4 x 16 x 73 floats), not 8 x 16 x 37.
  n.params[cpu::kPackedGroups] = 8;
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("is not [4736] (32 out channels x 3x3x4, 8 groups)"), std::string::npos)
      << message;
}

TEST_F(CpuBlobTest, HardswishFoldsIntoTernsConv) {
  // MobileNetV3's stem: conv 3x3/2 on RGB then hardswish: one op-18 node with activation 1.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 3, 16, 16});
  const int w = b.constant_f32("w", {16, 3, 3, 3}, random_floats(432, 8, -1.0f, 1.0f));
  const int c = b.op("tern::conv2d",
                     {x, w, b.none(), b.int_list({2, 2}), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_value(1)},
                     DType::F32, {1, 16, 8, 8});
  b.output(b.op("tern::hardswish", {c}, DType::F32, {1, 16, 8, 8}));
  delegate_cpu(b, 0, 1);
  const std::vector<uint32_t> ops = blob_ops(b);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0], static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[cpu::kPackedActivation], 1u);
  n.params[cpu::kPackedActivation] = 8;  // no such activation
  set_blob_node(&blob, 0, n);
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("activation 8"), std::string::npos) << message;
  // The leaky ReLU (7) with a negative slope (its sign bit puts the bits above every
  // parameter's bound), and a slope with another activation.
  n.params[cpu::kPackedActivation] = 7;
  const float negative = -0.1f;
  std::memcpy(&n.params[cpu::kPackedActivationAlpha], &negative, 4);
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("parameter 14 is 3184315597, above"), std::string::npos) << message;
  n.params[cpu::kPackedActivation] = 1;
  n.params[cpu::kPackedActivationAlpha] = 0x3dcccccd;  // 0.1
  set_blob_node(&blob, 0, n);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("with activation 1, expected 0"), std::string::npos) << message;
}

TEST_F(CpuBlobTest, LargeThreeByThreeConvsGoToWinograd) {
  const auto first_op = [](int64_t hw, int64_t stride) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {1, 16, hw, hw});
    const int w = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 9, -1.0f, 1.0f));
    const int64_t o = (hw + 2 - 3) / stride + 1;
    b.output(b.op("tern::conv2d",
                  {x, w, b.none(), b.int_list({stride, stride}), b.int_list({1, 1}),
                   b.int_list({1, 1}), b.int_value(1)},
                  DType::F32, {1, 16, o, o}));
    delegate_cpu(b, 0, 0);
    return blob_ops(b)[0];
  };
  // 20x20 output: 100 tiles of 2x2.
  EXPECT_EQ(first_op(20, 1), static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d));
  // 8x8: 16 tiles (under 32), too few to reuse the transformed weight: the direct conv.
  EXPECT_EQ(first_op(8, 1), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  // Stride 2: the direct conv.
  EXPECT_EQ(first_op(40, 2), static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
}

TEST_F(CpuBlobTest, WinogradNodeWithAnotherWindowIsRefused) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 16, 20, 20});
  const int w = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 9, -1.0f, 1.0f));
  b.output(b.op("tern::conv2d",
                {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                 b.int_value(1)},
                DType::F32, {1, 16, 20, 20}));
  delegate_cpu(b, 0, 0);
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobNode node = blob_node(blob, 0);
  ASSERT_EQ(node.op, static_cast<uint32_t>(cpu::NodeOp::PackedWinogradConv2d));
  std::string message;
  ASSERT_EQ(parse_result(blob, &message), Error::Ok);
  node.params[cpu::kDilationW] = 2;  // the window then still fits: only the op's rule refuses
  set_blob_node(&blob, 0, node);
  EXPECT_EQ(parse_result(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("expected a 3x3 window, stride 1, dilation 1"), std::string::npos)
      << message;
}

TEST_F(CpuBlobTest, ResidualAddAndReluFoldIntoTheConv) {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 16, 8, 8};
  const int x = b.input("x", DType::F32, xs);
  const int w = b.constant_f32("w", {16, 16, 3, 3}, random_floats(2304, 11, -0.3f, 0.3f));
  const int c = b.op("tern::conv2d",
                     {x, w, b.none(), b.int_list({1, 1}), b.int_list({1, 1}), b.int_list({1, 1}),
                      b.int_value(1)},
                     DType::F32, xs);
  const int s = b.op("tern::add", {x, c}, DType::F32, xs);
  b.output(b.op("tern::relu", {s}, DType::F32, xs));
  delegate_cpu(b, 0, 2);
  const compiler::Graph g = b.build();
  std::vector<uint8_t> blob = g.delegates[0].blob;
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // conv + add + relu in one node
  const size_t node_at = sizeof(h) + h.num_values * sizeof(cpu::BlobValue);
  cpu::BlobNode node;
  std::memcpy(&node, blob.data() + node_at, sizeof(node));
  EXPECT_EQ(node.op, static_cast<uint32_t>(cpu::NodeOp::PackedConv2d));
  ASSERT_EQ(node.num_inputs, 3u);
  EXPECT_EQ(node.inputs[2], node.inputs[0]);  // the residual is x itself
  EXPECT_EQ(node.fparams[0], 0.0f);
  // A residual pointing at the packed weight is refused: it must not be a constant.
  std::vector<uint8_t> bad = blob;
  const uint32_t weight = node.inputs[1];
  std::memcpy(bad.data() + node_at + offsetof(cpu::BlobNode, inputs) + 8, &weight, 4);
  cpu::BlobPlan plan;
  EXPECT_EQ(cpu::parse_blob(Span<const uint8_t>(bad.data(), bad.size()), &plan),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("must not be a constant"), std::string::npos)
      << last_error_message();
  cpu::free_blob_plan(&plan);
}

/// x [1, 16, 12, 12] -> 1x1 16->64 + bias -> relu6 -> dw 3x3 pad 1 -> relu6 -> 1x1 64->16 -> +x
/// (MobileNetV2's block): one PackedBottleneck node. The graph (its constants the arguments) in
/// *graph_out when given.
std::vector<uint8_t> bottleneck_blob(compiler::Graph* graph_out = nullptr) {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 16, 12, 12}, hs{1, 64, 12, 12};
  const int x = b.input("x", DType::F32, xs);
  const auto conv = [&](int in, int64_t o, int64_t i, int64_t k, int64_t groups, uint32_t seed) {
    const int w = b.constant_f32("w" + std::to_string(seed), {o, i, k, k},
                                 random_floats(size_t(o * i * k * k), seed, -0.3f, 0.3f));
    const int bias = b.constant_f32("b" + std::to_string(seed), {o},
                                    random_floats(size_t(o), seed + 1, -0.3f, 0.3f));
    return b.op("tern::conv2d",
                {in, w, bias, b.int_list({1, 1}), b.int_list({k / 2, k / 2}), b.int_list({1, 1}),
                 b.int_value(groups)},
                DType::F32, {1, o, 12, 12});
  };
  const auto relu6 = [&](int in, const std::vector<int64_t>& s) {
    return b.op("tern::hardtanh", {in, b.double_value(0.0), b.double_value(6.0)}, DType::F32, s);
  };
  const int e = relu6(conv(x, 64, 16, 1, 1, 31), hs);
  const int d = relu6(conv(e, 64, 1, 3, 64, 33), hs);
  const int p = conv(d, 16, 64, 1, 1, 35);
  b.output(b.op("tern::add", {p, x}, DType::F32, xs));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  if (graph_out != nullptr) *graph_out = b.graph();
  return b.graph().delegates[0].blob;
}

TEST_F(CpuBlobTest, BottleneckChainIsOneNode) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = bottleneck_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_nodes, 1u);  // 1x1, relu6, dw, relu6, 1x1, add: one node
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.op, static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck));
  ASSERT_EQ(n.num_inputs, 3u);
  EXPECT_EQ(n.inputs[2], n.inputs[0]);  // the residual is x
  EXPECT_EQ(n.params[cpu::kKernelH], 3u);
  EXPECT_EQ(n.params[cpu::kKernelW], 3u);
  EXPECT_EQ(n.params[cpu::kPadTop], 1u);
  EXPECT_EQ(n.params[cpu::kStrideH], 1u);
  EXPECT_EQ(n.params[cpu::kDilationH], 1u);
  EXPECT_EQ(n.params[cpu::kBottleneckInChannels], 16u);
  EXPECT_EQ(n.params[cpu::kBottleneckExpandedChannels], 64u);
  EXPECT_EQ(n.params[cpu::kBottleneckOutChannels], 16u);
  EXPECT_EQ(n.params[cpu::kBottleneckFlags],
            cpu::kBottleneckHasExpand | cpu::kBottleneckHasProject);
  EXPECT_EQ(n.params[cpu::kBottleneckExpandEpilogue],
            static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6));
  EXPECT_EQ(n.params[cpu::kBottleneckDepthwiseEpilogue],
            static_cast<uint32_t>(cpu::BottleneckEpilogue::Relu6));
  cpu::BlobValue w;
  std::memcpy(&w, blob.data() + sizeof(h) + n.inputs[1] * sizeof(cpu::BlobValue), sizeof(w));
  EXPECT_EQ(w.kind, static_cast<uint32_t>(cpu::ValueKind::Derived));  // made at prepare
  ASSERT_EQ(w.rank, 1u);
  EXPECT_EQ(w.dims[0], cpu::bottleneck_weight_floats(true, true, 16, 64, 16, 3, 3));
  std::string message;
  EXPECT_EQ(parse_result(blob, &message), Error::Ok) << message;
  EXPECT_EQ(try_blob<BottleneckArgs>(blob, h.num_args, &message, &g), Error::Ok) << message;
  // Another model's arguments: prepare refuses them.
  EXPECT_EQ(try_blob(blob, h.num_args, &message, &g), Error::InvalidArgument) << message;
}

TEST_F(CpuBlobTest, BottleneckTableByteFlipsAreHandled) {
  compiler::Graph g;
  const std::vector<uint8_t> blob = bottleneck_blob(&g);
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  int accepted = 0, refused = 0;
  for (size_t i = 0; i < h.data_offset; ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> bad = blob;
      bad[i] ^= flip;
      std::string msg;
      // init, prepare and execute with the model's own arguments: must return.
      const Error e = try_blob<BottleneckArgs>(bad, h.num_args, &msg, &g);
      if (e == Error::Ok) {
        ++accepted;
      } else {
        ++refused;
        EXPECT_NE(msg, "") << "byte " << i << " flip " << int(flip) << ": no message";
      }
    }
  }
  EXPECT_GT(refused, accepted);
  RecordProperty("accepted", accepted);
  RecordProperty("refused", refused);
}

TEST_F(CpuBlobTest, BottleneckFieldsAreChecked) {
  const std::vector<uint8_t> blob = bottleneck_blob();
  ASSERT_EQ(blob_node(blob, 0).op, static_cast<uint32_t>(cpu::NodeOp::PackedBottleneck));
  struct Case {
    const char* what;
    std::function<void(cpu::BlobNode&)> mutate;
    const char* expect;
  };
  const Case cases[] = {
      // Flag 8 (the affine, since version 28) reads the last input as a constant.
      {"flags 8", [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = 8; },
       "input 2 (value 0) must be a constant"},
      {"flags 16", [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = 16; },
       "flags 16, epilogues 2 and 2; expected flags <= 15"},
      {"expand epilogue 5",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckExpandEpilogue] = 5; },
       "flags 3, epilogues 5 and 2"},
      {"depthwise epilogue 5",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckDepthwiseEpilogue] = 5; },
       "flags 3, epilogues 2 and 5"},
      {"an expand epilogue without an expand",  // project only, expand epilogue relu6
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = cpu::kBottleneckHasProject; },
       "flags 2, epilogues 2 and 2; expected flags <= 15 (the affine 8 only without a project "
       "2) and epilogues <= 4 (the expand's 0 without an expand)"},
      {"squeeze channels without squeeze-excitation",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] |= 4u << cpu::kBottleneckHighShift; },
       "flags 3, squeeze-excitation of 4 channels, squeeze epilogue 0, gate 0; expected a "
       "project"},
      {"a squeeze epilogue without squeeze-excitation",
       [](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckExpandEpilogue] |= 1u << cpu::kBottleneckHighShift;
       },
       "squeeze-excitation of 0 channels, squeeze epilogue 1, gate 0"},
      {"a gate without squeeze-excitation",
       [](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckDepthwiseEpilogue] |= 1u << cpu::kBottleneckHighShift;
       },
       "squeeze-excitation of 0 channels, squeeze epilogue 0, gate 1"},
      {"squeeze-excitation of no channels",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] |= cpu::kBottleneckHasSqueezeExcite; },
       "flags 7, squeeze-excitation of 0 channels"},
      {"squeeze-excitation without its weights",  // 4 channels: the constant lacks them
       [](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckFlags] |=
             cpu::kBottleneckHasSqueezeExcite | (4u << cpu::kBottleneckHighShift);
       },
       "16 -> 64 -> 16 channels, 3x3 window, squeeze 4)"},
      {"dilation 2", [](cpu::BlobNode& n) { n.params[cpu::kDilationH] = 2; },
       "a 3x3 window with dilation 2x1; expected at most 16 rows and dilation 1"},
      {"a window taller than 16", [](cpu::BlobNode& n) { n.params[cpu::kKernelH] = 17; },
       "a 17x3 window with dilation 1x1; expected at most 16 rows"},
      {"no project with other output channels",  // (a residual without one is legal)
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckFlags] = cpu::kBottleneckHasExpand; },
       "16 -> 64 -> 16 channels, flags 1"},
      {"no expand with other expanded channels",
       [](cpu::BlobNode& n) {
         n.params[cpu::kBottleneckFlags] = cpu::kBottleneckHasProject;
         n.params[cpu::kBottleneckExpandEpilogue] = 0;
       },
       "16 -> 64 -> 16 channels, flags 2"},
      {"a weight constant of the wrong size",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckOutChannels] = 17; },
       "16 -> 64 -> 17 channels, 3x3 window, squeeze 0)"},
      {"residual dims that are not the output's",  // stride 2: a 6x6 output, x is 12x12
       [](cpu::BlobNode& n) { n.params[cpu::kStrideH] = n.params[cpu::kStrideW] = 2; },
       "has dims [1, 12, 12, 16], expected the output's [1, 6, 6, 16]"},
      {"in channels that are not x's",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckInChannels] = 15; },
       "input value 0: expected 4 dims with 15 channels last"},
      {"an expanded channel count over the limit",
       [](cpu::BlobNode& n) { n.params[cpu::kBottleneckExpandedChannels] = (1u << 30) + 1; },
       "parameter 11 is 1073741825, above 1073741824"},
      {"a window of zero rows", [](cpu::BlobNode& n) { n.params[cpu::kKernelH] = 0; },
       "parameter 4 is 0, expected >= 1"},
      {"zero out channels", [](cpu::BlobNode& n) { n.params[cpu::kBottleneckOutChannels] = 0; },
       "parameter 12 is 0, expected >= 1"},
      {"a constant residual",
       [](cpu::BlobNode& n) { n.inputs[2] = n.inputs[1]; }, "must not be a constant"},
      {"5 inputs", [](cpu::BlobNode& n) { n.num_inputs = 5; }, "5 inputs, expected 2..4"},
      {"4 inputs without the affine flag", [](cpu::BlobNode& n) {
         n.num_inputs = 4;
         n.inputs[3] = n.inputs[0];
       }, "4 inputs without the affine flag"},
      {"project output bounds out of order",
       [](cpu::BlobNode& n) {
         n.fparams[0] = 1.0f;
         n.fparams[1] = -1.0f;
       },
       "output bounds [1, -1] not ordered"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobNode n = blob_node(bad, 0);
    c.mutate(n);
    set_blob_node(&bad, 0, n);
    std::string message;
    EXPECT_EQ(parse_result(bad, &message), Error::InvalidProgram) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
    if (std::string(c.expect).find("parameter") == std::string::npos &&
        std::string(c.expect).find("inputs") == std::string::npos &&
        std::string(c.expect).find("constant") == std::string::npos &&
        std::string(c.expect).find("bounds") == std::string::npos) {
      EXPECT_NE(message.find("node 0 (packed_bottleneck)"), std::string::npos) << message;
    }
  }
  // Channels that do not match x's through the residual: x's C is 16 (value 0), set 12 on it.
  {
    std::vector<uint8_t> bad = blob;
    const uint64_t c = 12;
    std::memcpy(bad.data() + sizeof(cpu::BlobHeader) + offsetof(cpu::BlobValue, dims) + 3 * 8, &c,
                8);
    std::string message;
    EXPECT_EQ(parse_result(bad, &message), Error::InvalidProgram);
    EXPECT_NE(message.find("input value 0: expected 4 dims with 16 channels last"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace tern::cpu_test
