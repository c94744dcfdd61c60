// NF4 / FP8 experts of a grouped product on the cpu backend (op 47, QuantizedGroupedMatmul): a
// mixture of experts' MLP, x -> grouped_mm(w1 [4, 128, 128]) -> relu -> grouped_mm(w2 [4, 128,
// 136 or 128]), quantized by the compiler's pass for every scheme (the pass rewrites each grouped_mm to
// tern::grouped_linear with w [E N, K]), partitioned for the cpu backend: both products are op
// 47 nodes, and the program matches the same program on the portable kernels (dequantize then
// the f32 product) within 1e-5 relative. Experts whose rows do not split the quantized layout
// stay on the portable kernels, saying why; bad ends fail the execute naming them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "tests/backends/cpu/cpu_test_util.h"
#include "tests/support/moe_mlp.h"
#include "tests/support/quant_mlp.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::cpu_test {
namespace {

constexpr int64_t kRows = 21, kExperts = 4, kDim = 128, kHidden = 128;

/// x [21, 128] -> grouped_mm(w1) -> relu -> grouped_mm(w2 [4, 128, n2]); ends an int32 input.
compiler::Graph moe(int64_t n2) {
  return test_support::moe_mlp({kRows, kExperts, kDim, kHidden, n2}, DType::I32);
}

using Outputs = test_support::MoeRun;

Outputs run(const std::vector<uint8_t>& bytes, std::vector<int32_t> ends) {
  const std::vector<Outputs> r = test_support::run_moe(
      bytes, {kRows, kExperts, kDim, kHidden, 0}, DType::I32,
      {std::vector<int64_t>(ends.begin(), ends.end())});
  return r.empty() ? Outputs{Error::InvalidState, "not loaded", {}, {}} : r[0];
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  float peak = 0.0f, worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    peak = std::max(peak, std::fabs(b[i]));
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  EXPECT_GT(peak, 0.0f);
  EXPECT_LE(worst, 1e-5f * peak) << "max abs error " << worst << ", max |portable| " << peak;
}

class QuantGroupedCpu : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
    compiler::register_cpu_backend_compiler();
  }
};

TEST_P(QuantGroupedCpu, ExpertsMatchPortable) {
  // w2's experts: 136 rows (not a multiple of the 16-column panels) where the scheme splits
  // there; double quantization's groups of 256 blocks and 64-row tiles need 128.
  const std::string scheme = GetParam();
  const int64_t n2 = scheme.find("double") != std::string::npos ||
                             scheme.find("block") != std::string::npos
                         ? 128
                         : 136;
  compiler::ProgramGraph program;
  program.methods.push_back(moe(n2));
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(GetParam());

  compiler::ProgramGraph quantized = program;
  const compiler::QuantizeReport report = compiler::quantize_program(quantized, options.quantize);
  ASSERT_EQ(report.weights.size(), 2u);
  EXPECT_EQ(report.weights[0].shape, (std::vector<int64_t>{kExperts * kHidden, kDim}));
  EXPECT_TRUE(report.weights[0].transposed);
  compiler::Graph& g = quantized.methods[0];
  for (const compiler::Node& n : g.nodes) {
    EXPECT_NE(n.op, "tern::grouped_mm") << "the pass rewrites both products";
  }
  compiler::partition(g, {"cpu"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size());
  const std::vector<uint8_t> blob = compiler::CpuBackendCompiler().lower(g, g.delegates[0]).blob;
  EXPECT_EQ(count_op(blob, cpu::NodeOp::QuantizedGroupedMatmul), 2u);

  options.backends = {"cpu"};
  const compiler::CompileResult cpu = compiler::compile_program(program, options);
  EXPECT_EQ(cpu.methods[0].num_delegates, 1u);
  options.backends.clear();
  const compiler::CompileResult portable = compiler::compile_program(program, options);
  EXPECT_EQ(portable.methods[0].num_delegates, 0u);

  // Empty first and third experts, rows after the last end (zeros); every expert; then every
  // row in one (21 rows: from 16 on, op 23's kernels decode f32 panels).
  for (const std::vector<int32_t>& ends :
       {std::vector<int32_t>{0, 5, 5, 11}, std::vector<int32_t>{2, 4, 19, 21},
        std::vector<int32_t>{0, 0, 0, 21}}) {
    const Outputs a = run(cpu.bytes, ends), b = run(portable.bytes, ends);
    ASSERT_EQ(a.error, Error::Ok) << a.message;
    ASSERT_EQ(b.error, Error::Ok) << b.message;
    expect_close(a.y, b.y);
    if (ends.back() < kRows) {
      for (int64_t i = ends.back() * n2; i < kRows * n2; ++i) ASSERT_EQ(a.y[i], 0.0f) << i;
    }
  }
  const Outputs bad = run(cpu.bytes, {3, 2, 5, 21});
  EXPECT_EQ(bad.error, Error::InvalidArgument);
  EXPECT_NE(bad.message.find("ends[1] is 2, expected 3..21"), std::string::npos) << bad.message;
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantGroupedCpu,
                         ::testing::Values("nf4", "nf4:double", "fp8_e4m3", "fp8_e4m3:per_tensor",
                                           "fp8_e4m3:block=64", "fp8_e5m2"),
                         test_support::scheme_test_name);

TEST(QuantGroupedCpuSplit, ExpertsThatDoNotSplitTheLayoutStayPortable) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cpu_backend(), Error::Ok);
  compiler::register_cpu_backend_compiler();
  compiler::ProgramGraph program;
  program.methods.push_back(moe(20));  // w2's experts: 20 rows each, not a multiple of 8
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme("nf4");
  compiler::ProgramGraph quantized = program;
  (void)compiler::quantize_program(quantized, options.quantize);
  const compiler::Graph& g = quantized.methods[0];
  const std::string why =
      compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes.back());
  EXPECT_NE(why.find("do not split the quantized layout"), std::string::npos) << why;
  EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes.front()), "");

  options.backends = {"cpu"};
  const compiler::CompileResult cpu = compiler::compile_program(program, options);
  options.backends.clear();
  const compiler::CompileResult portable = compiler::compile_program(program, options);
  const Outputs a = run(cpu.bytes, {1, 6, 6, 20}), b = run(portable.bytes, {1, 6, 6, 20});
  ASSERT_EQ(a.error, Error::Ok) << a.message;
  ASSERT_EQ(b.error, Error::Ok) << b.message;
  expect_close(a.y, b.y);
}

}  // namespace
}  // namespace tern::cpu_test
