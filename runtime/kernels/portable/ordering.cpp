// tern::argsort(x, dim, descending, out i64) and tern::topk_indices(x, k, dim, largest, out
// i64): the positions along dim of x's values in order, smallest first (largest first when
// descending / largest). Ties keep their index order (a stable sort); NaN counts as larger than
// every number, as in ATen. The values themselves are a gather of x by these (the exporter
// emits tern::gather for them).
//
// argsort: a heap sort of the positions by (value, position), in the output row itself, so
// the result is the stable order without scratch memory. topk_indices: k selection passes,
// each picking the next position in that order after the previous pick (O(size * k)).
#include <cstdint>

#include "runtime/kernels/portable/broadcast.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {
namespace {

/// Whether value a (at position i) comes before value b (at position j) in the ascending order:
/// NaN after every number, ties by position.
template <typename T>
inline bool before(T a, int64_t i, T b, int64_t j) {
  const bool an = a != a, bn = b != b;
  if (an != bn) return bn;      // the number comes before the NaN
  if (!an && a != b) return a < b;
  return i < j;                 // equal (or both NaN): by position
}

/// `descending` reverses the value order but keeps ties by position.
template <typename T>
inline bool ordered(const T* row, int64_t stride, int64_t i, int64_t j, bool descending) {
  const T a = row[i * stride], b = row[j * stride];
  const bool an = a != a, bn = b != b;
  if (an == bn && (an || a == b)) return i < j;
  return descending ? before(b, j, a, i) : before(a, i, b, j);
}

/// Heap sort of the positions p[0], p[stride], .. (n of them, into row, `stride` apart: the
/// output row has the input row's layout) into `ordered` order.
template <typename T>
void heap_sort(const T* row, int64_t* p, int64_t stride, int64_t n, bool descending) {
  auto at = [&](int64_t i) -> int64_t& { return p[i * stride]; };
  auto sift = [&](int64_t root, int64_t end) {
    while (true) {
      int64_t child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && ordered(row, stride, at(child), at(child + 1), descending)) ++child;
      if (!ordered(row, stride, at(root), at(child), descending)) return;
      const int64_t t = at(root);
      at(root) = at(child);
      at(child) = t;
      root = child;
    }
  };
  for (int64_t i = 0; i < n; ++i) at(i) = i;
  for (int64_t start = n / 2 - 1; start >= 0; --start) sift(start, n);
  for (int64_t end = n - 1; end > 0; --end) {
    const int64_t t = at(0);
    at(0) = at(end);
    at(end) = t;
    sift(0, end);
  }
}

template <typename T>
void argsort_loop(const T* x, int64_t* out, const reduction::DimSplit& s, bool descending) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t in = 0; in < s.inner; ++in) {
      const int64_t base = o * s.size * s.inner + in;
      heap_sort(x + base, out + base, s.inner, s.size, descending);
    }
  }
}

template <typename T>
void topk_loop(const T* x, int64_t* out, const reduction::DimSplit& s, int64_t k, bool largest) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t in = 0; in < s.inner; ++in) {
      const T* row = x + o * s.size * s.inner + in;
      int64_t* dst = out + o * k * s.inner + in;
      int64_t prev = -1;
      for (int64_t r = 0; r < k; ++r) {
        int64_t best = -1;
        for (int64_t i = 0; i < s.size; ++i) {
          // Candidates come after the previous pick in the order.
          if (prev >= 0 && !ordered(row, s.inner, prev, i, largest)) continue;
          if (best < 0 || ordered(row, s.inner, i, best, largest)) best = i;
        }
        dst[r * s.inner] = best;
        prev = best;
      }
    }
  }
}

constexpr DType kOrderable[] = {DType::F32, DType::I32, DType::I64};

}  // namespace

Error argsort(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::argsort";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 1, "dim"));
  TERN_ASSIGN_OR_RETURN(const bool descending, bool_arg(op, args, 2, "descending"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *x, Span<const DType>(kOrderable)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::I64));
  uint32_t dim = 0;
  TERN_RETURN_IF_ERROR(reduction::normalize_dim(op, "dim", raw_dim, x->rank, &dim));
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  if (x->numel() == 0) return Error::Ok;
  const reduction::DimSplit s = reduction::split_at_dim(x->shape(), dim);
  switch (x->dtype) {
    case DType::F32:
      argsort_loop(x->data_as<const float>(), out->data_as<int64_t>(), s, descending);
      break;
    case DType::I32:
      argsort_loop(x->data_as<const int32_t>(), out->data_as<int64_t>(), s, descending);
      break;
    default:
      argsort_loop(x->data_as<const int64_t>(), out->data_as<int64_t>(), s, descending);
      break;
  }
  return Error::Ok;
}

Error topk_indices(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::topk_indices";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 5, 5));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t k, int_arg(op, args, 1, "k"));
  TERN_ASSIGN_OR_RETURN(const int64_t raw_dim, int_arg(op, args, 2, "dim"));
  TERN_ASSIGN_OR_RETURN(const bool largest, bool_arg(op, args, 3, "largest"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 4, "out"));
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *x, Span<const DType>(kOrderable)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::I64));
  uint32_t dim = 0;
  TERN_RETURN_IF_ERROR(reduction::normalize_dim(op, "dim", raw_dim, x->rank, &dim));
  const int64_t size = x->rank == 0 ? 1 : x->sizes[dim];
  TERN_CHECK_OR_RETURN_ERROR(k >= 0 && k <= size, InvalidArgument,
                             "%s: k is %lld, expected 0..%lld (the size of dim %u)", op,
                             static_cast<long long>(k), static_cast<long long>(size), dim);
  FixedShape expected;
  expected.rank = x->rank;
  for (uint32_t d = 0; d < x->rank; ++d) expected.sizes[d] = d == dim ? k : x->sizes[d];
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, expected.span()));
  if (out->numel() == 0) return Error::Ok;
  const reduction::DimSplit s = reduction::split_at_dim(x->shape(), dim);
  switch (x->dtype) {
    case DType::F32:
      topk_loop(x->data_as<const float>(), out->data_as<int64_t>(), s, k, largest);
      break;
    case DType::I32:
      topk_loop(x->data_as<const int32_t>(), out->data_as<int64_t>(), s, k, largest);
      break;
    default:
      topk_loop(x->data_as<const int64_t>(), out->data_as<int64_t>(), s, k, largest);
      break;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
