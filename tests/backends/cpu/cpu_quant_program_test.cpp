// Quantized programs on the cpu backend end to end: a small MLP with an embedding (int64
// indices), linears with and without bias, a relu and a matmul with a constant weight,
// quantized by the compiler's pass (`--quantize nf4`, `nf4:double`, `fp8_e4m3`, per tensor,
// 2-D blocks, `fp8_e5m2`), partitioned for the cpu backend: every node lands in one delegate
// whose blob holds ops 23 and 24, and the program's outputs match the same program on the
// portable kernels (dequantize then the f32 op) within 1e-5 relative; the embedding exactly.
// An out-of-range index fails the execute with a message naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/backends/cpu/cpu_test_util.h"
#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::cpu_test {
namespace {

constexpr int64_t kVocab = 37, kDim = 96, kHidden = 130, kOut = 77, kProj = 40;

compiler::Graph mlp() {
  GraphBuilder g;
  const int idx = g.input("idx", DType::I64, {5});
  const int emb = g.constant_f32("emb.weight", {kVocab, kDim}, random_floats(kVocab * kDim, 1));
  const int w1 = g.constant_f32("fc1.weight", {kHidden, kDim}, random_floats(kHidden * kDim, 2, -0.2f, 0.2f));
  const int b1 = g.constant_f32("fc1.bias", {kHidden}, random_floats(kHidden, 3));
  const int w2 = g.constant_f32("fc2.weight", {kOut, kHidden}, random_floats(kOut * kHidden, 4, -0.2f, 0.2f));
  const int m = g.constant_f32("proj", {kOut, kProj}, random_floats(kOut * kProj, 5, -0.3f, 0.3f));
  const int e = g.op("tern::embedding", {emb, idx}, DType::F32, {5, kDim});
  const int h = g.op("tern::linear", {e, w1, b1}, DType::F32, {5, kHidden});
  const int r = g.op("tern::relu", {h}, DType::F32, {5, kHidden});
  const int y = g.op("tern::linear", {r, w2, g.none()}, DType::F32, {5, kOut});
  const int z = g.op("tern::matmul", {y, m}, DType::F32, {5, kProj});
  g.output(e);
  g.output(z);
  return g.build();
}

struct Outputs {
  Error error = Error::Ok;
  std::string message;
  std::vector<std::vector<float>> values;
};

Outputs run(const std::vector<uint8_t>& bytes, std::vector<int64_t> idx) {
  Outputs out;
  testing::LoadedProgram lp(bytes);
  auto meta = lp.program().method_meta("forward");
  EXPECT_TRUE(meta.ok()) << last_error_message();
  testing::MethodMemory memory(*meta);
  auto method = lp.program().load_method("forward", memory.manager());
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return out;
  std::vector<int64_t> sizes = {static_cast<int64_t>(idx.size())};
  TensorView in;
  in.dtype = DType::I64;
  in.rank = 1;
  in.sizes = sizes.data();
  in.data = idx.data();
  in.nbytes = idx.size() * 8;
  EXPECT_EQ(method->set_input(0, in), Error::Ok) << last_error_message();
  out.error = method->execute();
  if (out.error != Error::Ok) {
    out.message = last_error_message();
    return out;
  }
  for (size_t o = 0; o < 2; ++o) {
    auto t = method->output(o);
    EXPECT_TRUE(t.ok());
    out.values.push_back(testing::to_vector(**t));
  }
  return out;
}

class QuantCpuProgram : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
    compiler::register_cpu_backend_compiler();
  }
};

TEST_P(QuantCpuProgram, OneDelegateMatchesPortable) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(GetParam());

  // The partition: one cpu region holding every node, its blob ops 24, 23, 23, 23.
  compiler::ProgramGraph quantized = program;
  compiler::quantize_program(quantized, options.quantize);
  compiler::Graph& g = quantized.methods[0];
  compiler::partition(g, {"cpu"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size());
  const std::vector<uint8_t> blob =
      compiler::CpuBackendCompiler().lower(g, g.delegates[0]).blob;
  const std::vector<uint32_t> ops = blob_ops(blob);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), 24u), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), 23u), 3);

  options.backends = {"cpu"};
  const compiler::CompileResult cpu = compiler::compile_program(program, options);
  EXPECT_EQ(cpu.methods[0].num_delegates, 1u);
  options.backends.clear();
  const compiler::CompileResult portable = compiler::compile_program(program, options);
  EXPECT_EQ(portable.methods[0].num_delegates, 0u);

  const std::vector<int64_t> idx = {0, kVocab - 1, 7, 3, 7};
  const Outputs a = run(cpu.bytes, idx), b = run(portable.bytes, idx);
  ASSERT_EQ(a.error, Error::Ok) << a.message;
  ASSERT_EQ(b.error, Error::Ok) << b.message;
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_EQ(a.values[0], b.values[0]) << "the embedding gather is exact";
  double err = 0, ref = 0;
  for (size_t i = 0; i < b.values[1].size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a.values[1][i]) - b.values[1][i]));
    ref = std::max(ref, std::fabs(static_cast<double>(b.values[1][i])));
  }
  EXPECT_LE(err / ref, 1e-5) << GetParam();
  std::printf("%s: max relative error %.3g\n", GetParam(), err / ref);

  const Outputs bad = run(cpu.bytes, {0, 1, kVocab, 2, 3});
  EXPECT_EQ(bad.error, Error::InvalidArgument);
  EXPECT_NE(bad.message.find("index 37 at position 2"), std::string::npos) << bad.message;
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantCpuProgram,
                         ::testing::Values("nf4", "nf4:block=32:double", "nf4:block=256",
                                           "fp8_e4m3", "fp8_e4m3:per_tensor",
                                           "fp8_e4m3:block=16x32", "fp8_e5m2"));

TEST(QuantCpuCompile, NonFiniteFp8StaysPortable) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::Graph& g = program.methods[0];
  // f32 weights: the embedding (of the input ids: IndexRows since 2026-12-07) and the linears
  // are taken.
  EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes[0]), "");
  EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes[1]), "");
  compiler::QuantizeOptions q;
  q.scheme = compiler::parse_quant_scheme("fp8_e4m3");
  compiler::quantize_program(program, q);
  EXPECT_EQ(compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes[1]), "");
  compiler::Value& w = g.values[static_cast<size_t>(g.nodes[1].args[1])];
  w.data.mutable_vector()[3] = 0x7F;  // e4m3 NaN code
  EXPECT_NE(compiler::CpuBackendCompiler::unsupported_reason(g, g.nodes[1]).find("NaN"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::cpu_test
