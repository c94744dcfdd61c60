// Delegate calls: the backend path when it can run, the portable fallback when it cannot
// (disabled, not registered, unavailable, incompatible blob), and load failure otherwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;
using testing::LoadedProgram;
using testing::MethodMemory;
using testing::TestBackend;

TestBackend g_backend;
std::vector<std::string> g_log_lines;

void capture_log(LogLevel /*level*/, const char* /*file*/, int /*line*/, const char* message) {
  g_log_lines.emplace_back(message);
}

std::string message() { return last_error_message(); }

const std::vector<int64_t> kShape = {2, 3};
const std::vector<float> kScale = {1, 2, 3, 4, 5, 6};

/// forward(x, y) = relu(x + y) * c, where add + relu are one delegate region for backend
/// "test" (blob "add_relu") with the portable kernels as its fallback.
std::vector<uint8_t> delegated_program(const std::string& blob = "add_relu",
                                       const std::string& after_op = "tern::mul") {
  GraphBuilder b("forward");
  const int x = b.input("x", DType::F32, kShape);
  const int y = b.input("y", DType::F32, kShape);
  const int c = b.constant_f32("c", kShape, kScale);
  const int s = b.op("tern::add", {x, y}, DType::F32, kShape, "add0");
  const int r = b.op("tern::relu", {s}, DType::F32, kShape, "relu0");
  b.delegate("test", 0, 1, testing::ascii(blob));
  const int out = b.op(after_op, {r, c}, DType::F32, kShape, "scale");
  b.output(out);
  return testing::compile_graph(b.build());
}

std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float s = x[i] + y[i];
    out[i] = (s > 0 ? s : 0.0f) * kScale[i];
  }
  return out;
}

class DelegateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    clear_backend_registry_for_testing();
    g_backend.available = true;
    g_backend.init_error = Error::Ok;
    g_backend.init_calls = g_backend.execute_calls = g_backend.destroy_calls = 0;
    g_log_lines.clear();
  }
  void TearDown() override {
    set_log_sink(nullptr);
    clear_backend_registry_for_testing();
  }
  static void register_test_backend() {
    Backend entry;
    entry.name = "test";
    entry.backend = &g_backend;
    ASSERT_EQ(register_backend(entry), Error::Ok) << message();
  }

  /// Loads, runs twice with different inputs, checks outputs against the reference, and
  /// returns the delegate path.
  DelegatePath run(const MethodLoadOptions& options = MethodLoadOptions()) {
    LoadedProgram lp(delegated_program());
    MethodMemory memory(lp.program().method_meta("forward").get());
    auto method = lp.program().load_method("forward", memory.manager(), options);
    EXPECT_TRUE(method.ok()) << message();
    if (!method.ok()) return DelegatePath::Fallback;
    EXPECT_EQ(method->num_delegate_calls(), 1u);
    std::vector<int64_t> sizes = kShape;
    for (int round = 0; round < 2; ++round) {
      std::vector<float> x = {1, -2, 3, -4, 5, -6};
      std::vector<float> y = {0.5f, 1, -4, 2, 0, 7};
      if (round == 1) {
        for (float& v : x) v = -v * 0.25f;
      }
      EXPECT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok) << message();
      EXPECT_EQ(method->set_input(1, f32_view(sizes, y)), Error::Ok) << message();
      EXPECT_EQ(method->execute(), Error::Ok) << message();
      auto out = method->output(0);
      EXPECT_TRUE(out.ok()) << message();
      if (out.ok()) {
        EXPECT_EQ(testing::to_vector(**out), reference(x, y));
      }
    }
    auto path = method->delegate_path(0);
    EXPECT_TRUE(path.ok());
    EXPECT_EQ(method->delegate_path(1).error(), Error::InvalidArgument);
    const DelegatePath result = path.ok() ? path.get() : DelegatePath::Fallback;
    EXPECT_EQ(method->num_steps(), result == DelegatePath::Backend ? 2u : 3u);
    return result;
  }
};

TEST_F(DelegateTest, RegisteredAndAvailableRunsOnBackend) {
  register_test_backend();
  EXPECT_EQ(run(), DelegatePath::Backend);
  EXPECT_EQ(g_backend.init_calls, 1);
  EXPECT_EQ(g_backend.execute_calls, 2);
  EXPECT_EQ(g_backend.destroy_calls, 1);  // the Method destroyed its handle
}

