// No device allocation during execute: every device allocation of the cuda backend goes
// through its DeviceAllocator, whose count must not move across executions (host allocations
// are covered by the executor's allocation-counting tests). Needs a CUDA device.
#include <gtest/gtest.h>

#include "tests/backends/cuda/cuda_test_util.h"

namespace tern::cuda_test {
namespace {

TEST(CudaDeviceAllocTest, ExecuteAllocatesNoDeviceMemory) {
  register_all();
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  for (auto make : {mlp_model, gpt_block_model, resnet_block_model}) {
    const compiler::Graph graph = make().build();
    testing::LoadedProgram lp(compile_for(graph, {"cuda"}));
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
    auto method = lp.program().load_method("forward", memory.manager(), MethodLoadOptions());
    ASSERT_TRUE(method.ok()) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    std::vector<std::vector<float>> inputs = random_inputs(graph, 3);
    std::vector<std::vector<int64_t>> sizes;
    for (int id : graph.inputs) sizes.push_back(graph.values[static_cast<size_t>(id)].sizes);
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_EQ(method->set_input(i, testing::f32_view(sizes[i], inputs[i])), Error::Ok);
    }
    const uint64_t before = cuda_device_allocation_count();
    EXPECT_GT(before, 0u);
    for (int r = 0; r < 5; ++r) ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    EXPECT_EQ(cuda_device_allocation_count(), before);
  }
}

}  // namespace
}  // namespace tern::cuda_test
