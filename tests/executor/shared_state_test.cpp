// Shared state (format 1.2, docs/format.md "Shared state"): two methods of one program read
// and write one state tensor in the caller's buffer — the compiler's program-level list and its
// agreement check, the planner leaving shared state out of arenas, the buffer layout
// (Program::shared_state_bytes / init_shared_state), binding at load and its errors, Module, and
// the verifier on hand-made files whose methods disagree with the declaration.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/extension/method_memory.h"
#include "runtime/extension/module.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"
#include "tests/executor/raw_program.h"
#include "tests/support/temp_path.h"
#include "tools/compiler/memory_planner.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;

std::string message() { return last_error_message(); }

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// bump(x f32[3]) -> counter, counter += x in place; read() -> 10 * counter. Both name the
/// shared state "counter" (f32 [3], initial value `init` or zeros). With `steps`, bump also
/// keeps a state of its own, "steps" f32[1] += 1, as its second output.
compiler::ProgramGraph counter_program(const std::vector<float>& init, bool steps = false) {
  compiler::ProgramGraph program;
  program.source_model = "shared_state_test";
  {
    GraphBuilder b("bump");
    const int x = b.input("x", DType::F32, {3});
    const int counter = b.shared_state("counter", DType::F32, {3}, f32_bytes(init));
    b.op_into("tern::add", {counter, x}, {counter}, "accumulate");
    b.output(counter);
    if (steps) {
      const int own = b.state("steps", DType::F32, {1});
      b.op_into("tern::add", {own, b.double_value(1.0)}, {own}, "count");
      b.output(own);
    }
    program.methods.push_back(b.build());
  }
  {
    GraphBuilder b("read");
    const int counter = b.shared_state("counter", DType::F32, {3}, f32_bytes(init));
    b.output(b.op("tern::mul", {counter, b.double_value(10.0)}, DType::F32, {3}, "scale"));
    program.methods.push_back(b.build());
  }
  return program;
}

std::vector<uint8_t> compile(const compiler::ProgramGraph& program) {
  return compiler::compile_program(program).bytes;
}

/// A 64-byte aligned heap buffer.
struct Buffer {
  explicit Buffer(size_t size) : block(allocate_heap_block(size, 64, true)), bytes(size) {}
  Span<uint8_t> span(size_t offset = 0) { return Span<uint8_t>(block.get() + offset, bytes - offset); }
  HeapBlock block;
  size_t bytes;
};

/// Both methods of a counter program, loaded over one shared buffer.
class CounterMethods {
 public:
  explicit CounterMethods(const std::vector<uint8_t>& bytes)
      : program_(bytes), shared_(program_.program().shared_state_bytes()) {
    EXPECT_EQ(program_.program().init_shared_state(shared_.span()), Error::Ok) << message();
    bump_memory_.reset(new testing::MethodMemory(program_.program().method_meta("bump").get()));
    read_memory_.reset(new testing::MethodMemory(program_.program().method_meta("read").get()));
    bump_memory_->manager()->shared_state = shared_.span();
    read_memory_->manager()->shared_state = shared_.span();
    auto bump = program_.program().load_method("bump", bump_memory_->manager());
    if (!bump.ok()) throw std::runtime_error("load bump: " + message());
    bump_.reset(new Method(std::move(bump.get())));
    auto read = program_.program().load_method("read", read_memory_->manager());
    if (!read.ok()) throw std::runtime_error("load read: " + message());
    read_.reset(new Method(std::move(read.get())));
  }
  std::vector<float> bump(std::vector<float> x) {
    std::vector<int64_t> sizes = {3};
    EXPECT_EQ(bump_->set_input(0, f32_view(sizes, x)), Error::Ok) << message();
    EXPECT_EQ(bump_->execute(), Error::Ok) << message();
    return testing::to_vector(*bump_->output(0).get());
  }
  std::vector<float> read() {
    EXPECT_EQ(read_->execute(), Error::Ok) << message();
    return testing::to_vector(*read_->output(0).get());
  }
  const Program& program() const { return program_.program(); }
  Method& bump_method() { return *bump_; }
  Span<uint8_t> shared() { return shared_.span(); }

 private:
  testing::LoadedProgram program_;
  Buffer shared_;
  std::unique_ptr<testing::MethodMemory> bump_memory_;
  std::unique_ptr<testing::MethodMemory> read_memory_;
  std::unique_ptr<Method> bump_;
  std::unique_ptr<Method> read_;
};

class SharedStateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(register_portable_kernels(), Error::Ok); }
};

