// Helpers for the portable kernel tests: tensors over std::vector storage, kernel calls
// through the registry, and an independent naive broadcasting index.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernels/portable/register_portable_kernels.h"

namespace tern {
namespace testing {

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<int16_t>() { return DType::I16; }

/// A tensor owning its sizes and elements, with a TensorView and an EValue pointing at them.
/// Not copyable or movable (the view points into the object); hold it by unique_ptr.
template <typename T>
struct OwnedTensor {
  std::vector<int64_t> sizes;
  std::vector<T> data;
  TensorView view;
  EValue value;

  OwnedTensor(std::vector<int64_t> s, std::vector<T> d) : sizes(std::move(s)), data(std::move(d)) {
    view.dtype = dtype_of<T>();
    view.rank = static_cast<uint32_t>(sizes.size());
    view.sizes = sizes.data();
    view.data = data.empty() ? nullptr : data.data();
    view.nbytes = data.size() * sizeof(T);
    value = EValue::from_tensor(&view);
  }
  OwnedTensor(const OwnedTensor&) = delete;
  OwnedTensor& operator=(const OwnedTensor&) = delete;
};

inline int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// A tensor of `sizes` filled with seeded random values (floats in [-2, 2], ints in [-50, 50]).
template <typename T>
std::unique_ptr<OwnedTensor<T>> random_tensor(const std::vector<int64_t>& sizes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> data(static_cast<size_t>(numel_of(sizes)));
  for (T& v : data) {
    if constexpr (std::is_floating_point<T>::value) {
      v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    } else {
      v = static_cast<T>(std::uniform_int_distribution<int>(-50, 50)(rng));
    }
  }
  return std::make_unique<OwnedTensor<T>>(sizes, std::move(data));
}

/// A zero-filled tensor of `sizes`.
template <typename T>
std::unique_ptr<OwnedTensor<T>> zeros(const std::vector<int64_t>& sizes) {
  return std::make_unique<OwnedTensor<T>>(sizes, std::vector<T>(static_cast<size_t>(numel_of(sizes))));
}

/// Calls the kernel registered under `name` with `args`.
inline Error call_kernel(const char* name, std::vector<EValue*> args) {
  KernelFn fn = find_kernel(name);
  if (fn == nullptr) {
    ADD_FAILURE() << "kernel " << name << " is not registered";
    return Error::NotFound;
  }
  KernelContext context;
  context.op_name = name;
  return fn(context, Span<EValue*>(args.data(), args.size()));
}

/// Offset in a contiguous tensor of shape `in` of the element that broadcasts to the flat
/// index `flat` of shape `out` (naive: unravel, right-align, size-1 dims read index 0).
inline int64_t broadcast_offset(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                int64_t flat) {
  std::vector<int64_t> coord(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coord[d] = flat % out[d];
    flat /= out[d];
  }
  int64_t offset = 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t c = in[d] == 1 ? 0 : coord[lead + d];
    offset = offset * in[d] + c;
  }
  return offset;
}

/// Base fixture: registers the portable kernels and clears the last error message.
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    clear_error_message();
  }
};

/// Asserts `err` is InvalidArgument and the last error message contains every substring.
inline void expect_invalid(Error err, std::initializer_list<const char*> substrings) {
  EXPECT_EQ(err, Error::InvalidArgument) << to_string(err);
  const std::string message = last_error_message();
  for (const char* s : substrings) {
    EXPECT_NE(message.find(s), std::string::npos) << "message '" << message << "' lacks '" << s << "'";
  }
}

}  // namespace testing
}  // namespace tern
