// Scalar and list arguments of the linear-algebra, convolution and pooling kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern::portable {

/// The Double (or Int, converted) at `args[index]`.
Result<double> number_arg(const char* op, Span<EValue*> args, size_t index, const char* name);

/// Reads a pair of spatial parameters (stride, padding, ...) for `dims` spatial dims (1 or 2)
/// from the IntList (or Int) at `args[index]` into out[0..dims): a list of `dims` entries, or
/// one entry repeated (as ATen expands). An empty list gives `empty_default` when it is
/// non-null (max_pool2d's stride), and is an error otherwise. Every entry must be >= min_value.
Error spatial_arg(const char* op, Span<EValue*> args, size_t index, const char* name,
                  size_t dims, int64_t min_value, const int64_t* empty_default, int64_t* out);

/// True when the elements of two non-empty f32 tensors share bytes.
bool f32_overlap(const TensorView& a, const TensorView& b);

/// InvalidArgument naming `op` when `out` shares bytes with `in` (named `name`).
Error check_no_overlap(const char* op, const TensorView& out, const TensorView& in,
                       const char* name);

/// InvalidArgument naming `op`/`name` unless `t` is f32 with rank in [min_rank, max_rank].
Error check_f32_rank(const char* op, const char* name, const TensorView& t, uint32_t min_rank,
                     uint32_t max_rank);

}  // namespace tern::portable
