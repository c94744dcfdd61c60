// Allocation-failure stress (ExecuTorch's test, STYLE.md): for each program, every arena, the
// method allocator and the temp allocator are grown from 0 bytes to their planned size. Every
// size below what is needed fails with a clean Error and a message; the first size that fits
// succeeds (and is within MethodMeta's number); execute never asks the method allocator for
// memory.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/kernel/kernel_registry.h"
#include "tests/executor/hardening_util.h"
#include "tests/fuzz/sample_programs.h"
#include "tools/compiler/graph_builder.h"

namespace tern {
namespace {

using hardening::ExactMemory;
using hardening::OwnedProgram;

struct StressCase {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string method = "forward";
  bool disable_sample_backend = false;
};

/// q [1, 2, 4, 8], k and v [1, 2, 6, 8]: the one op that plans temp memory.
compiler::Graph sdpa_graph() {
  compiler::GraphBuilder b("forward");
  const int q = b.input("q", DType::F32, {1, 2, 4, 8});
  const int k = b.input("k", DType::F32, {1, 2, 6, 8});
  const int v = b.input("v", DType::F32, {1, 2, 6, 8});
  const int out =
      b.op("tern::scaled_dot_product_attention", {q, k, v, b.none(), b.bool_value(false), b.none()},
           DType::F32, {1, 2, 4, 8}, "attention");
  b.output(out);
  return b.build();
}

constexpr const char* kCaseNames[] = {"demo_mlp",          "state",         "delegate_backend",
                                      "delegate_fallback", "reshape_alias", "two_methods_second",
                                      "sdpa_temp"};

/// The case named `name` (compiled on first use, not at test registration).
const StressCase& stress_case(const std::string& name) {
  static std::map<std::string, StressCase> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  StressCase c{name, {}};
  if (name == "demo_mlp") {
    const hardening::ScopedTempDir dir("alloc_stress_demo");  // removed, also on a throw
    c.bytes = hardening::demo_program_bytes(dir.path());
  } else if (name == "state") {
    c.bytes = fuzz::compile_one(fuzz::state_graph(), "state");
  } else if (name == "delegate_backend" || name == "delegate_fallback") {
    c.bytes = fuzz::compile_one(fuzz::delegate_graph(), "delegate");
    c.disable_sample_backend = name == "delegate_fallback";
  } else if (name == "reshape_alias") {
    c.bytes = fuzz::compile_one(fuzz::reshape_graph(), "reshape");
  } else if (name == "two_methods_second") {
    c.bytes = fuzz::sample_program_bytes(fuzz::sample_programs().size() - 1);
    c.method = "second";
  } else if (name == "sdpa_temp") {
    c.bytes = fuzz::compile_one(sdpa_graph(), "sdpa");
  }
  return cache.emplace(name, std::move(c)).first->second;
}

class AllocStress : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fuzz::register_sample_kernels_and_backend());
    set_log_level(LogLevel::Warning);  // one fallback line per load is noise here
  }
  void TearDown() override { set_log_level(LogLevel::Info); }
};

struct Sizes {
  size_t method_bytes;
  std::vector<uint64_t> arenas;
  std::vector<uint32_t> alignments;
  size_t temp_bytes;
};

