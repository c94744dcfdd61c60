// Proves docs/architecture.md's promise: Method::execute() (with set_input and output) never allocates
// on the heap. This binary replaces malloc & co. and operator new/delete with counting
// versions that forward to glibc's __libc_* allocator.
#include <gtest/gtest.h>

#include "tests/support/temp_path.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/extension/method_memory.h"
#include "runtime/extension/module.h"
#include "runtime/extension/token_generator.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/step_program.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;
using testing::TestBackend;

TestBackend g_backend;

using testing_support::ArmedCounter;

std::vector<float> ramp(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

/// x[1, 8] -> linear(w1, b1) -> relu (delegated to "test") -> linear(w2) -> add x -> mul
/// itself -> reshape [2, 4]; plus a state accumulator acc += x.
std::vector<uint8_t> busy_program() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 8});
  const int w1 = b.constant_f32("w1", {16, 8}, ramp(128, -1.0f, 1.0f / 64));
  const int b1 = b.constant_f32("b1", {16}, ramp(16, -0.5f, 1.0f / 16));
  const int w2 = b.constant_f32("w2", {8, 16}, ramp(128, 0.75f, -1.0f / 96));
  const int acc = b.state("acc", DType::F32, {1, 8});
  const int h = b.op("tern::linear", {x, w1, b1}, DType::F32, {1, 16}, "fc1");
  const int r = b.op("tern::relu", {h}, DType::F32, {1, 16}, "act");
  b.delegate("test", 1, 1, testing::ascii("relu"));
  const int y = b.op("tern::linear", {r, w2, b.none()}, DType::F32, {1, 8}, "fc2");
  const int z = b.op("tern::add", {y, x}, DType::F32, {1, 8}, "residual");
  const int m = b.op("tern::mul", {z, z}, DType::F32, {1, 8}, "square");
  const int out = b.op("tern::reshape", {m, b.int_list({2, 4})}, DType::F32, {2, 4}, "fold");
  b.op_into("tern::add", {acc, x}, {acc}, "accumulate");
  b.output(out);
  b.output(acc);
  return testing::compile_graph(b.build());
}

class ZeroAllocTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TERN_ZERO_ALLOC_HOOKS) GTEST_SKIP() << "allocation hooks are off under sanitizers";
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    clear_backend_registry_for_testing();
    Backend entry;
    entry.name = "test";
    entry.backend = &g_backend;
    ASSERT_EQ(register_backend(entry), Error::Ok);
    g_backend.execute_calls = 0;
  }
  void TearDown() override { clear_backend_registry_for_testing(); }
};

TEST_F(ZeroAllocTest, CounterCountsDeliberateAllocations) {
  void* (*volatile allocate)(size_t) = std::malloc;
  void (*volatile release)(void*) = std::free;
  long counted;
  {
    ArmedCounter counter;
    void* p = allocate(16);
    counted = counter.count();
    release(p);
  }
  EXPECT_EQ(counted, 1);
  {
    ArmedCounter counter;
    std::string* s = new std::string("a string long enough to need the heap, surely");
    counted = counter.count();
    delete s;
  }
  EXPECT_GE(counted, 1);
}

TEST_F(ZeroAllocTest, ExecuteSetInputOutputNeverAllocate) {
  testing::LoadedProgram lp(busy_program());
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
  ASSERT_GE(method->num_steps(), 6u);

  std::vector<int64_t> sizes = {1, 8};
  std::vector<float> inputs[2] = {ramp(8, -1.0f, 0.25f), ramp(8, 2.0f, -0.5f)};
  TensorView views[2] = {f32_view(sizes, inputs[0]), f32_view(sizes, inputs[1])};
  float checksum = 0;
  long allocations;
  {
    ArmedCounter counter;
    for (int i = 0; i < 100; ++i) {
      if (method->set_input(0, views[i % 2]) != Error::Ok) break;
      if (method->execute() != Error::Ok) break;
      auto out = method->output(0);
      if (!out.ok()) break;
      checksum += static_cast<const float*>(out.get()->data)[0];
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0) << "heap allocations during 100 set_input/execute/output rounds";
  EXPECT_EQ(g_backend.execute_calls, 100);
  EXPECT_EQ(std::string(last_error_message()), "");
  // The accumulator saw 50 of each input: acc[0] = 50 * (-1) + 50 * 2.
  auto acc = method->output(1);
  ASSERT_TRUE(acc.ok());
  EXPECT_FLOAT_EQ(static_cast<const float*>(acc.get()->data)[0], 50.0f);
  (void)checksum;
}

/// x [1, seq<=16, 8] (dynamic, docs/dynamic-shapes.md) -> linear -> silu -> view [seq, 8]
/// through an int list that follows seq -> + itself.
std::vector<uint8_t> dynamic_program() {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 16);
  const int x = b.input("x", DType::F32, {1, 16, 8});
  b.dynamic_dims(x, {-1, seq, -1});
  const int w = b.constant_f32("w", {8, 8}, ramp(64, -1.0f, 1.0f / 32));
  const int h = b.op("tern::linear", {x, w, b.none()}, DType::F32, {1, 16, 8}, "fc");
  b.dynamic_dims(h, {-1, seq, -1});
  const int a = b.op("tern::silu", {h}, DType::F32, {1, 16, 8}, "act");
  b.dynamic_dims(a, {-1, seq, -1});
  const int shape = b.int_list({16, 8});
  b.int_symbols(shape, {seq, -1});
  const int v = b.op("tern::view", {a, shape}, DType::F32, {16, 8}, "flat");
  b.dynamic_dims(v, {seq, -1});
  const int y = b.op("tern::add", {v, v}, DType::F32, {16, 8}, "double");
  b.dynamic_dims(y, {seq, -1});
  b.output(y);
  return testing::compile_graph(b.build());
}

