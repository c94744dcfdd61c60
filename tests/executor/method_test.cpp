// Method load and execute: argument checks, states, missing kernels and methods, and the
// method allocator / arena failure paths.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/executor/raw_program.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;
using testing::LoadedProgram;
using testing::MethodMemory;

class MethodTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(register_portable_kernels(), Error::Ok); }
};

/// forward(x: f32[1, 4]) = relu(x + c), c = [1, -2, 3, -4].
std::vector<uint8_t> relu_add_program() {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {1, 4});
  const int c = b.constant_f32("c", {1, 4}, {1.0f, -2.0f, 3.0f, -4.0f});
  const int s = b.op("tern::add", {x, c}, DType::F32, {1, 4}, "add0");
  const int y = b.op("tern::relu", {s}, DType::F32, {1, 4}, "relu0");
  b.output(y);
  return testing::compile_graph(b.build());
}

std::string message() { return last_error_message(); }

TEST_F(MethodTest, ExecutesAndReadsOutput) {
  LoadedProgram lp(relu_add_program());
  auto meta = lp.program().method_meta("forward");
  ASSERT_TRUE(meta.ok()) << message();
  MethodMemory memory(*meta);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  EXPECT_EQ(method->num_inputs(), 1u);
  EXPECT_EQ(method->num_outputs(), 1u);
  EXPECT_EQ(method->num_steps(), 2u);

  std::vector<int64_t> sizes = {1, 4};
  std::vector<float> x = {0.5f, 1.0f, -5.0f, 10.0f};
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok) << message();
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  auto out = method->output(0);
  ASSERT_TRUE(out.ok()) << message();
  // relu(x + c) by hand: [1.5, -1 -> 0, -2 -> 0, 6].
  EXPECT_EQ(testing::to_vector(**out), (std::vector<float>{1.5f, 0.0f, 0.0f, 6.0f}));
}

TEST_F(MethodTest, SetInputErrorsNameExpectedAndFound) {
  LoadedProgram lp(relu_add_program());
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();

  std::vector<float> data(5, 1.0f);
  {  // wrong dtype
    std::vector<int64_t> sizes = {1, 4};
    TensorView v = f32_view(sizes, data);
    v.dtype = DType::I32;
    v.nbytes = 16;
    EXPECT_EQ(method->set_input(0, v), Error::InvalidArgument);
    EXPECT_NE(message().find("input 0 ('x'): expected shape [1, 4] (f32), got [1, 4] (i32)"),
              std::string::npos)
        << message();
  }
  {  // wrong rank
    std::vector<int64_t> sizes = {4};
    TensorView v = f32_view(sizes, data);
    v.nbytes = 16;
    EXPECT_EQ(method->set_input(0, v), Error::InvalidArgument);
    EXPECT_NE(message().find("expected shape [1, 4] (f32), got [4] (f32)"), std::string::npos)
        << message();
  }
  {  // wrong size
    std::vector<int64_t> sizes = {1, 5};
    TensorView v = f32_view(sizes, data);
    EXPECT_EQ(method->set_input(0, v), Error::InvalidArgument);
    EXPECT_NE(message().find("input 0 ('x'): expected shape [1, 4] (f32), got [1, 5] (f32)"),
              std::string::npos)
        << message();
  }
  {  // wrong byte count
    std::vector<int64_t> sizes = {1, 4};
    TensorView v = f32_view(sizes, data);
    v.nbytes = 12;
    EXPECT_EQ(method->set_input(0, v), Error::InvalidArgument);
    EXPECT_NE(message().find("expected 16 bytes, got nbytes = 12"), std::string::npos) << message();
  }
  {  // null data
    std::vector<int64_t> sizes = {1, 4};
    TensorView v = f32_view(sizes, data);
    v.nbytes = 16;
    v.data = nullptr;
    EXPECT_EQ(method->set_input(0, v), Error::InvalidArgument);
    EXPECT_NE(message().find("input 0 ('x'): data is null"), std::string::npos) << message();
  }
  {  // index out of range
    std::vector<int64_t> sizes = {1, 4};
    TensorView v = f32_view(sizes, data);
    v.nbytes = 16;
    EXPECT_EQ(method->set_input(1, v), Error::InvalidArgument);
    EXPECT_NE(message().find("input 1 out of range: the method has 1 inputs"), std::string::npos)
        << message();
  }
  {  // a scalar for a tensor input
    EXPECT_EQ(method->set_input(0, EValue::from_int(3)), Error::InvalidArgument);
    EXPECT_NE(message().find("is a tensor, got a int"), std::string::npos) << message();
  }
}

