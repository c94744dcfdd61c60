// The allocation-failure stress (see alloc_stress_check.h).
//
// Growing every size byte by byte from 0 (what tests/executor/alloc_stress_test.cpp does for
// small programs) is impossible for arenas of megabytes and a method load that builds an
// XNNPACK runtime, so each limit is tried at a fixed set of sizes below its need N:
//   0, 1, 8, 64, N/4, N/2, 3N/4, N - 4096, N - 64, N - 8, N - 1   (those in [0, N))
// - arenas: N = MethodMeta::arena_size(a); every size above must make load_method fail with
//   an Error and a message, N must load (the others at their planned size);
// - method allocator: N = the smallest size that loads, found by bisection between 0 and
//   MethodMeta::method_allocator_bytes() (which must load); the sizes above below N must
//   fail cleanly, N, N + 1, the midpoint and the planned bytes must load;
// - temp allocator (when the method plans temp memory): N = the smallest size with which
//   load_method and execute succeed (bisection up to temp_allocator_bytes()); the sizes
//   below N must fail cleanly (at load or at execute).
// Then, with exactly those needs (arenas as planned, method allocator N, temp N), the method
// is loaded and set_input + execute + output run three times while a counting malloc/new
// (tests/support/allocation_counter.h, which this file includes: the one translation unit
// of the checker that does) is armed: no heap allocation and no method-allocator request is
// allowed, and the outputs must equal those of a run with the planned sizes.
#include "tests/hardening/alloc_stress_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "tests/hardening/method_runner.h"
#include "tests/support/allocation_counter.h"

