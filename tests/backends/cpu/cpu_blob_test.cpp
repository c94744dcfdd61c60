// The cpu backend's blob format: what the compile half claims and refuses, the header it
// writes, and its runtime half's defence against bad blobs and bad arguments — every
// truncation, byte flip and corrupt field is a clean error naming the problem, never a crash.
// (Which nodes a region lowers to: cpu_blob_lowering_test.cpp.)
#include "tests/backends/cpu/cpu_blob_test_util.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace tern::cpu_test {
namespace {

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
  // ChannelMix), 28 (before ChannelMix's softmax), 29 (before the F(4x4, 3x3) Winograd tile).
  static_assert(cpu::kBlobVersion == 30, "add the version this one replaces to the list below");
  for (uint32_t old : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u,
                       17u, 18u, 19u, 20u, 21u, 22u, 23u, 24u, 25u, 26u, 27u, 28u, 29u}) {
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
