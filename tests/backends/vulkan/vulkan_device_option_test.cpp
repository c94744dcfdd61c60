// Choosing the Vulkan device at load (MethodLoadOptions::backend_options {"vulkan", "device",
// ...}): by index and by part of its name the delegate runs on that device with the portable
// program's outputs; a device that does not exist makes the delegate take its portable
// fallback with one log line that lists the devices there are; a key the vulkan backend does
// not know is a load error naming the keys it takes. Runs on lavapipe in CI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/platform.h"
#include "tests/backends/vulkan/vulkan_test_util.h"

namespace tern::vulkan_test {
namespace {

std::vector<std::string>* g_log_lines = nullptr;

void capture_log(LogLevel, const char*, int, const char* message) {
  if (g_log_lines != nullptr) g_log_lines->push_back(message);
}

struct Fixture {
  compiler::Graph graph;
  std::vector<uint8_t> pte;
  std::vector<std::vector<float>> inputs;
};

Fixture linear_gelu() {
  Fixture f;
  f.graph = linear_gelu_graph();
  f.pte = testing::compile_graph(f.graph);
  f.inputs = {random_floats(96, 2)};
  return f;
}

void expect_close(const RunResult& got, const RunResult& want) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    ASSERT_EQ(got.outputs[i].size(), want.outputs[i].size());
    for (size_t k = 0; k < got.outputs[i].size(); ++k) {
      EXPECT_NEAR(got.outputs[i][k], want.outputs[i][k], 1e-5) << "output " << i << " [" << k << "]";
    }
  }
}

TEST(VulkanDeviceOption, ByIndexAndByNameRunsOnThatDevice) {
  register_all();
  const Fixture f = linear_gelu();
  const RunResult portable = run_program(f.pte, f.graph, f.inputs, /*disable=*/true);
  const std::string name = vulkan_device_name();
  ASSERT_FALSE(name.empty());
  // Part of the default device's name (lavapipe: "llvmpipe (LLVM ...)"), and index 0 (CI has
  // one device; on a machine with several, index 0 is a device too).
  const std::string part = name.substr(0, name.size() < 6 ? name.size() : 6);
  for (const char* wanted : {"0", part.c_str()}) {
    SCOPED_TRACE(wanted);
    const RunResult got = run_program(f.pte, f.graph, f.inputs, false, 1,
                                      {{"vulkan", "device", wanted}});
    ASSERT_EQ(got.paths, std::vector<DelegatePath>{DelegatePath::Backend});
    expect_close(got, portable);
  }
}

TEST(VulkanDeviceOption, AMissingDeviceTakesTheFallbackAndListsTheDevices) {
  register_all();
  const Fixture f = linear_gelu();
  const RunResult portable = run_program(f.pte, f.graph, f.inputs, /*disable=*/true);
  for (const char* wanted : {"99", "no such gpu"}) {
    SCOPED_TRACE(wanted);
    std::vector<std::string> lines;
    g_log_lines = &lines;
    set_log_sink(capture_log);
    const RunResult got = run_program(f.pte, f.graph, f.inputs, false, 1,
                                      {{"vulkan", "device", wanted}, {"cpu", "other", "x"}});
    set_log_sink(nullptr);
    g_log_lines = nullptr;
    ASSERT_EQ(got.paths, std::vector<DelegatePath>{DelegatePath::Fallback});
    EXPECT_EQ(got.outputs, portable.outputs);
    int fallback_lines = 0;
    for (const std::string& l : lines) {
      if (l.find("backend 'vulkan'") == std::string::npos) continue;
      ++fallback_lines;
      EXPECT_NE(l.find(std::string("no Vulkan device matches device='") + wanted + "'"),
                std::string::npos) << l;
      EXPECT_NE(l.find("(devices: 0 '" + std::string(vulkan_device_name())), std::string::npos)
          << l;
      EXPECT_NE(l.find("portable fallback"), std::string::npos) << l;
    }
    EXPECT_EQ(fallback_lines, 1);
  }
}

TEST(VulkanDeviceOption, AnUnknownKeyIsALoadError) {
  register_all();
  const Fixture f = linear_gelu();
  testing::LoadedProgram lp(f.pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  const BackendOption options[] = {{"vulkan", "devcie", "0"}};
  MethodLoadOptions load;
  load.backend_options = Span<const BackendOption>(options, 1);
  auto method = lp.program().load_method("forward", memory.manager(), load);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("unknown load option 'devcie'"), std::string::npos) << message;
  EXPECT_NE(message.find("device=<index or part of a device name>"), std::string::npos) << message;
}

}  // namespace
}  // namespace tern::vulkan_test