TEST_F(SharedStateTest, TwoMethodsSeeOneCounter) {
  CounterMethods m(compile(counter_program({})));
  // One f32[3] tensor: 12 bytes, rounded up to the 64-byte alignment.
  EXPECT_EQ(m.program().shared_state_bytes(), 64u);
  EXPECT_EQ(m.program().header().version_major, 1);
  EXPECT_EQ(m.program().header().version_minor, 2);
  EXPECT_EQ(m.read(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(m.bump({1, 2, 3}), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.bump({10, 20, 30}), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(m.read(), (std::vector<float>{110, 220, 330}));
  // The caller's buffer is the state.
  float raw[3];
  std::memcpy(raw, m.shared().data(), sizeof raw);
  EXPECT_EQ(std::vector<float>(raw, raw + 3), (std::vector<float>{11, 22, 33}));
  ASSERT_EQ(m.program().init_shared_state(m.shared()), Error::Ok) << message();
  EXPECT_EQ(m.read(), (std::vector<float>{0, 0, 0}));
}

TEST_F(SharedStateTest, InitialValueIsTheProgramsAndResetStateLeavesItAlone) {
  CounterMethods m(compile(counter_program({100, 200, 300}, /*steps=*/true)));
  EXPECT_EQ(m.read(), (std::vector<float>{1000, 2000, 3000}));
  EXPECT_EQ(m.bump({1, 1, 1}), (std::vector<float>{101, 201, 301}));
  EXPECT_EQ(testing::to_vector(*m.bump_method().output(1).get()), (std::vector<float>{1}));
  // The method's own state resets; the program's shared state does not.
  ASSERT_EQ(m.bump_method().reset_state(), Error::Ok) << message();
  EXPECT_EQ(m.bump({1, 1, 1}), (std::vector<float>{102, 202, 302}));
  EXPECT_EQ(testing::to_vector(*m.bump_method().output(1).get()), (std::vector<float>{1}));
  ASSERT_EQ(m.program().init_shared_state(m.shared()), Error::Ok);
  EXPECT_EQ(m.read(), (std::vector<float>{1000, 2000, 3000}));
}

TEST_F(SharedStateTest, EntriesAreLaidOutAt64ByteSteps) {
  // "a" f32[5] (20 bytes) at 0, "b" i64[9] (72 bytes) at 64, "c" f32[1] at 192: 256 bytes.
  GraphBuilder b("forward");
  const std::vector<int64_t> b_init = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<uint8_t> b_bytes(b_init.size() * 8);
  std::memcpy(b_bytes.data(), b_init.data(), b_bytes.size());
  const int a = b.shared_state("a", DType::F32, {5}, f32_bytes({1, 2, 3, 4, 5}));
  const int bb = b.shared_state("b", DType::I64, {9}, b_bytes);
  const int c = b.shared_state("c", DType::F32, {1}, f32_bytes({-7}));
  b.output(b.op("tern::mul", {a, b.double_value(1.0)}, DType::F32, {5}, "a"));
  b.output(b.op("tern::mul", {c, b.double_value(1.0)}, DType::F32, {1}, "c"));
  b.output(b.op("tern::add", {bb, b.int_value(0)}, DType::I64, {9}, "b"));
  compiler::ProgramGraph program;
  program.methods.push_back(b.build());
  testing::LoadedProgram lp(compile(program));
  ASSERT_EQ(lp.program().shared_state_bytes(), 256u);
  Buffer shared(256);
  std::memset(shared.block.get(), 0xAB, 256);
  ASSERT_EQ(lp.program().init_shared_state(shared.span()), Error::Ok) << message();
  float a_out[5];
  int64_t b_out[9];
  float c_out;
  std::memcpy(a_out, shared.block.get(), sizeof a_out);
  std::memcpy(b_out, shared.block.get() + 64, sizeof b_out);
  std::memcpy(&c_out, shared.block.get() + 192, sizeof c_out);
  EXPECT_EQ(std::vector<float>(a_out, a_out + 5), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(std::vector<int64_t>(b_out, b_out + 9), b_init);
  EXPECT_EQ(c_out, -7.0f);
  EXPECT_EQ(shared.block.get()[20], 0) << "padding is zeroed";
}

TEST_F(SharedStateTest, PlannerGivesSharedStateNoArenaBytes) {
  const compiler::ProgramGraph program = counter_program({});
  const compiler::Graph& read = program.methods[1];
  const compiler::MemoryPlan plan = compiler::plan_memory(read);
  for (size_t i = 0; i < read.values.size(); ++i) {
    if (!read.values[i].shared_state.empty()) {
      EXPECT_EQ(plan.offsets[i], -1) << i;
    }
  }
  // Only the 12-byte output is planned.
  EXPECT_LE(plan.arena_size, 64u);
}

TEST_F(SharedStateTest, LoadWithoutOrWithABadBufferIsAClearError) {
  testing::LoadedProgram lp(compile(counter_program({})));
  testing::MethodMemory memory(lp.program().method_meta("read").get());
  auto missing = lp.program().load_method("read", memory.manager());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), Error::InvalidArgument);
  EXPECT_NE(message().find("method 'read'"), std::string::npos) << message();
  EXPECT_NE(message().find("shared state 'counter'"), std::string::npos) << message();
  EXPECT_NE(message().find("shared_state_bytes() = 64"), std::string::npos) << message();

  Buffer small(32);
  testing::MethodMemory memory2(lp.program().method_meta("read").get());
  memory2.manager()->shared_state = small.span();
  auto too_small = lp.program().load_method("read", memory2.manager());
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(message().find("has 32 bytes"), std::string::npos) << message();

  Buffer big(128);
  testing::MethodMemory memory3(lp.program().method_meta("read").get());
  memory3.manager()->shared_state = big.span(4);
  auto misaligned = lp.program().load_method("read", memory3.manager());
  ASSERT_FALSE(misaligned.ok());
  EXPECT_NE(message().find("not 64-byte aligned"), std::string::npos) << message();

  EXPECT_EQ(lp.program().init_shared_state(small.span()), Error::InvalidArgument);
  EXPECT_NE(message().find("needs 64"), std::string::npos) << message();
  EXPECT_EQ(lp.program().init_shared_state(big.span(4)), Error::InvalidArgument);
}

TEST_F(SharedStateTest, MethodsThatDisagreeDoNotCompile) {
  compiler::ProgramGraph program = counter_program({});
  program.methods[1].values[0].sizes = {4};
  try {
    compile(program);
    FAIL() << "compiled";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("methods disagree about shared state 'counter'"), std::string::npos)
        << what;
    EXPECT_NE(what.find("method 'bump' value 1 is f32 [3]"), std::string::npos) << what;
    EXPECT_NE(what.find("method 'read' value 0 is f32 [4]"), std::string::npos) << what;
  }
  compiler::ProgramGraph other_init = counter_program({});
  other_init.methods[1].values[0].data = f32_bytes({1, 2, 3});
  try {
    compile(other_init);
    FAIL() << "compiled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("different initial values"), std::string::npos)
        << e.what();
  }
}

TEST_F(SharedStateTest, ModuleGivesEveryMethodTheSameBuffer) {
  const std::string path = testing_support::unique_temp_path("shared_state_module", ".pte");
  compiler::write_file(path, compile(counter_program({5, 5, 5})));
  Module module;
  ASSERT_EQ(module.load(path.c_str()), Error::Ok) << message();
  auto bump = module.method("bump");
  auto read = module.method("read");
  ASSERT_TRUE(bump.ok() && read.ok()) << message();
  std::vector<int64_t> sizes = {3};
  std::vector<float> x = {1, 2, 3};
  ASSERT_EQ((*bump)->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ((*bump)->execute(), Error::Ok) << message();
  ASSERT_EQ((*read)->execute(), Error::Ok) << message();
  EXPECT_EQ(testing::to_vector(*(*read)->output(0).get()), (std::vector<float>{60, 70, 80}));
  ASSERT_EQ(module.reset_shared_state(), Error::Ok) << message();
  ASSERT_EQ((*read)->execute(), Error::Ok) << message();
  EXPECT_EQ(testing::to_vector(*(*read)->output(0).get()), (std::vector<float>{50, 50, 50}));
  std::remove(path.c_str());
}

// ---- the verifier, on hand-made files ---------------------------------------------------------

/// forward() -> the shared state "s" f32[3] scaled by nothing: value 0 is the shared state view,
/// listed as state, and the output; no instructions. Declared f32 [3], zero-initialised.
testing::RawProgram raw_shared_program() {
  testing::RawProgram p;
  p.minor = kFormatMinorSharedState;
  testing::RawMethod m;
  m.name = "forward";
  m.values.push_back(testing::raw_f32_tensor({3}, static_cast<uint8_t>(fb::StorageKind::SharedState), 0, 0));
  m.values[0].tensor.name = "s";
  m.outputs = {0};
  m.state = {testing::RawState{0, -1}};
  m.arenas = {testing::RawArena{64, 64, 0}};
  p.methods.push_back(m);
  compiler::pte::SharedState s;
  s.name = "s";
  s.sizes = {3};
  p.shared_state.push_back(s);
  p.area.resize(12, 0);
  p.segments = {testing::RawSegment{0, 12, 64, std::nullopt}};
  return p;
}

/// Program::load's error on `raw`, and its message.
Error load_error(const testing::RawProgram& raw, std::string* msg) {
  const std::vector<uint8_t> file = testing::assemble(raw);
  testing::AlignedBytes buffer = testing::aligned_bytes(file.size());
  std::memcpy(buffer.get(), file.data(), file.size());
  BufferDataLoader loader(buffer.get(), file.size());
  auto program = Program::load(&loader);
  *msg = program.ok() ? "" : message();
  return program.ok() ? Error::Ok : program.error();
}

TEST_F(SharedStateTest, HandMadeValidFileLoadsAndRuns) {
  const std::vector<uint8_t> file = testing::assemble(raw_shared_program());
  testing::LoadedProgram lp(file);
  ASSERT_EQ(lp.program().shared_state_bytes(), 64u);
  Buffer shared(64);
  ASSERT_EQ(lp.program().init_shared_state(shared.span()), Error::Ok);
  const float three[3] = {1.5f, 2.5f, 3.5f};
  std::memcpy(shared.block.get(), three, sizeof three);
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  memory.manager()->shared_state = shared.span();
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_EQ(testing::to_vector(*method->output(0).get()), (std::vector<float>{1.5f, 2.5f, 3.5f}));
}

TEST_F(SharedStateTest, VerifierRefusesBadDeclarationsAndViews) {
  std::string msg;
  struct Case {
    const char* what;
    void (*edit)(testing::RawProgram&);
    const char* expect;
  };
  const Case cases[] = {
      {"layout differs",
       [](testing::RawProgram& p) { p.methods[0].values[0].tensor.sizes = {4}; },
       "views shared state 's' as f32 [4], but the program declares it f32 [3] (the methods "
       "disagree about the state layout)"},
      {"dtype differs",
       [](testing::RawProgram& p) { p.methods[0].values[0].tensor.dtype = 4; },
       "as i32 [3], but the program declares it f32 [3]"},
      {"location out of range",
       [](testing::RawProgram& p) { p.methods[0].values[0].tensor.location = 1; },
       "value 0: shared state 1 out of range (the program declares 1)"},
      {"offset",
       [](testing::RawProgram& p) { p.methods[0].values[0].tensor.offset = 4; },
       "offset 4 into shared state 's'"},
      {"not listed as state", [](testing::RawProgram& p) { p.methods[0].state.clear(); },
       "value 0: shared state storage, but not listed as state"},
      {"init segment on the method's entry",
       [](testing::RawProgram& p) { p.methods[0].state[0].init_segment = 0; },
       "is shared state, whose initial value is the program's"},
      {"unnamed", [](testing::RawProgram& p) { p.shared_state[0].name = std::nullopt; },
       "shared state 0: missing or unnamed"},
      {"bad dtype", [](testing::RawProgram& p) { p.shared_state[0].dtype = 99; },
       "shared state 0 ('s'): unknown dtype 99"},
      {"negative size", [](testing::RawProgram& p) { p.shared_state[0].sizes = {-3}; },
       "shared state 0 ('s'): size -3 of dim 0 is negative or overflows"},
      {"init segment out of range",
       [](testing::RawProgram& p) { p.shared_state[0].init_segment = 5; },
       "shared state 0 ('s'): init segment 5 out of range (1 segments)"},
      {"init segment of the wrong size",
       [](testing::RawProgram& p) {
         p.shared_state[0].init_segment = 0;
         p.segments[0].size = 8;
       },
       "shared state 0 ('s'): init segment 0 has 8 bytes, the tensor needs 12"},
      {"a shared state input",
       [](testing::RawProgram& p) { p.methods[0].inputs = {0}; },
       "value 0 is a shared state tensor; inputs need"},
  };
  for (const Case& c : cases) {
    testing::RawProgram p = raw_shared_program();
    c.edit(p);
    EXPECT_EQ(load_error(p, &msg), Error::InvalidProgram) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  }
  // The valid file loads (each case above fails for its own edit only).
  EXPECT_EQ(load_error(raw_shared_program(), &msg), Error::Ok) << msg;
}

}  // namespace
}  // namespace tern
