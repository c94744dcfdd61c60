// Quantized (nf4 / fp8) weights on the vulkan backend, against the portable kernels: a small
// MLP with an embedding, quantized by the compiler's pass for every scheme (NF4 blocks 32, 64,
// 128, double quantization over several absmax2 groups; FP8 e4m3 / e5m2 per tensor, per
// channel and 2-D tiles with partial tiles; odd element counts and partial blocks) and compiled
// with `backends = {"vulkan"}` as `tern compile --quantize S --backend vulkan` does: one vulkan
// delegate holding ops 14 (both the GEMV of one row and the tiled GEMM) and 15, whose outputs
// equal the same program's portable fallback (dequantize then the f32 op) within 1e-5
// relative; the embedding gather bit for bit. Also a quantized matmul b [K, N] (hand-written
// graph), the blob's quantized constant holding the program's bytes unchanged, and reader
// refusals of inconsistent quantized weights naming expected and found.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/vulkan/compile/register_vulkan_backend_compiler.h"
#include "backends/vulkan/runtime/blob_reader.h"
#include "tests/backends/vulkan/vulkan_test_util.h"
#include "tests/support/quant_mlp.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/partitioner.h"
#include "tools/compiler/quantize.h"

namespace tern::vulkan_test {
namespace {

// The shared model (tests/support/quant_mlp.h: shapes chosen for partial blocks and tiles).
constexpr int64_t kVocab = test_support::kQuantVocab, kDim = test_support::kQuantDim;

compiler::Graph mlp() {
  GraphBuilder g;
  test_support::add_quant_mlp(g);
  return g.build();
}

struct QuantRun {
  std::vector<std::vector<float>> outputs;
  std::vector<DelegatePath> paths;
  Error error = Error::Ok;
  std::string message;
};

QuantRun run(const std::vector<uint8_t>& pte, std::vector<int64_t> idx, std::vector<float> x1,
        bool disable) {
  QuantRun out;
  testing::LoadedProgram lp(pte);
  auto meta = lp.program().method_meta("forward");
  EXPECT_TRUE(meta.ok()) << last_error_message();
  testing::MethodMemory memory(*meta);
  const char* disabled[] = {"vulkan"};
  MethodLoadOptions options;
  if (disable) options.disabled_backends = Span<const char* const>(disabled, 1);
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return out;
  std::vector<int64_t> isizes = {static_cast<int64_t>(idx.size())};
  TensorView in;
  in.dtype = DType::I64;
  in.rank = 1;
  in.sizes = isizes.data();
  in.data = idx.data();
  in.nbytes = idx.size() * 8;
  EXPECT_EQ(method->set_input(0, in), Error::Ok) << last_error_message();
  std::vector<int64_t> xsizes = {1, kDim};
  EXPECT_EQ(method->set_input(1, testing::f32_view(xsizes, x1)), Error::Ok) << last_error_message();
  out.error = method->execute();
  if (out.error != Error::Ok) {
    out.message = last_error_message();
    return out;
  }
  for (size_t o = 0; o < method->num_outputs(); ++o) {
    auto t = method->output(o);
    EXPECT_TRUE(t.ok());
    out.outputs.push_back(testing::to_vector(**t));
  }
  for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
    out.paths.push_back(method->delegate_path(i).get());
  }
  return out;
}

/// max |a - b| / max |b|.
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  return ref == 0 ? err : err / ref;
}

class VulkanQuant : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    register_all();
    compiler::register_vulkan_backend_compiler();
  }
};

