// A mixture of experts' grouped products on the vulkan backend (blob version 8): x ->
// grouped_mm(w1 [4, 40, 24]) -> relu -> grouped_mm(w2 [4, 24, n2]) with the group ends an
// int32 or int64 input (the routing runs outside the delegate). f32 experts (node op 17, f32
// and f16 storage), nf4 / fp8 experts after the compiler's quantization pass (node op 18:
// tern::grouped_linear, decoded in the shader) and a hand-written f32 grouped_linear run as
// one vulkan delegate and equal the same program on the portable kernels (f32 within 1e-5
// relative; f16 storage by NMSE); rows after the last end are zeros; ends that go backwards or
// past the rows fail the execute naming them, as the portable kernel does. The blob reader
// checks the ends' type and count and the new params.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/compile/register_vulkan_backend_compiler.h"
#include "backends/vulkan/runtime/blob_reader.h"
#include "tests/backends/vulkan/vulkan_test_util.h"
#include "tools/compiler/compile.h"
#include "tests/support/moe_mlp.h"
#include "tests/support/quant_mlp.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::vulkan_test {
namespace {

using vulkan::BlobNode;
using vulkan::NodeOp;

constexpr int64_t kRows = 21, kExperts = 4, kDim = 40, kHidden = 24;

/// x [21, 40] -> grouped_mm(w1) -> relu -> grouped_mm(w2 [4, 24, n2]); ends an `ends` input.
compiler::Graph moe(DType ends, int64_t n2) {
  return test_support::moe_mlp({kRows, kExperts, kDim, kHidden, n2}, ends, 1.5f);
}

using Outputs = test_support::MoeRun;

/// Runs the program's forward on x = random and `ends`, on vulkan or (`disable`) the
/// delegate's portable fallback.
Outputs run(const std::vector<uint8_t>& bytes, DType ends_dtype, const std::vector<int64_t>& ends,
            bool disable) {
  const std::vector<Outputs> r = test_support::run_moe(
      bytes, {kRows, kExperts, kDim, kHidden, 0}, ends_dtype, {ends}, disable ? "vulkan" : nullptr);
  return r.empty() ? Outputs{Error::InvalidState, "not loaded", {}, {}} : r[0];
}

/// The node ops of the blob of region 0 of `g` lowered with `backend` ("vulkan", "vulkan:f16").
std::vector<uint32_t> region_ops(compiler::Graph g, const std::string& backend) {
  compiler::partition(g, {backend});
  EXPECT_EQ(g.delegates.size(), 1u);
  std::vector<uint32_t> ops;
  if (g.delegates.size() != 1) return ops;
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size()) << "one region of every node";
  const uint32_t storage = backend == "vulkan:f16" ? vulkan::kStorageF16 : vulkan::kStorageF32;
  return blob_ops(compiler::VulkanBackendCompiler(storage).lower(g, g.delegates[0]).blob);
}

size_t count(const std::vector<uint32_t>& ops, NodeOp op) {
  return static_cast<size_t>(std::count(ops.begin(), ops.end(), static_cast<uint32_t>(op)));
}