TEST_F(MethodTest, OutputBeforeExecuteIsInvalidState) {
  LoadedProgram lp(relu_add_program());
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();

  auto out = method->output(0);
  EXPECT_EQ(out.error(), Error::InvalidState);
  EXPECT_NE(message().find("before a successful execute()"), std::string::npos) << message();

  // execute() without set_input names the input.
  EXPECT_EQ(method->execute(), Error::InvalidState);
  EXPECT_NE(message().find("input 0 ('x') has not been set"), std::string::npos) << message();
  EXPECT_EQ(method->output(0).error(), Error::InvalidState);

  std::vector<int64_t> sizes = {1, 4};
  std::vector<float> x(4, 0.0f);
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_TRUE(method->output(0).ok());
  EXPECT_EQ(method->output(1).error(), Error::InvalidArgument);
  EXPECT_NE(message().find("output 1 out of range"), std::string::npos) << message();
}

TEST_F(MethodTest, MissingKernelNamesOpAndInstruction) {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2});
  const int y = b.op("test::does_not_exist", {x}, DType::F32, {2}, "mystery_layer");
  b.output(y);
  LoadedProgram lp(testing::compile_graph(b.build()));
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::NotFound);
  EXPECT_NE(message().find("test::does_not_exist"), std::string::npos) << message();
  EXPECT_NE(message().find("mystery_layer"), std::string::npos) << message();
}

TEST_F(MethodTest, UnknownMethodIsNotFound) {
  LoadedProgram lp(relu_add_program());
  auto meta = lp.program().method_meta("no_such_method");
  EXPECT_EQ(meta.error(), Error::NotFound);
  EXPECT_NE(message().find("no_such_method"), std::string::npos) << message();

  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("no_such_method", memory.manager());
  EXPECT_EQ(method.error(), Error::NotFound);
  EXPECT_NE(message().find("no_such_method"), std::string::npos) << message();
}

TEST_F(MethodTest, MethodAllocatorGrownByteByByte) {
  LoadedProgram lp(relu_add_program());
  const MethodMeta meta = lp.program().method_meta("forward").get();
  const uint64_t bound = meta.method_allocator_bytes();
  ASSERT_GT(bound, 0u);
  int64_t first_success = -1;
  for (uint64_t bytes = 0; bytes <= bound; ++bytes) {
    MethodMemory memory(meta, static_cast<int64_t>(bytes));
    auto method = lp.program().load_method("forward", memory.manager());
    if (method.ok()) {
      if (first_success < 0) first_success = static_cast<int64_t>(bytes);
      continue;
    }
    EXPECT_EQ(first_success, -1) << "load failed with " << bytes << " bytes after succeeding with "
                                 << first_success;
    EXPECT_EQ(method.error(), Error::MemoryAllocationFailed) << bytes << ": " << message();
    EXPECT_NE(message().find("method allocator is too small"), std::string::npos) << message();
  }
  ASSERT_GE(first_success, 0) << "load never succeeded up to method_allocator_bytes() = " << bound;
  EXPECT_LE(static_cast<uint64_t>(first_success), bound);
  // The bound only adds worst-case alignment padding (< 8 bytes per array) to what load uses.
  EXPECT_LE(bound - static_cast<uint64_t>(first_success), 14u * 8u)
      << "bound " << bound << ", first success " << first_success;

  // Exactly the bound works and runs.
  MethodMemory memory(meta, static_cast<int64_t>(bound));
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  std::vector<int64_t> sizes = {1, 4};
  std::vector<float> x = {1, 2, 3, 4};
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << message();
}

TEST_F(MethodTest, TooSmallArenaFailsCleanly) {
  LoadedProgram lp(relu_add_program());
  const MethodMeta meta = lp.program().method_meta("forward").get();
  ASSERT_EQ(meta.num_arenas(), 1u);
  const uint64_t arena = meta.arena_size(0).get();
  ASSERT_GT(arena, 0u);
  {
    MethodMemory memory(meta, -1, /*arena_shrink=*/1);
    auto method = lp.program().load_method("forward", memory.manager());
    EXPECT_EQ(method.error(), Error::MemoryAllocationFailed);
    const std::string expected = "arena 0 needs " + std::to_string(arena) +
                                 " bytes (MethodMeta::arena_size), the provided buffer has " +
                                 std::to_string(arena - 1) + " bytes";
    EXPECT_NE(message().find(expected), std::string::npos) << message();
  }
  {  // no planned memory at all
    MethodMemory memory(meta);
    memory.manager()->planned_memory = nullptr;
    auto method = lp.program().load_method("forward", memory.manager());
    EXPECT_EQ(method.error(), Error::InvalidArgument);
    EXPECT_NE(message().find("plans 1 arena(s)"), std::string::npos) << message();
  }
  {  // fewer arena buffers than arenas
    MethodMemory memory(meta);
    HierarchicalAllocator empty;
    memory.manager()->planned_memory = &empty;
    auto method = lp.program().load_method("forward", memory.manager());
    EXPECT_EQ(method.error(), Error::InvalidArgument);
    EXPECT_NE(message().find("planned_memory holds 0"), std::string::npos) << message();
  }
}

