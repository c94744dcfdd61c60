// Threading contract (docs/threading.md): one Program shared by 4 threads, each with its own
// Method and memory, executing 200 times on its own inputs, gives exactly the outputs of a
// single-threaded run. Run under -DTERN_SANITIZE=thread this is also the data-race check.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"

namespace tern {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 200;

/// Output bytes of every iteration of thread `t` (inputs seeded by t and the iteration), run
/// on a Method of its own. Returns false (with `error`) on the first failure.
bool run_sequence(const Program& program, int t, std::vector<std::vector<uint8_t>>* outputs,
                  std::string* error) {
  auto meta = program.method_meta("forward");
  if (!meta.ok()) {
    *error = last_error_message();
    return false;
  }
  auto memory = hardening::ExactMemory::from_meta(*meta);
  auto method = program.load_method("forward", memory->manager());
  if (!method.ok()) {
    *error = std::string("load_method: ") + last_error_message();
    return false;
  }
  // A bad call on this thread leaves its message here and nowhere else.
  if (method->set_input(method->num_inputs(), TensorView()) == Error::Ok ||
      std::string(last_error_message()).find("out of range") == std::string::npos) {
    *error = std::string("unexpected message for a bad input index: ") + last_error_message();
    return false;
  }
  for (int i = 0; i < kIterations; ++i) {
    auto inputs = hardening::make_inputs(*meta, static_cast<uint32_t>(t * 1000 + i));
    if (hardening::set_inputs(*method, *meta, inputs) != Error::Ok ||
        method->execute() != Error::Ok) {
      *error = "iteration " + std::to_string(i) + ": " + last_error_message();
      return false;
    }
    outputs->push_back(hardening::output_bytes(*method));
  }
  return true;
}

class Concurrency : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ASSERT_TRUE(fuzz::register_sample_kernels_and_backend()); }
};

TEST_P(Concurrency, SharedProgramOwnMethodsMatchSingleThreadedRun) {
  const std::string name = GetParam();
  size_t index = 0;
  while (fuzz::sample_programs()[index].name != name) ++index;
  hardening::OwnedProgram program(fuzz::sample_program_bytes(index));

  // The reference: every thread's sequence, one after another, on this thread.
  std::vector<std::vector<std::vector<uint8_t>>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    std::string error;
    ASSERT_TRUE(run_sequence(*program, t, &expected[t], &error)) << error;
  }
  // Different inputs give different outputs (so a mix-up between threads would show).
  ASSERT_NE(expected[0][0], expected[1][0]);

  std::vector<std::vector<std::vector<uint8_t>>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<char> ok(kThreads, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Start together, so loads and executes overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      ok[t] = run_sequence(*program, t, &got[t], &errors[t]) ? 1 : 0;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(ok[t]) << "thread " << t << ": " << errors[t];
    ASSERT_EQ(got[t].size(), expected[t].size());
    for (int i = 0; i < kIterations; ++i) {
      ASSERT_EQ(got[t][i], expected[t][i]) << "thread " << t << ", iteration " << i;
    }
  }
}

// demo_mlp: kernels only; state: per-Method state tensors; delegate: a shared backend.
INSTANTIATE_TEST_SUITE_P(Programs, Concurrency, ::testing::Values("demo_mlp", "state", "delegate"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace tern