/// max |a - b| <= rel * max |b|, or NMSE <= nmse_max when rel is 0.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rel,
                  double nmse_max, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_TRUE(all_finite(a)) << what;
  double peak = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    peak = std::max(peak, std::fabs(static_cast<double>(b[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  EXPECT_GT(peak, 0.0) << what;
  if (rel > 0) {
    EXPECT_LE(worst, rel * peak) << what << ": max abs error " << worst << ", max |portable| " << peak;
  } else {
    const double e = nmse(a, b);
    EXPECT_LE(e, nmse_max) << what;
    std::printf("%s: NMSE %.3g\n", what.c_str(), e);
  }
}

/// The ends the tests use: empty first and third experts with rows after the last end (zeros),
/// every expert, every row in the last one.
const std::vector<std::vector<int64_t>>& ends_cases() {
  static const std::vector<std::vector<int64_t>> c = {{0, 5, 5, 11}, {2, 4, 19, 21}, {0, 0, 0, 21}};
  return c;
}

/// Compiles `program` for `backend` and for the portable kernels and compares them on every
/// ends case; then checks a bad end is refused by name.
void check_program(const compiler::ProgramGraph& program, const compiler::CompileOptions& base,
                   const std::string& backend, DType ends_dtype, int64_t n, double rel,
                   double nmse_max, const std::string& what) {
  compiler::CompileOptions options = base;
  options.backends = {backend};
  const compiler::CompileResult vk = compiler::compile_program(program, options);
  ASSERT_EQ(vk.methods[0].num_delegates, 1u) << what;
  for (const std::vector<int64_t>& ends : ends_cases()) {
    const Outputs a = run(vk.bytes, ends_dtype, ends, false);
    const Outputs b = run(vk.bytes, ends_dtype, ends, true);
    ASSERT_EQ(a.error, Error::Ok) << a.message;
    ASSERT_EQ(b.error, Error::Ok) << b.message;
    ASSERT_EQ(a.paths, std::vector<DelegatePath>{DelegatePath::Backend}) << what;
    ASSERT_EQ(b.paths, std::vector<DelegatePath>{DelegatePath::Fallback}) << what;
    expect_close(a.y, b.y, rel, nmse_max, what + " ends " + std::to_string(ends[0]) + "," +
                                              std::to_string(ends[1]) + "," +
                                              std::to_string(ends[2]) + "," +
                                              std::to_string(ends[3]));
    for (int64_t i = ends.back() * n; i < kRows * n; ++i) {
      ASSERT_EQ(a.y[static_cast<size_t>(i)], 0.0f) << what << ": row after the last end, " << i;
    }
  }
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{3, 2, 5, 21},
                                          std::vector<int64_t>{0, 5, 9, 22},
                                          std::vector<int64_t>{-1, 5, 9, 21}}) {
    const Outputs r = run(vk.bytes, ends_dtype, bad, false);
    EXPECT_EQ(r.error, Error::InvalidArgument) << what;
    const std::string want = bad[0] == 3    ? "ends[1] is 2, expected 3..21"
                             : bad[0] == -1 ? "ends[0] is -1, expected 0..21"
                                            : "ends[3] is 22, expected 9..21";
    EXPECT_NE(r.message.find(want), std::string::npos) << what << ": " << r.message;
  }
}

class VulkanGrouped : public ::testing::Test {
 protected:
  void SetUp() override {
    register_all();
    compiler::register_vulkan_backend_compiler();
  }
};

TEST_F(VulkanGrouped, F32ExpertsMatchPortable) {
  for (DType ends : {DType::I32, DType::I64}) {
    compiler::ProgramGraph program;
    program.methods.push_back(moe(ends, 33));
    const std::vector<uint32_t> ops = region_ops(program.methods[0], "vulkan");
    EXPECT_EQ(count(ops, NodeOp::GroupedMatmul), 2u);
    const std::string what = std::string("f32 experts, ends ") + to_string(ends);
    check_program(program, {}, "vulkan", ends, 33, 1e-5, 0, what);
  }
}

TEST_F(VulkanGrouped, F16StorageExpertsMatchPortable) {
  if (!vulkan_device_has_f16_storage()) {
    GTEST_SKIP() << "the device lacks shaderFloat16 / storageBuffer16BitAccess";
  }
  compiler::ProgramGraph program;
  program.methods.push_back(moe(DType::I64, 33));
  EXPECT_EQ(count(region_ops(program.methods[0], "vulkan:f16"), NodeOp::GroupedMatmul), 2u);
  check_program(program, {}, "vulkan:f16", DType::I64, 33, 0, 1e-5, "f16 storage experts");
}

/// tern::grouped_linear with an f32 w [E·N, K] (each expert transposed): op 17, w layout 1.
TEST_F(VulkanGrouped, F32GroupedLinearMatchesPortable) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {kRows, kDim});
  const int e = g.input("ends", DType::I32, {kExperts});
  const int w = g.constant_f32("w", {kExperts * 17, kDim},
                               random_floats(kExperts * 17 * kDim, 3, -0.3f, 0.3f));
  g.output(g.op("tern::grouped_linear", {x, w, e}, DType::F32, {kRows, 17}));
  compiler::ProgramGraph program;
  program.methods.push_back(g.build());
  EXPECT_EQ(count(region_ops(program.methods[0], "vulkan"), NodeOp::GroupedMatmul), 1u);
  check_program(program, {}, "vulkan", DType::I32, 17, 1e-5, 0, "f32 grouped_linear");
}

class VulkanQuantGrouped : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    register_all();
    compiler::register_vulkan_backend_compiler();
  }
};

TEST_P(VulkanQuantGrouped, ExpertsMatchPortable) {
  // w2's experts: 20 rows each with nf4 blocks of 32 and no tiles (blocks and scales span two
  // experts: the shader decodes any element, no split rule), else 32 rows.
  const std::string scheme = GetParam();
  const int64_t n2 = scheme == "nf4:block=32" || scheme == "fp8_e5m2" ? 20 : 32;
  compiler::ProgramGraph program;
  program.methods.push_back(moe(DType::I32, n2));
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(scheme);
  compiler::ProgramGraph quantized = program;
  const compiler::QuantizeReport report = compiler::quantize_program(quantized, options.quantize);
  ASSERT_EQ(report.weights.size(), 2u);
  EXPECT_TRUE(report.weights[0].transposed);
  const std::vector<uint32_t> ops = region_ops(quantized.methods[0], "vulkan");
  EXPECT_EQ(count(ops, NodeOp::QuantGroupedLinear), 2u) << scheme;
  check_program(program, options, "vulkan", DType::I32, n2, 1e-5, 0, scheme);
}

INSTANTIATE_TEST_SUITE_P(Schemes, VulkanQuantGrouped,
                         ::testing::Values("nf4:block=32", "nf4", "nf4:block=32:double",
                                           "fp8_e4m3", "fp8_e4m3:per_tensor",
                                           "fp8_e4m3:block=16x8", "fp8_e5m2"),
                         test_support::scheme_test_name);

