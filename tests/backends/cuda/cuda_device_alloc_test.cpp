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

// Method::delegate_memory (what `tern bench` prints): the bytes the delegate reports are the
// bytes its load took from the allocator, every one of them (16-bit blobs too: their f32
// staging buffer is freed again at prepare), and the fallback of a disabled backend holds none.
TEST(CudaDeviceAllocTest, DelegateMemoryIsWhatTheLoadAllocated) {
  register_all();
  TERN_SKIP_WITHOUT_CUDA_DEVICE();
  for (const char* spec : {"cuda", "cuda:f16"}) {
    for (auto make : {mlp_model, gpt_block_model, resnet_block_model}) {
      const compiler::Graph graph = make().build();
      testing::LoadedProgram lp(compile_for(graph, {spec}));
      testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
      const uint64_t before = cuda_device_live_bytes();
      auto method = lp.program().load_method("forward", memory.manager(), MethodLoadOptions());
      ASSERT_TRUE(method.ok()) << last_error_message();
      const uint64_t taken = cuda_device_live_bytes() - before;
      ASSERT_EQ(method->num_delegates(), 1u);
      Result<DelegateMemory> m = method->delegate_memory(0);
      ASSERT_TRUE(m.ok()) << last_error_message();
      EXPECT_STREQ(m->backend, "cuda");
      EXPECT_TRUE(m->on_backend);
      EXPECT_GT(m->device_bytes, 0u);
      EXPECT_EQ(m->device_bytes, taken) << spec;
      EXPECT_EQ(method->delegate_memory(1).error(), Error::InvalidArgument);

      const char* disabled[] = {"cuda"};
      MethodLoadOptions options;
      options.disabled_backends = Span<const char* const>(disabled, 1);
      testing::MethodMemory memory2(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
      auto fallback = lp.program().load_method("forward", memory2.manager(), options);
      ASSERT_TRUE(fallback.ok()) << last_error_message();
      EXPECT_FALSE(fallback->delegate_memory(0)->on_backend);
      EXPECT_EQ(fallback->delegate_memory(0)->device_bytes, 0u);
    }
  }
}

}  // namespace
}  // namespace tern::cuda_test
