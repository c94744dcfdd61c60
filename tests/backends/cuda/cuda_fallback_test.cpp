// The cuda backend end to end through the compiler and the executor: the partitioner gives
// each model one cuda region, and a program compiled with "cuda" runs everywhere. Without a
// GPU it takes the portable fallback (one log line with the reason) and its outputs equal the
// portable program's bit for bit; with a GPU it runs on the device and matches the portable
// outputs within f32 tolerance.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/core/platform.h"
#include "tests/backends/cuda/cuda_test_util.h"

namespace tern::cuda_test {
namespace {

std::vector<std::string>* g_log_lines = nullptr;

void capture_log(LogLevel, const char*, int, const char* message) {
  if (g_log_lines != nullptr) g_log_lines->push_back(message);
}

class CudaFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override { register_all(); }
};

struct Model {
  const char* name;
  GraphBuilder (*make)();
};
const Model kModels[] = {{"mlp", mlp_model},
                         {"gpt_block", gpt_block_model},
                         {"resnet_block", resnet_block_model}};

TEST_F(CudaFallbackTest, EachModelIsOneCudaRegion) {
  for (const Model& m : kModels) {
    compiler::ProgramGraph program;
    program.methods.push_back(m.make().build());
    compiler::CompileOptions options;
    options.backends = {"cuda"};
    const compiler::CompileResult r = compiler::compile_program(program, options);
    ASSERT_EQ(r.methods.size(), 1u);
    EXPECT_EQ(r.methods[0].num_delegates, 1u) << m.name;
  }
}

TEST_F(CudaFallbackTest, ElementwiseOnlyRegionsAreLeftToOthers) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {8});
  b.output(b.op("tern::relu", {b.op("tern::add", {x, x}, DType::F32, {8})}, DType::F32, {8}));
  compiler::ProgramGraph program;
  program.methods.push_back(b.build());
  compiler::CompileOptions options;
  options.backends = {"cuda"};
  EXPECT_EQ(compiler::compile_program(program, options).methods[0].num_delegates, 0u);
}

TEST_F(CudaFallbackTest, CudaProgramMatchesThePortableProgram) {
  for (const Model& m : kModels) {
    const compiler::Graph graph = m.make().build();
    const std::vector<std::vector<float>> inputs = random_inputs(graph, 42);
    const RunResult portable = run_program(compile_for(graph, {}), graph, inputs, false);
    std::vector<std::string> lines;
    g_log_lines = &lines;
    set_log_sink(capture_log);
    const RunResult cuda = run_program(compile_for(graph, {"cuda"}), graph, inputs, false, 2);
    set_log_sink(nullptr);
    g_log_lines = nullptr;
    ASSERT_EQ(cuda.paths.size(), 1u) << m.name;
    ASSERT_EQ(portable.outputs.size(), cuda.outputs.size()) << m.name;
    if (have_device()) {
      EXPECT_EQ(cuda.paths[0], DelegatePath::Backend) << m.name;
      for (size_t i = 0; i < cuda.outputs.size(); ++i) {
        EXPECT_LE(max_rel(cuda.outputs[i], portable.outputs[i]), 1e-4) << m.name;
        EXPECT_LE(nmse(cuda.outputs[i], portable.outputs[i]), 1e-9) << m.name;
      }
      continue;
    }
    EXPECT_EQ(cuda.paths[0], DelegatePath::Fallback) << m.name;
    for (size_t i = 0; i < cuda.outputs.size(); ++i) {
      EXPECT_EQ(cuda.outputs[i], portable.outputs[i]) << m.name << " output " << i;
    }
    // The executor's line names the delegate and the fallback; the backend's (logged once per
    // process, at the first probe) names why.
    bool fallback_line = false;
    for (const std::string& l : lines) {
      fallback_line |= l.find("backend 'cuda'") != std::string::npos &&
                       l.find("portable fallback") != std::string::npos;
    }
    EXPECT_TRUE(fallback_line) << m.name;
  }
  EXPECT_NE(std::string(cuda_unavailable_reason()).empty(), !have_device());
}

TEST_F(CudaFallbackTest, TheUnavailableReasonIsLoggedOnce) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  const std::string reason = cuda_unavailable_reason();
  EXPECT_TRUE(reason.find("no CUDA device") != std::string::npos ||
              reason.find("CUDA driver") != std::string::npos ||
              reason.find("CUDA unavailable") != std::string::npos)
      << reason;
  EXPECT_NE(reason.find("cudaGetDeviceCount"), std::string::npos) << reason;
}

TEST_F(CudaFallbackTest, DisablingCudaRunsTheFallbackToo) {
  const compiler::Graph graph = mlp_model().build();
  const std::vector<std::vector<float>> inputs = random_inputs(graph, 7);
  const RunResult portable = run_program(compile_for(graph, {}), graph, inputs, false);
  const RunResult disabled = run_program(compile_for(graph, {"cuda"}), graph, inputs, true);
  ASSERT_EQ(disabled.paths.size(), 1u);
  EXPECT_EQ(disabled.paths[0], DelegatePath::Fallback);
  EXPECT_EQ(disabled.outputs, portable.outputs);
}

}  // namespace
}  // namespace tern::cuda_test