/// What the compile half refuses (the nodes then run on the portable kernels).
TEST_F(VulkanGrouped, RefusalsNameTheReason) {
  GraphBuilder g;
  const int x = g.input("x", DType::F32, {kRows, kDim});
  const int ce = g.constant("ends", DType::I32, {2}, std::vector<uint8_t>(8, 0));
  const int w = g.constant_f32("w", {2, kDim, 8}, random_floats(2 * kDim * 8, 4));
  g.output(g.op("tern::grouped_mm", {x, w, ce}, DType::F32, {kRows, 8}));
  const compiler::Graph graph = g.build();
  EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(graph, graph.nodes[0],
                                                                vulkan::kStorageF32)
                .find("an int32 / int64 activation expected"),
            std::string::npos);
  // Quantized experts in f16 storage: not taken.
  compiler::ProgramGraph program;
  program.methods.push_back(moe(DType::I32, 32));
  compiler::QuantizeOptions q;
  q.scheme = compiler::parse_quant_scheme("nf4");
  compiler::quantize_program(program, q);
  const compiler::Graph& qg = program.methods[0];
  EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(qg, qg.nodes[0],
                                                                vulkan::kStorageF16),
            "");
  EXPECT_EQ(compiler::VulkanBackendCompiler::unsupported_reason(qg, qg.nodes[0],
                                                                vulkan::kStorageF32),
            "");
}

/// The reader checks the grouped nodes' ends (type, kind, count), their params and w's size.
TEST_F(VulkanGrouped, BlobReaderChecksGroupedNodes) {
  for (bool quant : {false, true}) {
    compiler::Graph g = moe(DType::I64, 32);
    if (quant) {
      compiler::ProgramGraph program;
      program.methods.push_back(g);
      compiler::QuantizeOptions q;
      q.scheme = compiler::parse_quant_scheme("fp8_e4m3");
      compiler::quantize_program(program, q);
      g = program.methods[0];
    }
    compiler::partition(g, {"vulkan"});
    ASSERT_EQ(g.delegates.size(), 1u);
    const std::vector<uint8_t> blob =
        compiler::VulkanBackendCompiler().lower(g, g.delegates[0]).blob;
    ASSERT_EQ(parse(blob), Error::Ok) << last_error_message();
    AlignedBlob a(blob);
    vulkan::BlobPlan plan;
    ASSERT_EQ(vulkan::parse_blob(Span<const uint8_t>(a.data(), blob.size()), &plan), Error::Ok);
    ASSERT_EQ(plan.header.version, vulkan::kBlobVersion);
    const BlobNode first = plan.nodes[0];
    const uint32_t ends_value = first.inputs[2];
    EXPECT_EQ(plan.values[ends_value].type, static_cast<uint32_t>(vulkan::ValueType::I64));
    EXPECT_EQ(first.params[4], 2) << "two words per int64 end";
    vulkan::free_blob_plan(&plan);
    const size_t n0 = node_offset(blob, 0);
    const size_t params = n0 + offsetof(BlobNode, params);
    const size_t ends_record = sizeof(vulkan::BlobHeader) + ends_value * sizeof(vulkan::BlobValue);
    struct Bad {
      std::vector<uint8_t> bytes;
      const char* message;
    };
    std::vector<Bad> bad = {
        {patched<int32_t>(blob, params + 4 * 4, 1), "group ends: an external input of the type"},
        {patched<int32_t>(blob, params + 4 * 4, 3), "words per end (1 i32, 2 i64): expected 1, found 3"},
        {patched<int32_t>(blob, params + 4 * 3, 5), "group ends [E]: expected 5, found 4"},
        {patched<uint32_t>(blob, n0 + offsetof(BlobNode, inputs) + 8, first.inputs[0]),
         "is f32, expected i32 or i64 (group ends)"},
        {patched<uint32_t>(blob, ends_record + offsetof(vulkan::BlobValue, kind), 0),
         "type 1, expected 0 (f32), 1 (i64), 3 (i32), 4 (bool), 5 (i64 as floats) or 6 (i64 cast to "
         "floats) for an external input"},
        {patched<int32_t>(blob, params + 4 * 1, kDim + 1), quant ? "expected [96, 41]" : "w elements (E K N): expected 3936, found 3840"},
    };
    if (!quant) {
      bad.push_back({patched<int32_t>(blob, params + 4 * 5, 2), "flag parameter"});
      bad.push_back({patched<int32_t>(blob, params + 4 * 6, 1), "unused parameter"});
    } else {
      bad.push_back({patched<int32_t>(blob, params + 4 * 5, 1), "unused parameter"});
    }
    for (size_t i = 0; i < bad.size(); ++i) {
      clear_error_message();
      EXPECT_EQ(parse(bad[i].bytes), Error::InvalidProgram) << "case " << i << " quant " << quant;
      EXPECT_NE(std::string(last_error_message()).find(bad[i].message), std::string::npos)
          << "case " << i << " quant " << quant << ": " << last_error_message();
    }
  }
}

}  // namespace
}  // namespace tern::vulkan_test