Error failing_kernel(KernelContext& /*context*/, Span<EValue*> /*args*/) {
  return set_error_message(Error::InvalidArgument, "boom: the kernel refused");
}

TEST_F(MethodTest, KernelErrorNamesStepOpAndDebugName) {
  ASSERT_EQ(register_kernel("test::fail", failing_kernel), Error::Ok);
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, {2});
  const int r = b.op("tern::relu", {x}, DType::F32, {2}, "first");
  const int y = b.op("test::fail", {r}, DType::F32, {2}, "second_layer");
  b.output(y);
  LoadedProgram lp(testing::compile_graph(b.build()));
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  std::vector<int64_t> sizes = {2};
  std::vector<float> x_data = {1, 2};
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x_data)), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  EXPECT_NE(message().find("step 1"), std::string::npos) << message();
  EXPECT_NE(message().find("test::fail"), std::string::npos) << message();
  EXPECT_NE(message().find("second_layer"), std::string::npos) << message();
  EXPECT_NE(message().find("boom: the kernel refused"), std::string::npos) << message();
  EXPECT_EQ(method->output(0).error(), Error::InvalidState);
}

TEST_F(MethodTest, MovedMethodStillRuns) {
  LoadedProgram lp(relu_add_program());
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto loaded = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(loaded.ok()) << message();
  Method moved(std::move(loaded.get()));
  std::vector<int64_t> sizes = {1, 4};
  std::vector<float> x = {-1, 2, 0, 4};
  ASSERT_EQ(moved.set_input(0, f32_view(sizes, x)), Error::Ok) << message();
  ASSERT_EQ(moved.execute(), Error::Ok) << message();
  // relu([-1 + 1, 2 - 2, 0 + 3, 4 - 4]) = [0, 0, 3, 0].
  EXPECT_EQ(testing::to_vector(*moved.output(0).get()), (std::vector<float>{0, 0, 3, 0}));
  // The moved-from Method refuses politely.
  EXPECT_EQ(loaded->execute(), Error::InvalidState);
  EXPECT_EQ(loaded->set_input(0, f32_view(sizes, x)), Error::InvalidArgument);
}

TEST_F(MethodTest, ScalarArgumentsReachKernels) {
  // add(a, b, alpha) with an int alpha value: out = a + 2 * b.
  GraphBuilder b("forward");
  const int a = b.input("a", DType::F32, {3});
  const int c = b.constant_f32("c", {3}, {1, 2, 3});
  const int alpha = b.int_value(2);
  const int y = b.op("tern::add", {a, c, alpha}, DType::F32, {3}, "scaled_add");
  b.output(y);
  LoadedProgram lp(testing::compile_graph(b.build()));
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  std::vector<int64_t> sizes = {3};
  std::vector<float> x = {10, 20, 30};
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_EQ(testing::to_vector(*method->output(0).get()), (std::vector<float>{12, 24, 36}));
}

Error noop_kernel(KernelContext& /*context*/, Span<EValue*> /*args*/) { return Error::Ok; }

/// Loads a raw program and its method "forward"; returns the first error (Ok when both load).
Error load_raw(const testing::RawProgram& raw, std::string* message_out) {
  const std::vector<uint8_t> file = testing::assemble(raw);
  testing::AlignedBytes buffer = testing::aligned_bytes(file.size());
  std::memcpy(buffer.get(), file.data(), file.size());
  BufferDataLoader loader(buffer.get(), file.size());
  auto program = Program::load(&loader);
  if (!program.ok()) {
    *message_out = message();
    return program.error();
  }
  auto meta = program->method_meta("forward");
  if (!meta.ok()) {
    *message_out = message();
    return meta.error();
  }
  MethodMemory memory(*meta);
  auto method = program->load_method("forward", memory.manager());
  *message_out = message();
  return method.ok() ? Error::Ok : method.error();
}

