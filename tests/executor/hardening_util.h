// Helpers for the hardening tests (f1): the demo program compiled at test time, exact-size
// caller memory, an allocator that counts requests, and running a method on given inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "tests/support/exact_memory.h"
#include "tests/support/temp_path.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_json.h"

namespace tern::hardening {

using testing_support::Bytes;
using testing_support::CountingAllocator;
using testing_support::exact_bytes;
using testing_support::ExactMemory;

/// A new temporary folder for the current test, removed with everything in it when this
/// object goes out of scope (also when the test throws). Unlike unique_temp_path() alone, a
/// parameterized test's name ("Test/param") does not nest the folder inside another one that
/// would be left behind: the '/' becomes '_'.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& stem) {
    std::string temp = ::testing::TempDir();
    if (!temp.empty() && temp.back() != '/') temp += '/';
    path_ = tern::testing_support::unique_temp_path(stem);
    std::replace(path_.begin() + static_cast<std::ptrdiff_t>(std::min(temp.size(), path_.size())),
                 path_.end(), '/', '_');
    std::filesystem::create_directories(path_);
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The demo model: examples/mlp/make_mlp.py writes graph.json + weights (and input.npy,
/// expected.npy from its plain-Python reference) into `dir`, compiled here as `tern compile`
/// does. Throws std::runtime_error when python3 or the script fails.
inline std::vector<uint8_t> demo_program_bytes(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string cmd = "python3 '" + std::string(TERN_SOURCE_DIR) +
                          "/examples/mlp/make_mlp.py' '" + dir + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  return compiler::compile_program(compiler::read_graph_json(dir + "/graph.json")).bytes;
}

/// A Program loaded from a 64-byte aligned copy of `bytes` (Full verification).
class OwnedProgram {
 public:
  explicit OwnedProgram(const std::vector<uint8_t>& bytes)
      : bytes_(exact_bytes(bytes.size())), loader_(bytes_.get(), bytes.size()) {
    std::memcpy(bytes_.get(), bytes.data(), bytes.size());
    auto program = Program::load(&loader_);
    if (!program.ok()) {
      throw std::runtime_error(std::string("Program::load: ") + last_error_message());
    }
    program_ = std::make_unique<Program>(std::move(*program));
  }
  const Program& operator*() const { return *program_; }
  const Program* operator->() const { return program_.get(); }

 private:
  Bytes bytes_;
  BufferDataLoader loader_;
  std::unique_ptr<Program> program_;
};

/// Deterministic input bytes for every tensor input of `meta` (f32: values in [-2, 2);
/// integer dtypes: small integers), varied by `seed`.
inline std::vector<std::vector<uint8_t>> make_inputs(const MethodMeta& meta, uint32_t seed) {
  std::vector<std::vector<uint8_t>> inputs;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    const TensorInfo info = meta.input_tensor_info(i).get();
    std::vector<uint8_t> bytes(static_cast<size_t>(info.nbytes));
    const size_t width = info.dtype == DType::F32 || info.dtype == DType::I32 ? 4 : 1;
    for (size_t k = 0; k + width <= bytes.size(); k += width) {
      state = state * 1664525u + 1013904223u;
      if (info.dtype == DType::F32) {
        const float f = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 4 - 2;
        std::memcpy(&bytes[k], &f, 4);
      } else if (info.dtype == DType::I32) {
        const int32_t v = static_cast<int32_t>(state >> 24) - 128;
        std::memcpy(&bytes[k], &v, 4);
      } else {
        bytes[k] = static_cast<uint8_t>(state >> 24);
      }
    }
    inputs.push_back(std::move(bytes));
  }
  return inputs;
}

/// Sets every input of `method` from `inputs` (shaped by `meta`); returns the first error.
inline Error set_inputs(Method& method, const MethodMeta& meta,
                        std::vector<std::vector<uint8_t>>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo info = meta.input_tensor_info(i).get();
    TensorView view;
    view.dtype = info.dtype;
    view.rank = static_cast<uint32_t>(info.sizes.size());
    view.sizes = info.sizes.data();
    view.data = inputs[i].data();
    view.nbytes = inputs[i].size();
    const Error err = method.set_input(i, view);
    if (err != Error::Ok) return err;
  }
  return Error::Ok;
}

/// Every output tensor's bytes, concatenated (after a successful execute()).
inline std::vector<uint8_t> output_bytes(const Method& method) {
  std::vector<uint8_t> all;
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    auto out = method.output(i);
    if (!out.ok()) throw std::runtime_error(std::string("output: ") + last_error_message());
    const uint8_t* p = static_cast<const uint8_t*>((*out)->data);
    all.insert(all.end(), p, p + (*out)->nbytes);
  }
  return all;
}

}  // namespace tern::hardening
