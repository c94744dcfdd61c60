// gather's and scatter's shared pieces: the index's shape checked against x's, and a walk over
// the index's elements in row-major order giving, for each, where it lands in a contiguous
// tensor of x's shape (the element's own coordinates, with dim's replaced by the index value).
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor_view.h"
#include "runtime/kernels/portable/strided_copy.h"

namespace tern::portable::dm {

/// InvalidArgument unless `index` has x's rank (ATen also takes both of rank 0) and no dim but
/// `dim` larger than x's; the message names `op`, the dim and both shapes.
Error check_index_within(const char* op, const TensorView& x, const TensorView& index,
                         uint32_t dim);

/// InvalidArgument naming element `i` unless every element of `index` is in [0, size).
Error check_index_values(const char* op, const TensorView& index, uint32_t dim, int64_t size);

/// Index's elements in row-major order: offset(v) is where element i with index value v lands in
/// a contiguous tensor of x's shape (in elements); next() moves to element i + 1.
class IndexWalk {
 public:
  IndexWalk(const TensorView& x, const TensorView& index, uint32_t dim);
  int64_t offset(int64_t v) const { return base_ + v * dim_stride_; }
  void next();

 private:
  const TensorView& index_;
  uint32_t dim_;
  int64_t strides_[kMaxRank] = {};
  int64_t coord_[kMaxRank] = {};
  int64_t dim_stride_ = 0;
  int64_t base_ = 0;  // the offset of the current coordinates with dim's left out
};

}  // namespace tern::portable::dm
