// Scalar and list arguments of the data-movement kernels, checked: kind, range, dims wrapped
// like ATen. Every failure is InvalidArgument naming the op, the argument, expected and found.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern::portable::dm {

// The shared readers (kernel_args.h), under this family's names.
using portable::bool_arg;
using portable::int_arg;
using portable::string_equals;
using portable::value_arg;

/// The Int at `args[index]`, or `*present = false` when it is None.
Error optional_int_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                       bool* present, int64_t* value);

/// The Double (or Int, converted) at `args[index]`, or `*present = false` when it is None.
Error optional_double_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                          bool* present, double* value);

/// The IntList at `args[index]` (its data pointer is non-null when non-empty; at most
/// kMaxRank entries when `max_size` is kMaxRank). The span points into the Method's values.
Result<Span<const int64_t>> int_list_arg(const char* op, Span<EValue*> args, size_t index,
                                         const char* name, size_t max_size);

/// `dim` wrapped into [0, rank) like ATen (negative counts from the end; a rank-0 tensor
/// takes dims -1 and 0 as if it had rank 1, and gives 0).
Result<uint32_t> wrap_dim(const char* op, const char* name, int64_t dim, uint32_t rank);

/// InvalidArgument unless `t` has a whole number of bytes per element (not nf4), the dtypes
/// the data-movement kernels copy by element size.
Error check_byte_dtype(const char* op, const char* name, const TensorView& t);

/// InvalidArgument unless `t` is an i64 or i32 tensor (an index tensor).
Error check_index_dtype(const char* op, const char* name, const TensorView& t);

/// The arguments of gather and index_select, (x, dim, index, out).
struct IndexArgs {
  TensorView* x = nullptr;
  int64_t dim = 0;  ///< as given (the caller wraps it against x's rank)
  TensorView* index = nullptr;
  TensorView* out = nullptr;
};

/// Reads (x, dim, index, out), four arguments, and checks their kinds and dtypes: x of whole
/// bytes per element, out of x's dtype, index i64 or i32. The caller checks the shapes.
/// Pointers are owned by the Method.
Error index_args(const char* op, Span<EValue*> args, IndexArgs* out);

/// The spatial sizes of a 2-D upsampling, x [N, C, H, W] to out [N, C, OH, OW].
struct Upsample2dSizes {
  int64_t h = 0, w = 0, oh = 0, ow = 0;
};

/// Checks the shapes of a 2-D upsampling: x and out of rank 4, every spatial size > 0, out's
/// batch and channels those of x.
Error check_upsample2d(const char* op, const TensorView& x, const TensorView& out,
                       Upsample2dSizes* sizes);

/// ATen's input-per-output scale of an upsampled dim (compute_scales_value): 1 / scale
/// when `has_scale` and scale > 0, else in / out.
inline float upsample_scale(bool has_scale, double scale, int64_t in, int64_t out) {
  return has_scale && scale > 0.0 ? static_cast<float>(1.0 / scale)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

/// Element `i` of an i64 or i32 tensor as int64.
inline int64_t index_at(const TensorView& t, uint64_t i) {
  return t.dtype == DType::I64 ? static_cast<const int64_t*>(t.data)[i]
                               : static_cast<const int32_t*>(t.data)[i];
}

/// x seen around dim: `outer` slices (the product of the dims before dim), each of `size` rows
/// (dim's size) of `row_bytes` bytes (the dims after dim, times the element size).
struct DimRows {
  uint64_t outer = 1;
  int64_t size = 0;
  size_t row_bytes = 0;
};
DimRows dim_rows(const TensorView& x, uint32_t dim);

/// Checks that every element of the 0-D or 1-D int tensor `index` is in [0, size), size being
/// dim's: InvalidArgument naming the element, its value, the dim and the size.
Error check_index_range(const char* op, const TensorView& index, uint32_t dim, int64_t size);

}  // namespace tern::portable::dm
