// Helpers shared by the reduction, normalisation and attention kernels: scalar arguments,
// dim normalisation, and the layout of a reduction over a set of dims.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"
#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/kernel_args.h"

namespace tern {
namespace portable {
namespace reduction {

// The shared readers (kernel_args.h), under this family's names.
using portable::bool_arg;
using portable::int_arg;
using portable::optional_tensor_arg;

/// The Double (or Int, converted) at `args[index]`; InvalidArgument otherwise.
Result<double> double_arg(const char* op, Span<EValue*> args, size_t index, const char* name);

/// True when `args[index]` is None (false for any other kind). The caller checked the count.
bool is_none_arg(Span<EValue*> args, size_t index);

/// The IntList at `args[index]` (points into the Method's values); InvalidArgument otherwise.
Result<Span<const int64_t>> int_list_arg(const char* op, Span<EValue*> args, size_t index,
                                         const char* name);

/// `dim` normalised against `rank` like ATen: in [-rank, rank) (a rank-0 tensor accepts -1
/// and 0, both meaning "the whole tensor", stored as 0). InvalidArgument naming op and range.
Error normalize_dim(const char* op, const char* name, int64_t dim, uint32_t rank, uint32_t* out);

/// A tensor viewed as [outer, size, inner] around one dim (size 1 for a rank-0 tensor).
struct DimSplit {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

/// The [outer, size, inner] split of `shape` around the normalised dim `dim`.
DimSplit split_at_dim(Span<const int64_t> shape, uint32_t dim);

/// Checks that `normalized_shape` (1 to rank entries) equals the trailing sizes of `x` and
/// returns x viewed as [rows, cols] with cols the product of those sizes. InvalidArgument
/// naming op, expected and found otherwise.
Error normalized_rows(const char* op, const TensorView& x, Span<const int64_t> normalized_shape,
                      int64_t* rows, int64_t* cols);

/// Checks an optional per-feature tensor (weight, bias): f32 and exactly `shape`. Ok for null.
Error check_optional_param(const char* op, const char* name, const TensorView* t,
                           Span<const int64_t> shape);

/// The trailing arguments of layer_norm, rms_norm and group_norm: (x, <the op's own
/// argument>, weight?, [bias?,] eps, out).
struct NormArgs {
  TensorView* weight = nullptr;  ///< null when None
  TensorView* bias = nullptr;    ///< null when None or when the op takes no bias
  double eps = 0.0;
  TensorView* out = nullptr;
};

/// Reads weight? (a tensor or None) at args[first], bias? at args[first + 1] when
/// `with_bias`, then eps (a Double or Int; None gives *eps_if_none when that is non-null and
/// is refused otherwise) and out; then checks that x and out are f32. The caller checked the
/// argument count and read x and its own arguments before `first`. Pointers are owned by the
/// Method.
Error norm_args(const char* op, Span<EValue*> args, size_t first, bool with_bias,
                const double* eps_if_none, const TensorView& x, NormArgs* out);

/// The shape checks of layer_norm and rms_norm: x viewed as [rows, cols] over
/// `normalized_shape` (normalized_rows), weight and bias (when present) of that shape, out of
/// x's shape.
Error check_row_norm(const char* op, const TensorView& x, Span<const int64_t> normalized_shape,
                     const NormArgs& a, int64_t* rows, int64_t* cols);

/// Which dims a reduction reduces, and the input layout regrouped for the loops: runs of
/// adjacent dims of one kind (kept or reduced) are merged, size-1 dims are dropped.
struct ReducePlan {
  bool reduced[kMaxRank] = {};  ///< per input dim (rank 0: nothing)
  FixedShape out_shape;         ///< with or without the kept size-1 dims, per keepdim
  uint64_t out_numel = 1;
  uint64_t reduce_numel = 1;       ///< elements folded into each output element
  bool empty_reduced_dim = false;  ///< some reduced dim has size 0

  // Merged groups, outermost first. Strides are in input elements.
  uint32_t kept_rank = 0;
  int64_t kept_sizes[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  uint32_t red_rank = 0;
  int64_t red_sizes[kMaxRank] = {};
  int64_t red_strides[kMaxRank] = {};
  /// The innermost non-trivial input dim is kept: output elements come in contiguous runs of
  /// kept_sizes[kept_rank - 1] that read contiguous input. Otherwise the innermost merged
  /// reduced group has stride 1.
  bool inner_kept = false;
};

/// The plan of reducing `x` over `dims` (empty: every dim; negatives normalised; duplicates
/// are InvalidArgument naming op) with or without keepdim.
Error make_reduce_plan(const char* op, const TensorView& x, Span<const int64_t> dims, bool keepdim,
                       ReducePlan* plan);

/// Walks the offsets of a multi-index over `rank` dims of `sizes`/`strides` in row-major
/// order (last dim fastest).
struct OffsetWalker {
  uint32_t rank = 0;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t index[kMaxRank] = {};
  int64_t offset = 0;

  OffsetWalker(uint32_t r, const int64_t* s, const int64_t* st) : rank(r), sizes(s), strides(st) {}
  /// Moves to the next multi-index (wrapping to zero after the last).
  void next() {
    for (uint32_t d = rank; d-- > 0;) {
      ++index[d];
      offset += strides[d];
      if (index[d] < sizes[d]) return;
      offset -= strides[d] * index[d];
      index[d] = 0;
    }
  }
};

/// Sum of `n` floats in double with four independent partial sums.
inline double sum_f64(const float* x, int64_t n) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += x[i];
    a1 += x[i + 1];
    a2 += x[i + 2];
    a3 += x[i + 3];
  }
  for (; i < n; ++i) a0 += x[i];
  return (a0 + a1) + (a2 + a3);
}

/// Mean and biased variance of `n` floats (two passes in double); n > 0.
inline void mean_var_f64(const float* x, int64_t n, double* mean, double* var) {
  const double m = sum_f64(x, n) / static_cast<double>(n);
  double a0 = 0, a1 = 0;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const double d0 = x[i] - m;
    const double d1 = x[i + 1] - m;
    a0 += d0 * d0;
    a1 += d1 * d1;
  }
  for (; i < n; ++i) a0 += (x[i] - m) * (x[i] - m);
  *mean = m;
  *var = (a0 + a1) / static_cast<double>(n);
}

}  // namespace reduction
}  // namespace portable
}  // namespace tern
