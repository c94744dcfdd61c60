// The vulkan blob as untrusted input: a lowered blob parses back to what was written; every
// corrupt field is refused with a message naming it (never a crash); every single-byte flip of
// a real blob is refused or harmless (the reader keeps every shader access inside its buffers);
// a blob the device cannot run (another version, f16 storage on a device without its
// features) falls back; f16-storage blobs hold f16 constants and no quantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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
       "version 2, this runtime reads version 11"},
      {patched<uint32_t>(blob, 4, 3), Error::DelegateInvalidCompatibility, "version 3"},
      {patched<uint32_t>(blob, 4, 4), Error::DelegateInvalidCompatibility, "version 4"},
      {patched<uint32_t>(blob, 4, 5), Error::DelegateInvalidCompatibility, "version 5"},
      {patched<uint32_t>(blob, 4, 6), Error::DelegateInvalidCompatibility, "version 6"},
      {patched<uint32_t>(blob, 4, 7), Error::DelegateInvalidCompatibility, "version 7"},
      {patched<uint32_t>(blob, 4, 8), Error::DelegateInvalidCompatibility, "version 8"},
      {patched<uint32_t>(blob, 4, 9), Error::DelegateInvalidCompatibility, "version 9"},
      {patched<uint32_t>(blob, 4, 10), Error::DelegateInvalidCompatibility, "version 10"},
      {patched<uint32_t>(blob, 4, 12), Error::DelegateInvalidCompatibility, "version 12"},
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

// A pad node's reads stay inside x: reflect pads are checked against their dim, the mode and
// the output's element count too.
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
}  // namespace
}  // namespace tern::vulkan_test
