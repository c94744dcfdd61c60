// Helpers for the elementwise kernel tests: tensors of any dtype over byte storage.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/core/evalue.h"
#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {

/// A tensor of any dtype over owned bytes, with its view and EValue. Hold by unique_ptr.
struct RawTensor {
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
  TensorView view;
  EValue value;

  RawTensor(DType dtype, std::vector<int64_t> s) : sizes(std::move(s)) {
    uint64_t n = 1;
    for (int64_t d : sizes) n *= static_cast<uint64_t>(d);
    bytes.resize(n * bits_per_element(dtype) / 8);
    view.dtype = dtype;
    view.rank = static_cast<uint32_t>(sizes.size());
    view.sizes = sizes.data();
    view.data = bytes.empty() ? nullptr : bytes.data();
    view.nbytes = bytes.size();
    value = EValue::from_tensor(&view);
  }
  RawTensor(const RawTensor&) = delete;
  RawTensor& operator=(const RawTensor&) = delete;

  template <typename T>
  T get(size_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void set(size_t i, T v) {
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
};

/// A RawTensor of `dtype` and `sizes` holding `values` stored as T.
template <typename T>
std::unique_ptr<RawTensor> raw(DType dtype, std::vector<int64_t> sizes, std::vector<T> values) {
  auto t = std::make_unique<RawTensor>(dtype, std::move(sizes));
  EXPECT_EQ(values.size() * sizeof(T), t->bytes.size());
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

/// A zero-filled RawTensor.
inline std::unique_ptr<RawTensor> raw_zeros(DType dtype, std::vector<int64_t> sizes) {
  return std::make_unique<RawTensor>(dtype, std::move(sizes));
}

}  // namespace testing
}  // namespace tern