TEST_F(ZeroAllocTest, DynamicMethodAtTwoSizesNeverAllocates) {
  testing::LoadedProgram lp(dynamic_program());
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<int64_t> sizes[2] = {{1, 3, 8}, {1, 11, 8}};
  std::vector<float> inputs[2] = {ramp(24, -1.0f, 0.125f), ramp(88, 2.0f, -0.05f)};
  TensorView views[2] = {f32_view(sizes[0], inputs[0]), f32_view(sizes[1], inputs[1])};
  int64_t rows[2] = {0, 0};
  long allocations;
  {
    ArmedCounter counter;
    for (int i = 0; i < 100; ++i) {
      if (method->set_input(0, views[i % 2]) != Error::Ok) break;
      if (method->execute() != Error::Ok) break;
      auto out = method->output(0);
      if (!out.ok()) break;
      rows[i % 2] = out.get()->sizes[0];
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0) << "heap allocations during 100 dynamic set_input/execute rounds";
  EXPECT_EQ(std::string(last_error_message()), "");
  EXPECT_EQ(rows[0], 3);
  EXPECT_EQ(rows[1], 11);
}

TEST_F(ZeroAllocTest, ModuleMethodExecuteNeverAllocates) {
  const std::vector<uint8_t> bytes = busy_program();
  const std::string path = tern::testing_support::unique_temp_path("zero_alloc_test", ".pte");
  compiler::write_file(path, bytes);
  Module module;
  ASSERT_EQ(module.load(path.c_str()), Error::Ok) << last_error_message();
  auto method = module.method("forward");
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<int64_t> sizes = {1, 8};
  std::vector<float> input = ramp(8, 0.5f, 0.125f);
  const TensorView view = f32_view(sizes, input);
  long allocations;
  {
    ArmedCounter counter;
    for (int i = 0; i < 100; ++i) {
      if ((*method)->set_input(0, view) != Error::Ok) break;
      if ((*method)->execute() != Error::Ok) break;
      if (!(*method)->output(0).ok()) break;
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(g_backend.execute_calls, 100);
  std::remove(path.c_str());
}

// Issue 15: a decode loop allocates nothing per step. TokenGenerator sizes its scratch at
// create() and the output vector's capacity once; a second generate() with the same vector
// (greedy and sampled) allocates nothing at all.
TEST_F(ZeroAllocTest, TokenGenerationNeverAllocates) {
  testing::LoadedProgram lp(testing_support::counting_step_program(16));
  testing::MethodMemory memory(lp.program().method_meta("decode").get());
  auto method = lp.program().load_method("decode", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  auto generator = TokenGenerator::create(&method.get());
  ASSERT_TRUE(generator.ok()) << last_error_message();
  const std::vector<int64_t> prompt = {1, 2, 3};
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions greedy;
  greedy.max_new_tokens = 24;
  ASSERT_EQ(generator->generate(Span<const int64_t>(prompt.data(), 3), greedy, &out, &stats),
            Error::Ok);
  GenerationOptions sampled = greedy;
  sampled.sampling.temperature = 0.7f;
  sampled.sampling.top_k = 5;
  sampled.sampling.top_p = 0.9f;
  long allocations;
  Error greedy_status, sampled_status;
  {
    ArmedCounter counter;
    greedy_status = generator->generate(Span<const int64_t>(prompt.data(), 3), greedy, &out, &stats);
    sampled_status =
        generator->generate(Span<const int64_t>(prompt.data(), 3), sampled, &out, &stats);
    allocations = counter.count();
  }
  EXPECT_EQ(greedy_status, Error::Ok);
  EXPECT_EQ(sampled_status, Error::Ok);
  EXPECT_EQ(stats.generated_tokens, 24u);
  EXPECT_EQ(allocations, 0) << "heap allocations during two 24-token generations";
}

// With a prefill method (export_llm's two methods over one shared KV cache), the prompt's
// chunks allocate nothing either: their inputs are built in scratch sized at create().
TEST_F(ZeroAllocTest, PrefillThenDecodeNeverAllocates) {
  testing::LoadedProgram lp(testing_support::counting_llm_program(16, 4, 64));
  SharedStateBuffer shared;
  ASSERT_EQ(shared.allocate(lp.program()), Error::Ok) << last_error_message();
  testing::MethodMemory prefill_memory(lp.program().method_meta("prefill").get());
  testing::MethodMemory decode_memory(lp.program().method_meta("decode").get());
  prefill_memory.manager()->shared_state = shared.span();
  decode_memory.manager()->shared_state = shared.span();
  auto prefill = lp.program().load_method("prefill", prefill_memory.manager());
  auto decode = lp.program().load_method("decode", decode_memory.manager());
  ASSERT_TRUE(prefill.ok() && decode.ok()) << last_error_message();
  auto generator = TokenGenerator::create(&decode.get(), &prefill.get());
  ASSERT_TRUE(generator.ok()) << last_error_message();
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // chunks 4, 4, 2
  std::vector<int64_t> out;
  GenerationStats stats;
  GenerationOptions greedy;
  greedy.max_new_tokens = 24;
  ASSERT_EQ(generator->generate(Span<const int64_t>(prompt.data(), 10), greedy, &out, &stats),
            Error::Ok);
  long allocations;
  Error status;
  {
    ArmedCounter counter;
    status = generator->generate(Span<const int64_t>(prompt.data(), 10), greedy, &out, &stats);
    allocations = counter.count();
  }
  EXPECT_EQ(status, Error::Ok) << last_error_message();
  EXPECT_EQ(stats.generated_tokens, 24u);
  EXPECT_EQ(allocations, 0) << "heap allocations during a prefill and 24 decode steps";
}

}  // namespace
}  // namespace tern