namespace tern::model_hardening {
namespace {

/// The sizes tried below a need of `need` bytes (see the file comment).
std::vector<uint64_t> sizes_below(uint64_t need) {
  std::vector<uint64_t> sizes = {0, 1, 8, 64, need / 4, need / 2, need / 4 * 3};
  for (uint64_t d : {uint64_t{4096}, uint64_t{64}, uint64_t{8}, uint64_t{1}}) {
    if (need >= d) sizes.push_back(need - d);
  }
  std::vector<uint64_t> out;
  for (uint64_t s : sizes) {
    if (s < need) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Loads (and, with `run`, executes) one method with given memory sizes.
class Attempts {
 public:
  Attempts(const Program& program, const char* method, const LoadConfig& config)
      : program_(program), method_(method), config_(config) {
    meta_ = std::make_unique<MethodMeta>(program.method_meta(method).get());
    inputs_ = make_inputs(*meta_, 1);
  }
  const MethodMeta& meta() const { return *meta_; }

  /// The first error of load_method (and, with `run`, set_input/execute/output); outputs go
  /// to `outputs` when given.
  Error attempt(const MemorySizes& sizes, bool run, std::vector<uint8_t>* outputs = nullptr) {
    ExactMemory memory(sizes);
    clear_error_message();
    auto method = program_.load_method(method_, memory.manager(), config_.options());
    if (!method.ok()) return method.error();
    if (!run) return Error::Ok;
    TERN_RETURN_IF_ERROR(set_inputs(*method, inputs_));
    TERN_RETURN_IF_ERROR(method->execute());
    if (outputs != nullptr) {
      outputs->clear();
      TERN_RETURN_IF_ERROR(append_outputs(*method, outputs));
    }
    return Error::Ok;
  }

  /// Three rounds of set_input + execute + output with the allocation counter armed.
  /// Returns the first error; fills the counts and the last outputs.
  Error count_execute(const MemorySizes& sizes, AllocStressMethod* figures,
                      std::vector<uint8_t>* outputs) {
    ExactMemory memory(sizes);
    auto method = program_.load_method(method_, memory.manager(), config_.options());
    if (!method.ok()) return method.error();
    figures->delegate_calls = method->num_delegate_calls();
    for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
      figures->on_backend += method->delegate_path(i).get() == DelegatePath::Backend;
    }
    const long calls_after_load = memory.method_allocator().calls();
    Error err = Error::Ok;
    {
      testing_support::ArmedCounter counter;
      for (int round = 0; round < 3 && err == Error::Ok; ++round) {
        err = set_inputs(*method, inputs_);
        if (err == Error::Ok) err = method->execute();
        for (size_t i = 0; err == Error::Ok && i < method->num_outputs(); ++i) {
          err = method->output(i).error();
        }
      }
      figures->heap_allocations = TERN_ZERO_ALLOC_HOOKS ? counter.count() : -1;
    }
    figures->method_allocator_calls = memory.method_allocator().calls() - calls_after_load;
    if (err != Error::Ok) return err;
    outputs->clear();
    return append_outputs(*method, outputs);
  }

 private:
  const Program& program_;
  const char* method_;
  LoadConfig config_;
  std::unique_ptr<MethodMeta> meta_;
  MethodInputs inputs_;
};

/// Smallest size in (lo, hi] for which `ok(size)` holds, given !ok(lo) and ok(hi).
template <typename Ok>
uint64_t bisect(uint64_t lo, uint64_t hi, Ok ok) {
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (ok(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

void stress_method(const Program& program, const char* name, const LoadConfig& config,
                   AllocStressReport* report) {
  AllocStressMethod figures;
  figures.name = name;
  figures.path = config.path();
  Attempts attempts(program, name, config);
  const MemorySizes planned = MemorySizes::planned(attempts.meta());
  figures.planned = planned;
  auto fail = [&](const std::string& what) {
    report->failures.push_back(std::string("method '") + name + "' (" + config.path() +
                               "): " + what);
  };
  auto expect_clean_failure = [&](Error err, const std::string& what) {
    ++figures.too_small_tried;
    if (err == Error::Ok) {
      fail(what + " succeeded, but is smaller than needed");
    } else if (last_error_message()[0] == '\0') {
      fail(what + " failed with " + to_string(err) + " but no message");
    } else {
      ++figures.errors[err];
    }
  };

  std::vector<uint8_t> reference;
  const Error planned_err = attempts.attempt(planned, true, &reference);
  if (planned_err != Error::Ok) {
    fail(std::string("does not run with the planned sizes: ") + to_string(planned_err) + ": " +
         last_error_message());
    report->methods.push_back(figures);
    return;
  }

  // Arenas.
  for (size_t a = 0; a < planned.arenas.size(); ++a) {
    for (uint64_t s : sizes_below(planned.arenas[a])) {
      MemorySizes sizes = planned;
      sizes.arenas[a] = s;
      expect_clean_failure(attempts.attempt(sizes, false),
                           "arena " + std::to_string(a) + " of " + std::to_string(s) + " bytes");
    }
  }

  // Method allocator.
  auto method_ok = [&](uint64_t s) {
    MemorySizes sizes = planned;
    sizes.method_bytes = s;
    return attempts.attempt(sizes, false) == Error::Ok;
  };
  figures.method_need = method_ok(0) ? 0 : bisect(0, planned.method_bytes, method_ok);
  for (uint64_t s : sizes_below(figures.method_need)) {
    MemorySizes sizes = planned;
    sizes.method_bytes = s;
    expect_clean_failure(attempts.attempt(sizes, false),
                         "method allocator of " + std::to_string(s) + " bytes");
  }
  for (uint64_t s : {figures.method_need, figures.method_need + 1,
                     (figures.method_need + planned.method_bytes) / 2, planned.method_bytes}) {
    if (s > planned.method_bytes || method_ok(s)) continue;
    fail("method allocator of " + std::to_string(s) + " bytes fails although " +
         std::to_string(figures.method_need) + " were enough: " + last_error_message());
  }

  // Temp allocator.
  MemorySizes exact = planned;
  exact.method_bytes = figures.method_need;
  if (planned.temp_bytes > 0) {
    auto temp_ok = [&](uint64_t s) {
      MemorySizes sizes = exact;
      sizes.temp_bytes = s;
      return attempts.attempt(sizes, true) == Error::Ok;
    };
    figures.temp_need = temp_ok(0) ? 0 : bisect(0, planned.temp_bytes, temp_ok);
    for (uint64_t s : sizes_below(figures.temp_need)) {
      MemorySizes sizes = exact;
      sizes.temp_bytes = s;
      expect_clean_failure(attempts.attempt(sizes, true),
                           "temp allocator of " + std::to_string(s) + " bytes");
    }
  }
  exact.temp_bytes = figures.temp_need;

  // Execute with exactly the needed sizes: no heap, no method allocator, same outputs.
  std::vector<uint8_t> outputs;
  const Error err = attempts.count_execute(exact, &figures, &outputs);
  if (err != Error::Ok) {
    fail(std::string("does not run with the exact needed sizes: ") + to_string(err) + ": " +
         last_error_message());
  } else {
    if (outputs != reference) fail("outputs with the exact sizes differ from the planned sizes'");
    if (figures.heap_allocations > 0) {
      fail(std::to_string(figures.heap_allocations) +
           " heap allocations in 3 rounds of set_input + execute + output");
    }
    if (figures.method_allocator_calls != 0) {
      fail(std::to_string(figures.method_allocator_calls) +
           " method allocator requests during execute");
    }
  }
  report->methods.push_back(figures);
}

}  // namespace

AllocStressReport check_alloc_stress(const std::vector<uint8_t>& file,
                                     const AllocStressOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  AllocStressReport report;
  Bytes bytes = exact_bytes(file.size(), 64);
  std::memcpy(bytes.get(), file.data(), file.size());
  BufferDataLoader loader(bytes.get(), file.size());
  auto program = Program::load(&loader);
  if (!program.ok()) {
    throw std::runtime_error(std::string("the file does not load: ") + last_error_message());
  }
  LoadConfig config;
  config.threads = options.threads;
  for (size_t m = 0; m < program->num_methods(); ++m) {
    stress_method(*program, program->method_name(m).get(), config, &report);
    if (options.fallback_too) {
      LoadConfig fallback = config;
      fallback.fallback = true;
      stress_method(*program, program->method_name(m).get(), fallback, &report);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

void print_alloc_stress_report(const std::string& name, const AllocStressReport& r) {
  for (const AllocStressMethod& m : r.methods) {
    std::string arenas;
    for (uint64_t a : m.planned.arenas) arenas += (arenas.empty() ? "" : " + ") + std::to_string(a);
    std::printf(
        "[alloc stress] %s '%s' (%s, %zu of %zu delegate calls on a backend): arenas %s bytes; "
        "method allocator needs %llu of %llu bytes; "
        "temp allocator needs %llu of %llu bytes; %zu smaller sizes tried",
        name.c_str(), m.name.c_str(), m.path.c_str(), m.on_backend, m.delegate_calls,
        arenas.empty() ? "(none)" : arenas.c_str(), static_cast<unsigned long long>(m.method_need),
        static_cast<unsigned long long>(m.planned.method_bytes),
        static_cast<unsigned long long>(m.temp_need),
        static_cast<unsigned long long>(m.planned.temp_bytes), m.too_small_tried);
    const char* sep = " (";
    for (const auto& [error, n] : m.errors) {
      std::printf("%s%s: %zu", sep, to_string(error), n);
      sep = ", ";
    }
    std::printf("%s; heap allocations in execute: %s\n", m.errors.empty() ? "" : ")",
                m.heap_allocations < 0 ? "not counted (sanitizer build)"
                                       : std::to_string(m.heap_allocations).c_str());
  }
  std::printf("[alloc stress] %s: %zu failures; %.1f s\n", name.c_str(), r.failures.size(),
              r.seconds);
  for (const std::string& f : r.failures) std::printf("[alloc stress]   FAIL %s\n", f.c_str());
}

}  // namespace tern::model_hardening