TEST_P(VulkanQuant, OneDelegateMatchesPortable) {
  compiler::ProgramGraph program;
  program.methods.push_back(mlp());
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(GetParam());

  // The partition: one vulkan region of every node, blob ops 15 and 14 (three times).
  compiler::ProgramGraph quantized = program;
  ASSERT_EQ(compiler::quantize_program(quantized, options.quantize).weights.size(), 3u);
  compiler::Graph& g = quantized.methods[0];
  compiler::partition(g, {"vulkan"});
  ASSERT_EQ(g.delegates.size(), 1u);
  EXPECT_EQ(g.delegates[0].nodes.size(), g.nodes.size());
  const std::vector<uint32_t> ops =
      blob_ops(compiler::VulkanBackendCompiler().lower(g, g.delegates[0]).blob);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), 15u), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), 14u), 3);

  options.backends = {"vulkan"};
  const compiler::CompileResult pte = compiler::compile_program(program, options);
  ASSERT_EQ(pte.methods[0].num_delegates, 1u);
  const std::vector<int64_t> idx = {0, kVocab - 1, 7, 150, 7};
  const std::vector<float> x1 = random_floats(kDim, 9);
  const QuantRun vk = run(pte.bytes, idx, x1, false);
  const QuantRun portable = run(pte.bytes, idx, x1, true);
  ASSERT_EQ(vk.error, Error::Ok) << vk.message;
  ASSERT_EQ(portable.error, Error::Ok) << portable.message;
  ASSERT_EQ(vk.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  ASSERT_EQ(vk.outputs.size(), 3u);
  EXPECT_EQ(vk.outputs[0], portable.outputs[0]) << "the embedding gather is bit-exact";
  const double gemm = rel_error(vk.outputs[1], portable.outputs[1]);
  const double gemv = rel_error(vk.outputs[2], portable.outputs[2]);
  EXPECT_TRUE(all_finite(vk.outputs[1]) && all_finite(vk.outputs[2]));
  EXPECT_LE(gemm, 1e-5) << GetParam();
  EXPECT_LE(gemv, 1e-5) << GetParam();
  std::printf("%s: max relative error gemm %.3g, gemv %.3g\n", GetParam(), gemm, gemv);

  const QuantRun bad = run(pte.bytes, {0, 1, kVocab, 2, 3}, x1, false);
  EXPECT_EQ(bad.error, Error::InvalidArgument);
  EXPECT_NE(bad.message.find("index 300 at position 2"), std::string::npos) << bad.message;
}

INSTANTIATE_TEST_SUITE_P(Schemes, VulkanQuant,
                         ::testing::Values("nf4:block=32", "nf4", "nf4:block=128",
                                           "nf4:block=32:double", "nf4:block=128:double",
                                           "fp8_e4m3", "fp8_e4m3:per_tensor",
                                           "fp8_e4m3:block=16x8", "fp8_e5m2",
                                           "fp8_e5m2:per_tensor", "fp8_e5m2:block=8x16"),
                         test_support::scheme_test_name);

/// matmul(a [2, 3, 24], b [24, 12]) with b quantized in its own [K, N] orientation (the pass
/// quantizes it as a linear weight, the graph then turns it back into a matmul), on the GEMM
/// (6 rows) and, for a [1, 24], the GEMV.
TEST(VulkanQuantMatmul, QuantizedBMatchesPortable) {
  register_all();
  compiler::register_vulkan_backend_compiler();
  for (const char* scheme : {"nf4:block=32", "nf4:block=64:double", "fp8_e4m3", "fp8_e5m2:block=8x8"}) {
    for (int64_t rows : {int64_t{1}, int64_t{6}}) {
      GraphBuilder g;
      const int a = g.input("a", DType::F32, {rows, 24});
      const int b = g.constant_f32("b", {24, 12}, random_floats(288, 31, -0.4f, 0.4f));
      g.output(g.op("tern::linear", {a, b, g.none()}, DType::F32, {rows, 12}));
      compiler::ProgramGraph holder;
      holder.methods.push_back(g.build());
      compiler::QuantizeOptions options;
      options.scheme = compiler::parse_quant_scheme(scheme);
      ASSERT_EQ(compiler::quantize_program(holder, options).weights.size(), 1u) << scheme;
      compiler::Graph& q = holder.methods[0];
      q.nodes[0].op = "tern::matmul";
      q.nodes[0].args.pop_back();
      compiler::CompileOptions compile;
      compile.backends = {"vulkan"};
      const compiler::CompileResult pte = compiler::compile_program(holder, compile);
      ASSERT_EQ(pte.methods[0].num_delegates, 1u) << scheme;
      const std::vector<float> x = random_floats(static_cast<size_t>(rows) * 24, 32);
      const RunResult vk = run_program(pte.bytes, q, {x}, false);
      const RunResult portable = run_program(pte.bytes, q, {x}, true);
      ASSERT_EQ(vk.paths, std::vector<DelegatePath>{DelegatePath::Backend});
      ASSERT_EQ(vk.outputs.size(), 1u);
      ASSERT_EQ(portable.outputs.size(), 1u);
      const double err = rel_error(vk.outputs[0], portable.outputs[0]);
      EXPECT_LE(err, 1e-5) << scheme << " rows " << rows;
      std::printf("matmul %s rows %lld: max relative error %.3g\n", scheme,
                  static_cast<long long>(rows), err);
    }
  }
}

}  // namespace
}  // namespace tern::vulkan_test
