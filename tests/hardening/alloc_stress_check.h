// The allocation-failure stress of the model hardening checker: every arena, the method
// allocator and the temp allocator of each method are given less than they need (a fixed
// set of sizes, see alloc_stress_check.cpp) and must fail with an Error and a message; the
// needed size must succeed; and execute() with exactly the needed sizes must not allocate on
// the heap nor ask the method allocator for memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "tests/support/exact_memory.h"
#include "tests/hardening/method_runner.h"

namespace tern::model_hardening {

struct AllocStressOptions {
  uint32_t threads = 1;       ///< MethodLoadOptions::num_threads
  bool fallback_too = false;  ///< stress each method again with every backend disabled
};

struct AllocStressMethod {
  std::string name;
  std::string path;                ///< "backends" or "portable fallback"
  MemorySizes planned;             ///< what MethodMeta says
  uint64_t method_need = 0;        ///< smallest method allocator that loads (bisected)
  uint64_t temp_need = 0;          ///< smallest temp allocator that executes (bisected)
  size_t too_small_tried = 0;      ///< sizes below a need that were tried
  std::map<Error, size_t> errors;  ///< how they failed
  long heap_allocations =
      -1;  ///< during set_input/execute/output with exact sizes (-1: not counted)
  long method_allocator_calls = 0;  ///< method allocator allocate() calls during execute
  size_t delegate_calls = 0;        ///< of the loaded method
  size_t on_backend = 0;            ///< delegate calls that run on their backend (not fallback)
};

struct AllocStressReport {
  std::vector<AllocStressMethod> methods;
  std::vector<std::string> failures;
  double seconds = 0;
};

/// Runs the stress on every method of `file`. Kernels and backends must be registered.
/// Throws std::runtime_error when the original file does not load.
AllocStressReport check_alloc_stress(const std::vector<uint8_t>& file,
                                     const AllocStressOptions& options);

/// Prints the report, one "[alloc stress]" line per method and figure.
void print_alloc_stress_report(const std::string& name, const AllocStressReport& report);

}  // namespace tern::model_hardening
