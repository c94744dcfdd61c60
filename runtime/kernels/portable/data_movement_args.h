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

/// The String at `args[index]` equals `expected` (exactly).
bool string_equals(const EValue& value, const char* expected);

/// `dim` wrapped into [0, rank) like ATen (negative counts from the end; a rank-0 tensor
/// takes dims -1 and 0 as if it had rank 1, and gives 0).
Result<uint32_t> wrap_dim(const char* op, const char* name, int64_t dim, uint32_t rank);

/// InvalidArgument unless `t` has a whole number of bytes per element (not nf4), the dtypes
/// the data-movement kernels copy by element size.
Error check_byte_dtype(const char* op, const char* name, const TensorView& t);

/// InvalidArgument unless `t` is an i64 or i32 tensor (an index tensor).
Error check_index_dtype(const char* op, const char* name, const TensorView& t);

/// Element `i` of an i64 or i32 tensor as int64.
inline int64_t index_at(const TensorView& t, uint64_t i) {
  return t.dtype == DType::I64 ? static_cast<const int64_t*>(t.data)[i]
                               : static_cast<const int32_t*>(t.data)[i];
}

}  // namespace tern::portable::dm