TEST_F(MethodTest, MalformedMethodsFailCleanly) {
  ASSERT_EQ(register_kernel("test::noop", noop_kernel), Error::Ok);
  testing::RawProgram base = testing::valid_raw_program();
  base.methods[0].operators = {"test::noop"};
  std::string msg;
  ASSERT_EQ(load_raw(base, &msg), Error::Ok) << msg;

  struct Case {
    const char* what;
    std::function<void(testing::RawMethod&)> mutate;
  };
  const std::vector<Case> cases = {
      {"argument index past the values",
       [](testing::RawMethod& m) { m.instructions[0].args[1] = 99; }},
      {"negative argument index", [](testing::RawMethod& m) { m.instructions[0].args[0] = -1; }},
      {"operator index past the operators",
       [](testing::RawMethod& m) { m.instructions[0].index = 5; }},
      {"arena offset past the arena",
       [](testing::RawMethod& m) { m.values[2].tensor.offset = 1000; }},
      {"constant past its segment",
       [](testing::RawMethod& m) {
         m.values[1].tensor.sizes = {3, 5};
       }},
      {"negative size",
       [](testing::RawMethod& m) {
         m.values[0].tensor.sizes = {-2, 3};
       }},
      {"overflowing sizes",
       [](testing::RawMethod& m) {
         m.values[0].tensor.sizes = {int64_t(1) << 40, int64_t(1) << 40};
       }},
      {"rank above the maximum",
       [](testing::RawMethod& m) { m.values[0].tensor.sizes = std::vector<int64_t>(9, 1); }},
      {"dim order not a permutation",
       [](testing::RawMethod& m) {
         m.values[0].tensor.dim_order = std::vector<uint8_t>{0, 0};
       }},
      {"unknown dtype", [](testing::RawMethod& m) { m.values[0].tensor.dtype = 200; }},
      {"output index past the values", [](testing::RawMethod& m) { m.outputs = {42}; }},
      {"state that is not a tensor",
       [](testing::RawMethod& m) {
         m.state = {testing::RawState{3, -1}};
       }},
      {"state with a missing init segment",
       [](testing::RawMethod& m) {
         m.state = {testing::RawState{2, 7}};
       }},
      {"caller storage on a non-input",
       [](testing::RawMethod& m) { m.values[2].tensor.storage = 0; }},
      {"nf4 without quant params", [](testing::RawMethod& m) { m.values[1].tensor.dtype = 9; }},
      {"nf4 absmax of the wrong size",
       [](testing::RawMethod& m) {
         m.values[1].tensor.dtype = 9;
         m.values[1].tensor.sizes = {2, 32};  // 64 codes = 32 bytes, one block
         testing::RawQuant q;
         q.scheme = 1;
         q.absmax = 0;  // value 0 is an arena tensor of 6 elements
         m.values[1].tensor.quant = q;
       }},
      {"tensor list of a non-tensor",
       [](testing::RawMethod& m) {
         testing::RawValue list;
         list.type = fb::Value::TensorList;
         list.items = {3};
         m.values.push_back(list);
       }},
      {"delegate without backend or fallback",
       [](testing::RawMethod& m) {
         m.delegates = {testing::RawDelegate{"no_such_backend", 0}};
         m.instructions[0].kind = fb::InstructionKind::DelegateCall;
         m.instructions[0].index = 0;
         m.instructions[0].fallback_begin = 0;
         m.instructions[0].fallback_end = 0;
       }},
      {"delegate index past the delegates",
       [](testing::RawMethod& m) {
         m.instructions[0].kind = fb::InstructionKind::DelegateCall;
         m.instructions[0].index = 3;
       }},
      {"fallback range past the fallback list",
       [](testing::RawMethod& m) {
         m.delegates = {testing::RawDelegate{"no_such_backend", 0}};
         m.instructions[0].kind = fb::InstructionKind::DelegateCall;
         m.instructions[0].fallback_end = 4;
       }},
  };
  for (const Case& c : cases) {
    testing::RawProgram raw = base;
    c.mutate(raw.methods[0]);
    const Error err = load_raw(raw, &msg);
    EXPECT_NE(err, Error::Ok) << c.what;
    EXPECT_FALSE(msg.empty()) << c.what;
  }

  // The message for a delegate that can run nowhere.
  testing::RawProgram raw = base;
  cases[17].mutate(raw.methods[0]);
  EXPECT_EQ(load_raw(raw, &msg), Error::BackendUnavailable) << msg;
  EXPECT_NE(msg.find("no portable fallback"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tern
