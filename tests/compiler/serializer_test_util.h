// Test helpers for what serialize_program takes and writes: graph values, a program with
// hand-made memory plans, header fields (tests/compiler/serializer_test.cpp,
// tests/executor/program_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/dtype.h"
#include "tools/compiler/graph.h"
#include "tools/compiler/memory_planner.h"

namespace tern::testing {

/// A tensor value named `name` (an activation unless the caller makes it more).
inline compiler::Value tensor(const std::string& name, std::vector<int64_t> sizes,
                              DType dtype = DType::F32) {
  compiler::Value v;
  v.kind = compiler::Value::Kind::Tensor;
  v.name = name;
  v.dtype = dtype;
  v.sizes = std::move(sizes);
  return v;
}

/// A program and one memory plan per method, as serialize_program takes them.
struct PlannedProgram {
  compiler::ProgramGraph program;
  std::vector<compiler::MemoryPlan> plans;
};

/// The little-endian u64 at byte `at` (a file header field).
inline uint64_t read_u64(const std::vector<uint8_t>& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[at + static_cast<size_t>(i)];
  return v;
}

}  // namespace tern::testing
