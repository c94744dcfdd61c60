// docs/architecture.md's promise on the vulkan backend: Method::execute() makes no host
// allocation in tern's code and no Vulkan allocation at all (buffers, memory, descriptor sets,
// command buffers: counted by the backend's own wrappers). The driver's own work inside
// vkQueueSubmit/vkWaitForFences is bracketed by the backend's test hooks and reported apart
// (lavapipe may allocate there; that is the driver's, not tern's).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/backends/vulkan/vulkan_test_util.h"
#include "tests/support/allocation_counter.h"

namespace tern::vulkan_test {
namespace {

using testing_support::ArmedCounter;

std::atomic<long> g_driver_allocations{0};
std::atomic<long> g_before{0};
void enter() {
  g_before.store(g_allocations.load());
  g_armed.store(false);
}
void leave() {
  g_armed.store(true);
}

/// The program below, its delegate of `storage` (f16: the staging copies convert), executed
/// 50 times with no allocation.
void check_execute_allocates_nothing(uint32_t storage) {
  register_all();
  GraphBuilder b;  // conv -> relu -> pool -> mean -> linear -> softmax, one delegate
  const int x = b.input("x", DType::F32, {1, 3, 16, 16});
  const int w = b.constant_f32("w", {8, 3, 3, 3}, random_floats(216, 1, -0.3f, 0.3f));
  const int c = b.op("tern::conv2d", {x, w, b.none(), b.int_list({1}), b.int_list({1}),
                                      b.int_list({1}), b.int_value(1)}, DType::F32, {1, 8, 16, 16});
  const int r = b.op("tern::relu", {c}, DType::F32, {1, 8, 16, 16});
  const int p = b.op("tern::max_pool2d", {r, b.int_list({2}), b.int_list({2}), b.int_list({0}),
                                          b.int_list({1}), b.bool_value(false)},
                     DType::F32, {1, 8, 8, 8});
  const int m = b.op("tern::mean", {p, b.int_list({2, 3}), b.bool_value(false)}, DType::F32, {1, 8});
  const int fw = b.constant_f32("fw", {10, 8}, random_floats(80, 2));
  const int l = b.op("tern::linear", {m, fw, b.none()}, DType::F32, {1, 10});
  b.output(b.op("tern::softmax", {l, b.int_value(-1)}, DType::F32, {1, 10}));
  delegate_vulkan(b, 0, static_cast<int>(b.num_nodes()) - 1, storage);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);

  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  const VulkanObjectCounts before_load = vulkan_object_counts();
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  const VulkanObjectCounts after_load = vulkan_object_counts();
  // The counters see init's objects (arena, staging, weights + its upload buffer; sets).
  EXPECT_GE(after_load.buffers - before_load.buffers, 3u);
  EXPECT_GE(after_load.memory_allocations - before_load.memory_allocations, 3u);
  EXPECT_EQ(after_load.descriptor_sets - before_load.descriptor_sets, 6u);
  EXPECT_EQ(after_load.command_buffers - before_load.command_buffers, 1u);

  std::vector<int64_t> sizes{1, 3, 16, 16};
  std::vector<float> inputs[2] = {random_floats(768, 3), random_floats(768, 4)};
  const TensorView views[2] = {testing::f32_view(sizes, inputs[0]), testing::f32_view(sizes, inputs[1])};
  ASSERT_EQ(method->set_input(0, views[0]), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  set_vulkan_driver_call_hooks(enter, leave);
  long allocations;
  int ok_runs = 0;
  {
    ArmedCounter counter;
    for (int i = 0; i < 50; ++i) {
      if (method->set_input(0, views[i % 2]) != Error::Ok) break;
      if (method->execute() != Error::Ok) break;
      if (!method->output(0).ok()) break;
      ++ok_runs;
    }
    allocations = counter.count();
  }
  set_vulkan_driver_call_hooks(nullptr, nullptr);
  EXPECT_EQ(ok_runs, 50) << last_error_message();
  EXPECT_EQ(allocations, 0) << "host allocations by tern in 50 executions";
  const VulkanObjectCounts after_runs = vulkan_object_counts();
  EXPECT_EQ(after_runs.buffers, after_load.buffers);
  EXPECT_EQ(after_runs.memory_allocations, after_load.memory_allocations);
  EXPECT_EQ(after_runs.descriptor_sets, after_load.descriptor_sets);
  EXPECT_EQ(after_runs.command_buffers, after_load.command_buffers);
  std::printf("device: %s\n", vulkan_device_name());
}

TEST(VulkanZeroAlloc, ExecuteAllocatesNothing) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  check_execute_allocates_nothing(vulkan::kStorageF32);
}

TEST(VulkanZeroAlloc, ExecuteAllocatesNothingInF16Storage) {
  if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
  check_execute_allocates_nothing(vulkan::kStorageF16);
}

// Method::delegate_memory (what `tern bench` prints): linear_gelu_graph's delegate holds its
// weights (12 x 24 f32: 1152 bytes), the staging of its external values (x 4 x 24 and the
// output 4 x 12, f32: 576 bytes) and its arena, each rounded up by the driver; the fallback of
// a disabled backend holds nothing.
TEST(VulkanDeviceMemory, DelegateMemoryCountsWeightsStagingAndArena) {
  register_all();
  const compiler::Graph graph = linear_gelu_graph();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->num_delegates(), 1u);
  Result<DelegateMemory> m = method->delegate_memory(0);
  ASSERT_TRUE(m.ok()) << last_error_message();
  EXPECT_STREQ(m->backend, "vulkan");
  EXPECT_TRUE(m->on_backend);
  EXPECT_GE(m->device_bytes, 1152u + 576u);
  EXPECT_LT(m->device_bytes, 1u << 20);
  EXPECT_EQ(method->delegate_memory(1).error(), Error::InvalidArgument);

  const char* disabled[] = {"vulkan"};
  MethodLoadOptions options;
  options.disabled_backends = Span<const char* const>(disabled, 1);
  testing::MethodMemory memory2(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto fallback = lp.program().load_method("forward", memory2.manager(), options);
  ASSERT_TRUE(fallback.ok()) << last_error_message();
  Result<DelegateMemory> f = fallback->delegate_memory(0);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->on_backend);
  EXPECT_EQ(f->device_bytes, 0u);
}

}  // namespace
}  // namespace tern::vulkan_test
