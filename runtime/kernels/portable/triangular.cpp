// tern::triu(x, diagonal, out) and tern::tril(x, diagonal, out): the upper / lower triangle
// of the last two dims, zeros elsewhere (all dtypes: zero is all-zero bytes).
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

using namespace dm;  // the data-movement helpers
namespace {

Error triangle(const char* op, bool upper, Span<EValue*> args) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 3, 3));
  TERN_ASSIGN_OR_RETURN(TensorView* x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(const int64_t diagonal, int_arg(op, args, 1, "diagonal"));
  TERN_ASSIGN_OR_RETURN(TensorView* out, tensor_arg(op, args, 2, "out"));
  TERN_RETURN_IF_ERROR(check_byte_dtype(op, "x", *x));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(x->rank >= 2, InvalidArgument,
                             "%s: x: expected rank >= 2 (a matrix or batch of matrices), found %u",
                             op, x->rank);
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, x->shape()));
  const int64_t rows = x->sizes[x->rank - 2];
  const int64_t cols = x->sizes[x->rank - 1];
  const uint64_t numel = x->numel();
  if (numel == 0) return Error::Ok;
  const uint64_t matrices = numel / static_cast<uint64_t>(rows * cols);
  const size_t es = element_size(x->dtype);
  const uint8_t* src = static_cast<const uint8_t*>(x->data);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  // Clamp before adding so that extreme diagonals cannot overflow.
  const int64_t diag = diagonal < -rows - 1 ? -rows - 1 : diagonal > cols + 1 ? cols + 1 : diagonal;
  for (uint64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i, src += cols * es, dst += cols * es) {
      // Kept columns: triu [i + diag, cols), tril [0, i + diag + 1).
      int64_t lo = upper ? i + diag : 0;
      int64_t hi = upper ? cols : i + diag + 1;
      lo = lo < 0 ? 0 : lo > cols ? cols : lo;
      hi = hi < lo ? lo : hi > cols ? cols : hi;
      if (lo > 0) std::memset(dst, 0, static_cast<size_t>(lo) * es);
      if (hi > lo && dst != src) {
        std::memmove(dst + lo * es, src + lo * es, static_cast<size_t>(hi - lo) * es);
      }
      if (hi < cols) std::memset(dst + hi * es, 0, static_cast<size_t>(cols - hi) * es);
    }
  }
  return Error::Ok;
}

}  // namespace

Error triu(KernelContext& /*context*/, Span<EValue*> args) {
  return triangle("tern::triu", true, args);
}

Error tril(KernelContext& /*context*/, Span<EValue*> args) {
  return triangle("tern::tril", false, args);
}

}  // namespace portable
}  // namespace tern
