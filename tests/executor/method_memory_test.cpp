// MethodMemory (runtime/extension/method_memory.h): buffers sized from MethodMeta, a method
// loads and runs in them, custom allocators, and errors that name the buffer.
#include "runtime/extension/method_memory.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/exact_memory.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;
using testing::LoadedProgram;
using testing_support::CountingAllocator;

/// forward(x: f32[2, 3]) = relu(x * w), w = [1, -1, 2, -2, 0.5, 3]; portable kernels
/// registered.
LoadedProgram mul_relu_program() {
  EXPECT_EQ(register_portable_kernels(), Error::Ok);
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2, 3});
  const int w = b.constant_f32("w", {2, 3}, {1.0f, -1.0f, 2.0f, -2.0f, 0.5f, 3.0f});
  const int y = b.op("tern::relu", {b.op("tern::mul", {x, w}, DType::F32, {2, 3}, "mul0")},
                     DType::F32, {2, 3}, "relu0");
  b.output(y);
  return LoadedProgram(testing::compile_graph(b.build()));
}

std::string message() { return last_error_message(); }

bool aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(MethodMemory, ExactSizesMatchMethodMeta) {
  const LoadedProgram lp = mul_relu_program();
  const MethodMeta meta = lp.program().method_meta("forward").get();
  ASSERT_GE(meta.num_arenas(), 1u);
  MethodMemoryOptions options;
  options.exact = true;
  MethodMemory memory;
  ASSERT_EQ(memory.allocate(meta, options), Error::Ok) << message();

  EXPECT_EQ(memory.sizes().method_bytes, meta.method_allocator_bytes());
  EXPECT_EQ(memory.sizes().temp_bytes, meta.temp_allocator_bytes());
  EXPECT_EQ(memory.method_allocator().size(), meta.method_allocator_bytes());
  EXPECT_EQ(memory.temp_allocator().size(), meta.temp_allocator_bytes());
  ASSERT_EQ(memory.arenas().size(), meta.num_arenas());
  ASSERT_EQ(memory.sizes().arenas.size(), meta.num_arenas());
  for (size_t a = 0; a < meta.num_arenas(); ++a) {
    const uint64_t planned = meta.arena_size(a).get();
    const uint32_t alignment = meta.arena_alignment(a).get();
    EXPECT_EQ(memory.arenas()[a].size(), planned) << "arena " << a;
    EXPECT_EQ(memory.sizes().arenas[a], planned) << "arena " << a;
    EXPECT_TRUE(aligned(memory.arenas()[a].data(), alignment < 64 ? 64 : alignment))
        << "arena " << a;
  }
  EXPECT_TRUE(aligned(memory.method_allocator().base(), 64));
  EXPECT_TRUE(aligned(memory.temp_allocator().base(), 64));

  MemoryManager* manager = memory.manager();
  EXPECT_EQ(manager->method_allocator, &memory.method_allocator());
  EXPECT_EQ(manager->temp_allocator, &memory.temp_allocator());
  ASSERT_NE(manager->planned_memory, nullptr);
  ASSERT_EQ(manager->planned_memory->num_arenas(), meta.num_arenas());
  for (uint32_t a = 0; a < meta.num_arenas(); ++a) {
    EXPECT_EQ(manager->planned_memory->arena(a).data(), memory.arenas()[a].data());
    EXPECT_EQ(manager->planned_memory->arena(a).size(), memory.arenas()[a].size());
  }
}

TEST(MethodMemory, OptionsAddBackendBytesAndATempFloor) {
  const LoadedProgram lp = mul_relu_program();
  const MethodMeta meta = lp.program().method_meta("forward").get();
  MethodMemoryOptions options;
  options.extra_method_bytes = 3 * 4096;
  options.min_temp_bytes = meta.temp_allocator_bytes() + 4096;
  options.alignment = 256;
  MethodMemory memory;
  ASSERT_EQ(memory.allocate(meta, options), Error::Ok) << message();
  EXPECT_EQ(memory.method_allocator().size(), meta.method_allocator_bytes() + 3 * 4096);
  EXPECT_EQ(memory.temp_allocator().size(), meta.temp_allocator_bytes() + 4096);
  EXPECT_TRUE(aligned(memory.method_allocator().base(), 256));
  EXPECT_TRUE(aligned(memory.temp_allocator().base(), 256));
  for (size_t a = 0; a < meta.num_arenas(); ++a) {
    EXPECT_EQ(memory.arenas()[a].size(), meta.arena_size(a).get()) << "arena " << a;
    EXPECT_TRUE(aligned(memory.arenas()[a].data(), 256)) << "arena " << a;
  }
}

