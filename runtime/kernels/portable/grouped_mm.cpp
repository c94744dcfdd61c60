// tern::grouped_mm(x [S, K] f32, w [E, K, N] f32, offsets [E] (i32 or i64), out [S, N]): the
// rows of x are cut into E consecutive groups by the running ends in `offsets` (group e is rows
// [offsets[e - 1], offsets[e]), group 0 from row 0), and each group is multiplied by its own
// matrix w[e]; rows after the last end are zeros. Mixture-of-experts layers sorted by expert
// (Hugging Face's grouped experts: transformers' grouped_mm_fallback, torch._grouped_mm). The
// offsets are data: ends that go backwards or past S fail the call, naming them.
#include <cstdint>
#include <cstring>

#include "runtime/kernels/portable/data_movement_args.h"
#include "runtime/kernels/portable/gemm.h"
#include "runtime/kernels/portable/group_ends.h"
#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"

namespace tern {
namespace portable {

Error grouped_mm(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::grouped_mm";
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(TensorView * x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(TensorView * w, tensor_arg(op, args, 1, "w"));
  TERN_ASSIGN_OR_RETURN(TensorView * offsets, tensor_arg(op, args, 2, "offsets"));
  TERN_ASSIGN_OR_RETURN(TensorView * out, tensor_arg(op, args, 3, "out"));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "w", *w, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *out, DType::F32));
  TERN_RETURN_IF_ERROR(dm::check_index_dtype(op, "offsets", *offsets));
  TERN_CHECK_OR_RETURN_ERROR(x->rank == 2 && w->rank == 3 && offsets->rank == 1 &&
                                 w->sizes[1] == x->sizes[1] && offsets->sizes[0] == w->sizes[0],
                             InvalidArgument,
                             "%s: expected x [S, K], w [E, K, N] and offsets [E], found ranks "
                             "%u, %u and %u (or sizes that disagree)",
                             op, x->rank, w->rank, offsets->rank);
  const int64_t s = x->sizes[0], k = x->sizes[1], e = w->sizes[0], n = w->sizes[2];
  const int64_t shape[] = {s, n};
  TERN_RETURN_IF_ERROR(check_shape(op, "out", *out, Span<const int64_t>(shape, 2)));
  const float* xs = x->data_as<const float>();
  const float* ws = w->data_as<const float>();
  float* ys = out->data_as<float>();
  TERN_RETURN_IF_ERROR(check_group_ends(op, "offsets", *offsets, s));
  int64_t start = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t end = dm::index_at(*offsets, static_cast<uint64_t>(g));
    if (end > start) {
      gemm_f32(false, false, end - start, n, k, 1.0f, xs + start * k, k, ws + g * k * n, n, 0.0f,
               ys + start * n, n);
    }
    start = end;
  }
  if (start < s) {
    std::memset(ys + start * n, 0, sizeof(float) * static_cast<size_t>((s - start) * n));
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