TEST_P(AllocStress, EverySmallerSizeFailsCleanlyAndExecuteNeverAllocates) {
  const StressCase& c = stress_case(GetParam());
  if (c.name == "sdpa_temp" && find_kernel("tern::scaled_dot_product_attention") == nullptr) {
    GTEST_SKIP() << "tern::scaled_dot_product_attention is not registered in this build";
  }
  OwnedProgram program(c.bytes);
  auto meta_result = program->method_meta(c.method.c_str());
  ASSERT_TRUE(meta_result.ok()) << last_error_message();
  const MethodMeta meta = *meta_result;
  static const char* const kDisabled[] = {fuzz::kSampleBackendName};
  MethodLoadOptions options;
  if (c.disable_sample_backend) options.disabled_backends = Span<const char* const>(kDisabled, 1);

  const Sizes planned = [&] {
    Sizes s{static_cast<size_t>(meta.method_allocator_bytes()),
            {},
            {},
            static_cast<size_t>(meta.temp_allocator_bytes())};
    for (size_t a = 0; a < meta.num_arenas(); ++a) {
      s.arenas.push_back(meta.arena_size(a).get());
      s.alignments.push_back(meta.arena_alignment(a).get());
    }
    return s;
  }();
  auto inputs = hardening::make_inputs(meta, 1);

  // Loads (and, when `run`, executes) with `sizes`; returns the first error.
  auto attempt = [&](const Sizes& sizes, bool run, std::vector<uint8_t>* outputs) -> Error {
    ExactMemory memory(sizes.method_bytes, sizes.arenas, sizes.alignments, sizes.temp_bytes);
    clear_error_message();
    auto method = program->load_method(c.method.c_str(), memory.manager(), options);
    if (!method.ok()) return method.error();
    if (c.disable_sample_backend && method->num_delegate_calls() > 0) {
      EXPECT_EQ(method->delegate_path(0).get(), DelegatePath::Fallback);
    }
    if (!run) return Error::Ok;
    TERN_RETURN_IF_ERROR(hardening::set_inputs(*method, meta, inputs));
    const long method_calls = memory.method_allocator().calls();
    for (int i = 0; i < 3; ++i) {
      TERN_RETURN_IF_ERROR(method->execute());
    }
    EXPECT_EQ(memory.method_allocator().calls(), method_calls)
        << "execute() asked the method allocator for memory";
    if (outputs != nullptr) *outputs = hardening::output_bytes(*method);
    return Error::Ok;
  };
  auto expect_clean_failure = [&](Error err, const std::string& what) {
    EXPECT_NE(err, Error::Ok) << what << " unexpectedly succeeded";
    EXPECT_STRNE(last_error_message(), "")
        << what << ": " << to_string(err) << " without a message";
  };

  std::vector<uint8_t> reference;
  ASSERT_EQ(attempt(planned, true, &reference), Error::Ok) << last_error_message();

  // Arenas: every size below the planned one is refused at load.
  for (size_t a = 0; a < planned.arenas.size(); ++a) {
    for (uint64_t s = 0; s < planned.arenas[a]; ++s) {
      Sizes sizes = planned;
      sizes.arenas[a] = s;
      const Error err = attempt(sizes, false, nullptr);
      expect_clean_failure(err,
                           "arena " + std::to_string(a) + " of " + std::to_string(s) + " bytes");
      EXPECT_EQ(err, Error::MemoryAllocationFailed) << last_error_message();
      if (HasFailure()) return;
    }
  }

  // Method allocator: fails below some need, succeeds from there up to the planned bytes.
  size_t first_fit = SIZE_MAX;
  for (size_t s = 0; s <= planned.method_bytes; ++s) {
    Sizes sizes = planned;
    sizes.method_bytes = s;
    const Error err = attempt(sizes, false, nullptr);
    if (first_fit == SIZE_MAX) {
      if (err == Error::Ok) {
        first_fit = s;
        continue;
      }
      expect_clean_failure(err, "method allocator of " + std::to_string(s) + " bytes");
      EXPECT_EQ(err, Error::MemoryAllocationFailed) << last_error_message();
    } else {
      EXPECT_EQ(err, Error::Ok) << "method allocator of " << s << " bytes fails although "
                                << first_fit << " bytes were enough: " << last_error_message();
    }
    if (HasFailure()) return;
  }
  ASSERT_NE(first_fit, SIZE_MAX) << "method_allocator_bytes() = " << planned.method_bytes
                                 << " is not enough";
  {
    Sizes sizes = planned;
    sizes.method_bytes = first_fit;
    std::vector<uint8_t> outputs;
    ASSERT_EQ(attempt(sizes, true, &outputs), Error::Ok) << last_error_message();
    EXPECT_EQ(outputs, reference);
  }
  RecordProperty("method_allocator_needed", static_cast<int>(first_fit));
  RecordProperty("method_allocator_bytes", static_cast<int>(planned.method_bytes));
  std::cout << "[alloc stress] " << c.name << ": method allocator needs " << first_fit << " of "
            << planned.method_bytes << " bytes; arenas";
  for (uint64_t a : planned.arenas) std::cout << " " << a;
  std::cout << "; temp " << planned.temp_bytes << "\n";

  // Temp allocator: execute fails cleanly below the kernels' need, never above the plan.
  if (planned.temp_bytes > 0) {
    size_t temp_fit = SIZE_MAX;
    for (size_t s = 0; s <= planned.temp_bytes && temp_fit == SIZE_MAX; ++s) {
      Sizes sizes = planned;
      sizes.temp_bytes = s;
      std::vector<uint8_t> outputs;
      const Error err = attempt(sizes, true, &outputs);
      if (err == Error::Ok) {
        temp_fit = s;
        EXPECT_EQ(outputs, reference);
      } else {
        expect_clean_failure(err, "temp allocator of " + std::to_string(s) + " bytes");
        EXPECT_EQ(err, Error::MemoryAllocationFailed) << last_error_message();
      }
      if (HasFailure()) return;
    }
    EXPECT_NE(temp_fit, SIZE_MAX) << "temp_allocator_bytes() = " << planned.temp_bytes
                                  << " is not enough";
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, AllocStress, ::testing::ValuesIn(kCaseNames),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace tern
