// Subnormal floats inside the cpu delegate are flushed to zero, as XNNPACK's operators flush
// theirs (backends/cpu/runtime/flush_denormals.h, kernels/pool_flags.h): tern's own GEMM and 3-D
// conv, on the caller's thread alone and on a pool of two, turn subnormal inputs into exact
// zeros, where the portable kernels (the fallback) keep the subnormal results; the caller's
// floating-point state is what it was after each execute.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/flush_denormals.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr float kSubnormal = 1e-39f;  // below FLT_MIN (1.18e-38)

/// x [1, 64, 64] · I (tern's packed GEMM: more than 2^17 multiply-adds).
compiler::Graph identity_linear() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 64, 64});
  std::vector<float> eye(64 * 64, 0.0f);
  for (int i = 0; i < 64; ++i) eye[static_cast<size_t>(i * 64 + i)] = 1.0f;
  const int w = b.constant_f32("w", {64, 64}, eye);
  b.output(b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 64, 64}));
  delegate_cpu(b, 0, 0);
  return b.build();
}

/// A 1x1x1 conv3d of x [1, 8, 4, 8, 8] by the identity (op 33).
compiler::Graph identity_conv3d() {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 8, 4, 8, 8});
  std::vector<float> eye(8 * 8, 0.0f);
  for (int i = 0; i < 8; ++i) eye[static_cast<size_t>(i * 8 + i)] = 1.0f;
  const int w = b.constant_f32("w", {8, 8, 1, 1, 1}, eye);
  b.output(b.op("tern::conv3d",
                {x, w, b.none(), b.int_list({1, 1, 1}), b.int_list({0, 0, 0}),
                 b.int_list({1, 1, 1}), b.int_value(1)},
                DType::F32, {1, 8, 4, 8, 8}));
  delegate_cpu(b, 0, 0);
  return b.build();
}

void expect_flushed(const compiler::Graph& graph, size_t numel, cpu::NodeOp op) {
  ASSERT_EQ(count_op(graph.delegates.at(0).blob, op), 1u);
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  const std::vector<std::vector<float>> inputs = {std::vector<float>(numel, kSubnormal)};
  const bool before = cpu::flushing_denormals();
  for (uint32_t threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    const RunResult delegated = run_program(pte, graph, inputs, false, 2, threads);
    ASSERT_EQ(delegated.paths, std::vector<DelegatePath>{DelegatePath::Backend});
    size_t zeros = 0;
    for (float v : delegated.outputs.at(0)) zeros += v == 0.0f ? 1 : 0;
    EXPECT_EQ(zeros, numel);
    EXPECT_EQ(cpu::flushing_denormals(), before);  // the caller's state restored
  }
  const RunResult portable = run_program(pte, graph, inputs, true);
  ASSERT_EQ(portable.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  size_t kept = 0;
  for (float v : portable.outputs.at(0)) kept += v == kSubnormal ? 1 : 0;
  EXPECT_EQ(kept, numel);
}

TEST(CpuDenormals, FlushedInsideTheDelegateGemm) {
  register_all();
  expect_flushed(identity_linear(), 64 * 64, cpu::NodeOp::PackedFullyConnected);
}

TEST(CpuDenormals, FlushedInsideTheDelegateConv3d) {
  register_all();
  expect_flushed(identity_conv3d(), 8 * 4 * 8 * 8, cpu::NodeOp::PackedConv3d);
}

TEST(CpuDenormals, ScopeSetsAndRestoresTheThreadState) {
#if !(defined(__x86_64__) || defined(__SSE__) || defined(__aarch64__))
  GTEST_SKIP() << "no flush-to-zero control on this architecture";
#endif
  const bool before = cpu::flushing_denormals();
  {
    const cpu::ScopedFlushDenormals flush;
    EXPECT_TRUE(cpu::flushing_denormals());
    volatile float tiny = kSubnormal;
    volatile float one = 1.0f;
    EXPECT_EQ(tiny * one, 0.0f);  // DAZ / FZ: a subnormal operand reads as zero
  }
  EXPECT_EQ(cpu::flushing_denormals(), before);
}

}  // namespace
}  // namespace tern::cpu_test
