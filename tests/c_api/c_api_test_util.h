// Helpers for the C API tests: the tiny model's paths and bytes, RAII for the handles, and a
// check that a call failed with a named status and a message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tern.h"

namespace tern::c_api_test {

inline const char* tiny_model() { return TERN_TINY_MODEL; }
/// The tiny model with a cpu delegate; empty in builds without the cpu backend.
inline std::string tiny_model_cpu() { return TERN_TINY_MODEL_CPU; }

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct ProgramDeleter {
  void operator()(tern_program* p) const { tern_program_free(p); }
};
struct MethodDeleter {
  void operator()(tern_method* m) const { tern_method_free(m); }
};
using Program = std::unique_ptr<tern_program, ProgramDeleter>;
using Method = std::unique_ptr<tern_method, MethodDeleter>;

/// The tiny model loaded from its file (asserts success).
inline Program load_tiny(const tern_load_options* options = nullptr) {
  tern_program* p = nullptr;
  const tern_status s = tern_program_load_file(tiny_model(), options, &p);
  EXPECT_EQ(s, TERN_STATUS_OK) << tern_last_error_message();
  return Program(p);
}

/// Method `name` of `program` in memory tern allocates (asserts success).
inline Method load_method(tern_program* program, const char* name) {
  tern_method* m = nullptr;
  const tern_status s = tern_method_load(program, name, nullptr, &m);
  EXPECT_EQ(s, TERN_STATUS_OK) << tern_last_error_message();
  return Method(m);
}

/// The hand-worked inputs and outputs of `forward` (make_tiny_model.py).
inline const float kX[6] = {1, 2, 3, 4, 5, 6};
inline const float kS[2] = {1, 2};
inline const std::vector<float> kR = {8, 0, 8, 3.5f};
inline const std::vector<float> kZ = {9, 2, 9, 5.5f};

/// A bump-free block of `size` bytes aligned to `alignment`, freed with the object.
struct AlignedBlock {
  AlignedBlock(size_t size, size_t alignment) {
    if (posix_memalign(&data, alignment, size ? size : 1) != 0) data = nullptr;
  }
  ~AlignedBlock() { std::free(data); }
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  void* data = nullptr;
};

}  // namespace tern::c_api_test

/// Expects `call` to return `status`, with a non-empty thread message containing `needle`.
#define EXPECT_C_FAILURE(call, status, needle)                                         \
  do {                                                                                 \
    const tern_status got_ = (call);                                                   \
    EXPECT_EQ(got_, status) << #call << " returned " << tern_status_name(got_) << ": " \
                            << tern_last_error_message();                              \
    const std::string message_ = tern_last_error_message();                            \
    EXPECT_FALSE(message_.empty()) << #call;                                           \
    EXPECT_NE(message_.find(needle), std::string::npos)                                \
        << #call << ": message '" << message_ << "' lacks '" << (needle) << "'";       \
  } while (0)