TEST_F(DelegateTest, DisabledBackendRunsFallbackWithOneLogLine) {
  register_test_backend();
  set_log_sink(capture_log);
  const char* disabled[] = {"other", "test"};
  MethodLoadOptions options;
  options.disabled_backends = Span<const char* const>(disabled, 2);
  EXPECT_EQ(run(options), DelegatePath::Fallback);
  set_log_sink(nullptr);
  EXPECT_EQ(g_backend.init_calls, 0);
  EXPECT_EQ(g_backend.execute_calls, 0);
  size_t fallback_lines = 0;
  for (const std::string& line : g_log_lines) {
    if (line.find("fallback") != std::string::npos) {
      ++fallback_lines;
      EXPECT_NE(line.find("backend 'test'"), std::string::npos) << line;
      EXPECT_NE(line.find("disabled"), std::string::npos) << line;
      EXPECT_NE(line.find("(2 kernels)"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(fallback_lines, 1u);
}

TEST_F(DelegateTest, UnregisteredBackendRunsFallback) {
  EXPECT_EQ(run(), DelegatePath::Fallback);
  EXPECT_EQ(g_backend.init_calls, 0);
}

TEST_F(DelegateTest, UnavailableBackendRunsFallback) {
  register_test_backend();
  g_backend.available = false;
  EXPECT_EQ(run(), DelegatePath::Fallback);
  EXPECT_EQ(g_backend.init_calls, 0);
  EXPECT_EQ(g_backend.execute_calls, 0);
}

TEST_F(DelegateTest, IncompatibleBlobRunsFallback) {
  register_test_backend();
  g_backend.init_error = Error::DelegateInvalidCompatibility;
  EXPECT_EQ(run(), DelegatePath::Fallback);
  EXPECT_EQ(g_backend.init_calls, 1);
  EXPECT_EQ(g_backend.execute_calls, 0);
  EXPECT_EQ(g_backend.destroy_calls, 0);
}

TEST_F(DelegateTest, OtherInitErrorFailsLoad) {
  register_test_backend();
  g_backend.init_error = Error::DelegateMemoryAllocationFailed;
  LoadedProgram lp(delegated_program());
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::DelegateMemoryAllocationFailed);
  EXPECT_NE(message().find("delegate 0 (backend 'test')"), std::string::npos) << message();
  EXPECT_NE(message().find("configured to fail init"), std::string::npos) << message();
  EXPECT_EQ(g_backend.destroy_calls, 0);
}

TEST_F(DelegateTest, FailedLoadAfterInitDestroysHandle) {
  register_test_backend();
  LoadedProgram lp(delegated_program("add_relu", "test::missing_kernel"));
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::NotFound);
  EXPECT_NE(message().find("test::missing_kernel"), std::string::npos) << message();
  EXPECT_EQ(g_backend.init_calls, 1);
  EXPECT_EQ(g_backend.destroy_calls, 1);
}

TEST_F(DelegateTest, BackendExecuteErrorNamesDelegate) {
  register_test_backend();
  // A blob the backend accepts ("relu") but whose arity does not match the region's 3 args.
  LoadedProgram lp(delegated_program("relu"));
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  std::vector<int64_t> sizes = kShape;
  std::vector<float> x(6, 1.0f);
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ(method->set_input(1, f32_view(sizes, x)), Error::Ok);
  EXPECT_EQ(method->execute(), Error::DelegateExecutionFailed);
  EXPECT_NE(message().find("backend 'test'"), std::string::npos) << message();
  EXPECT_NE(message().find("step 0"), std::string::npos) << message();
}

TEST_F(DelegateTest, ObserverReceivesTheBackendsPartsInsideTheDelegateStep) {
  register_test_backend();
  LoadedProgram lp(delegated_program());
  MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << message();
  std::vector<int64_t> sizes = kShape;
  std::vector<float> x(6, 1.0f);
  ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok);
  ASSERT_EQ(method->set_input(1, f32_view(sizes, x)), Error::Ok);
  // No observer: the backend is given no reporter (and reads no clock for it).
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_EQ(g_backend.reported_calls, 0);

  StepEvent steps[4];
  PartEvent parts[1];
  StepRecorder recorder(Span<StepEvent>(steps, 4), Span<PartEvent>(parts, 1));
  method->set_observer(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_EQ(g_backend.reported_calls, 1);
  ASSERT_EQ(recorder.size(), 2u);  // the delegate call, then the portable mul
  ASSERT_EQ(recorder.parts_size(), 1u);
  const PartEvent& p = recorder.part(0);
  EXPECT_EQ(p.step, 0u);  // the delegate call's step
  EXPECT_STREQ(p.label, "test backend: elementwise loop");
  EXPECT_LE(recorder.event(0).begin_ns, p.begin_ns);
  EXPECT_LE(p.begin_ns, p.end_ns);
  EXPECT_LE(p.end_ns, recorder.event(0).end_ns);
  // A second execute with the part buffer full: counted, not stored.
  ASSERT_EQ(method->execute(), Error::Ok) << message();
  EXPECT_EQ(recorder.parts_dropped(), 1u);
  recorder.clear();
  EXPECT_EQ(recorder.parts_size(), 0u);
  EXPECT_EQ(recorder.parts_dropped(), 0u);
  method->set_observer(nullptr);
}

}  // namespace
}  // namespace tern
