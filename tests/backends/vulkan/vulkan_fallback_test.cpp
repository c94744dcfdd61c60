// A program exported for vulkan where no Vulkan device exists (ctest runs this binary with
// VK_ICD_FILENAMES pointing at a file that does not exist, and again with TERN_VULKAN_LOADER
// naming a loader library that does not exist): the backend says why it is not available, the method takes the portable fallback with one log line, and the outputs are the
// cpu-free portable program's, bit for bit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/backends/vulkan/vulkan_test_util.h"

namespace tern::vulkan_test {
namespace {

TEST(VulkanFallback, NoDeviceRunsThePortableFallback) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_vulkan_backend(), Error::Ok);
  EXPECT_FALSE(vulkan_backend_interface().is_available());
  const std::string why = vulkan_unavailable_reason();
  std::printf("vulkan unavailable: %s\n", why.c_str());
  EXPECT_NE(why.find("Vulkan"), std::string::npos) << why;
  EXPECT_TRUE(why.find("driver") != std::string::npos || why.find("device") != std::string::npos ||
              why.find("loader") != std::string::npos) << why;
  // ctest runs this binary twice: without an ICD (no driver) and without the loader.
  const char* expected = std::getenv("TERN_TEST_EXPECT_REASON");
  if (expected != nullptr) {
    EXPECT_NE(why.find(expected), std::string::npos) << why;
  }

  const compiler::Graph graph = linear_gelu_graph();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  const std::vector<std::vector<float>> inputs{random_floats(96, 2)};
  const RunResult got = run_program(pte, graph, inputs, /*disable=*/false);
  const RunResult portable = run_program(pte, graph, inputs, /*disable=*/true);
  ASSERT_EQ(got.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_EQ(got.outputs, portable.outputs);
}

}  // namespace
}  // namespace tern::vulkan_test