TEST(MethodMemory, MethodLoadsAndRunsInIt) {
  const LoadedProgram lp = mul_relu_program();
  const MethodMeta meta = lp.program().method_meta("forward").get();
  for (bool exact : {false, true}) {
    SCOPED_TRACE(exact ? "exact" : "rounded");
    MethodMemoryOptions options;
    options.exact = exact;
    BasicMethodMemory<CountingAllocator> memory;
    ASSERT_EQ(memory.allocate(meta, options), Error::Ok) << message();
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << message();
    EXPECT_GT(memory.method_allocator().calls(), 0) << "load did not use the method allocator";
    const long calls_after_load = memory.method_allocator().calls();

    std::vector<int64_t> sizes = {2, 3};
    std::vector<float> x = {0.5f, 1.0f, -5.0f, 10.0f, 4.0f, -1.0f};
    ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok) << message();
    ASSERT_EQ(method->execute(), Error::Ok) << message();
    auto out = method->output(0);
    ASSERT_TRUE(out.ok()) << message();
    // relu(x * w) by hand: [0.5, -1 -> 0, -10 -> 0, -20 -> 0, 2, -3 -> 0].
    EXPECT_EQ(testing::to_vector(**out), (std::vector<float>{0.5f, 0.0f, 0.0f, 0.0f, 2.0f, 0.0f}));
    EXPECT_EQ(memory.method_allocator().calls(), calls_after_load)
        << "execute() asked the method allocator for memory";
  }
}

TEST(MethodMemory, ImpossibleSizesFailNamingTheBuffer) {
  const LoadedProgram lp = mul_relu_program();
  const MethodMeta meta = lp.program().method_meta("forward").get();
  const uint64_t huge = static_cast<uint64_t>(PTRDIFF_MAX) + 1;
  {  // the method allocator's buffer
    MethodMemoryOptions options;
    options.extra_method_bytes = huge;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(meta, options), Error::MemoryAllocationFailed);
    const std::string expected = "method allocator buffer of " +
                                 std::to_string(meta.method_allocator_bytes() + huge) + " bytes";
    EXPECT_NE(message().find(expected), std::string::npos) << message();
    // Nothing allocated, the manager still empty.
    EXPECT_EQ(memory.manager()->method_allocator, nullptr);
    EXPECT_EQ(memory.manager()->planned_memory, nullptr);
    EXPECT_EQ(memory.arenas().size(), 0u);
  }
  {  // an arena
    MethodMemorySizes sizes = MethodMemorySizes::planned(meta).get();
    ASSERT_GE(sizes.arenas.size(), 1u);
    sizes.arenas.back() = huge;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(sizes), Error::MemoryAllocationFailed);
    const std::string expected =
        "arena " + std::to_string(sizes.arenas.size() - 1) + ": " + std::to_string(huge) + " bytes";
    EXPECT_NE(message().find(expected), std::string::npos) << message();
  }
  {  // the temp allocator's buffer
    MethodMemoryOptions options;
    options.min_temp_bytes = huge;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(meta, options), Error::MemoryAllocationFailed);
    const std::string expected = "temp allocator buffer of " + std::to_string(huge) + " bytes";
    EXPECT_NE(message().find(expected), std::string::npos) << message();
  }
  {  // a size that overflows
    MethodMemoryOptions options;
    options.extra_method_bytes = UINT64_MAX;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(meta, options), Error::MemoryAllocationFailed);
    EXPECT_NE(message().find("method allocator buffer"), std::string::npos) << message();
    EXPECT_NE(message().find("overflow"), std::string::npos) << message();
  }
}

TEST(MethodMemory, BadArgumentsAndASecondAllocateFail) {
  const LoadedProgram lp = mul_relu_program();
  const MethodMeta meta = lp.program().method_meta("forward").get();
  {
    MethodMemorySizes sizes = MethodMemorySizes::planned(meta).get();
    ASSERT_GE(sizes.alignments.size(), 1u);
    sizes.alignments[0] = 48;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(sizes), Error::InvalidProgram);
    EXPECT_NE(message().find("arena 0 alignment 48 is not a power of two"), std::string::npos)
        << message();
  }
  {
    MethodMemorySizes sizes = MethodMemorySizes::planned(meta).get();
    sizes.alignments.push_back(64);
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(sizes), Error::InvalidArgument);
  }
  {
    MethodMemoryOptions options;
    options.alignment = 96;
    MethodMemory memory;
    EXPECT_EQ(memory.allocate(meta, options), Error::InvalidArgument);
    EXPECT_NE(message().find("96"), std::string::npos) << message();
  }
  {
    MethodMemory memory;
    ASSERT_EQ(memory.allocate(meta), Error::Ok) << message();
    EXPECT_EQ(memory.allocate(meta), Error::InvalidState);
    EXPECT_NE(message().find("already allocated"), std::string::npos) << message();
  }
}

TEST(HeapBlock, ExactAndRoundedBlocks) {
  HeapBlock exact = allocate_heap_block(10, 128, /*exact=*/true);
  ASSERT_TRUE(exact != nullptr);
  EXPECT_TRUE(aligned(exact.get(), 128));
  HeapBlock empty = allocate_heap_block(0, 64, /*exact=*/false);
  EXPECT_TRUE(empty != nullptr);
  EXPECT_TRUE(allocate_heap_block(10, 48, false) == nullptr);
  EXPECT_TRUE(allocate_heap_block(UINT64_MAX, 64, true) == nullptr);
  EXPECT_TRUE(allocate_heap_block(UINT64_MAX - 1, 64, false) == nullptr);
}

}  // namespace
}  // namespace tern
