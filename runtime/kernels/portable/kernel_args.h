// Argument checking shared by the portable kernels: argument kinds, dtypes, shapes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace portable {

/// InvalidArgument unless `args.size()` is in [min_args, max_args]; the message names `op`.
Error check_num_args(const char* op, Span<EValue*> args, size_t min_args, size_t max_args);

/// The tensor at `args[index]`, checked: the EValue exists and is a tensor, the tensor is
/// contiguous, its sizes are non-negative and `nbytes` covers numel x element size (with
/// data non-null when non-empty). `name` names the argument in messages ("a", "out").
/// The pointer is owned by the Method (valid while the arguments are).
Result<TensorView*> tensor_arg(const char* op, Span<EValue*> args, size_t index,
                               const char* name);

/// InvalidArgument unless `t.dtype == expected`.
Error check_dtype(const char* op, const char* name, const TensorView& t, DType expected);

/// InvalidArgument unless `t`'s dtype is one of `allowed`.
Error check_dtype_in(const char* op, const char* name, const TensorView& t,
                     Span<const DType> allowed);

/// InvalidArgument unless `t`'s sizes equal `expected` exactly (rank and every size).
Error check_shape(const char* op, const char* name, const TensorView& t,
                  Span<const int64_t> expected);

/// The EValue at `args[index]`, checked present and non-null; InvalidArgument naming `op`,
/// the index and `name` otherwise. Owned by the Method.
Result<const EValue*> value_arg(const char* op, Span<EValue*> args, size_t index,
                                const char* name);

/// The Int at `args[index]`; InvalidArgument naming `op`/`name` when absent or another kind.
Result<int64_t> int_arg(const char* op, Span<EValue*> args, size_t index, const char* name);

/// The Bool at `args[index]`; InvalidArgument when absent or another kind.
Result<bool> bool_arg(const char* op, Span<EValue*> args, size_t index, const char* name);

/// The tensor at `args[index]` (checked as tensor_arg does), or null when the value is None;
/// InvalidArgument naming `op` and `name` for any other kind.
Result<TensorView*> optional_tensor_arg(const char* op, Span<EValue*> args, size_t index,
                                        const char* name);

/// True when `value` is a String equal to `expected` (exactly); false for any other kind.
bool string_equals(const EValue& value, const char* expected);

/// Bytes of one element of a byte-addressable dtype (0 for NF4).
inline size_t element_size(DType dtype) { return bits_per_element(dtype) / 8; }

}  // namespace portable
}  // namespace tern
