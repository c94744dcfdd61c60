// Byte sizes of tensor values, shared by the validator, the planner and the JSON reader
// (internal to tools/compiler).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace tern::compiler {

/// Product of `sizes` into *numel; false when a size is negative or the product overflows.
inline bool shape_numel(const std::vector<int64_t>& sizes, uint64_t* numel) {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0 || !checked_mul(n, static_cast<uint64_t>(s), &n)) return false;
  }
  *numel = n;
  return true;
}

/// Bytes of a tensor of `dtype` and `sizes` into *nbytes; false on a negative size or overflow.
inline bool shape_nbytes(DType dtype, const std::vector<int64_t>& sizes, uint64_t* nbytes) {
  uint64_t numel;
  return shape_numel(sizes, &numel) && dtype_nbytes(dtype, numel, nbytes);
}

/// "[2, 3]" for error messages.
inline std::string shape_string(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

}  // namespace tern::compiler
