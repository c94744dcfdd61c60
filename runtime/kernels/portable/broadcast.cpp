#include "runtime/kernels/portable/broadcast.h"

namespace tern {
namespace portable {

Error broadcast_shapes(const char* op, Span<const int64_t> a, Span<const int64_t> b,
                       FixedShape* out) {
  const size_t rank = a.size() > b.size() ? a.size() : b.size();
  char sa[160];
  char sb[160];
  TERN_CHECK_OR_RETURN_ERROR(rank <= kMaxRank, InvalidArgument,
                             "%s: broadcast rank %zu exceeds the maximum %zu", op, rank, kMaxRank);
  out->rank = static_cast<uint32_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    // i counts dims from the right.
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t d;
    if (da == db || db == 1) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else {
      TERN_RETURN_ERROR(InvalidArgument,
                        "%s: shapes %s and %s do not broadcast (dim %zu from the right: %lld vs "
                        "%lld)",
                        op, format_shape(a, sa, sizeof(sa)), format_shape(b, sb, sizeof(sb)), i,
                        static_cast<long long>(da), static_cast<long long>(db));
    }
    out->sizes[rank - 1 - i] = d;
  }
  return Error::Ok;
}

void broadcast_strides(Span<const int64_t> in, Span<const int64_t> out, int64_t* strides) {
  const size_t rank = out.size();
  const size_t lead = rank - in.size();
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    if (i < lead) {
      strides[i] = 0;
      continue;
    }
    const int64_t size = in[i - lead];
    strides[i] = (size == 1 && out[i] != 1) ? 0 : stride;
    stride *= size;
  }
}

void make_broadcast_plan(Span<const int64_t> out, const Span<const int64_t>* inputs,
                         size_t num_inputs, BroadcastPlan* plan) {
  int64_t full[kMaxBroadcastInputs][kMaxRank];
  for (size_t k = 0; k < num_inputs; ++k) broadcast_strides(inputs[k], out, full[k]);
  plan->num_inputs = num_inputs;
  plan->numel = 1;
  for (int64_t s : out) plan->numel *= static_cast<uint64_t>(s);
  uint32_t rank = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;  // size-1 dims step nowhere
    bool merge = rank > 0;
    for (size_t k = 0; merge && k < num_inputs; ++k) {
      merge = plan->strides[k][rank - 1] == full[k][d] * out[d];
    }
    if (merge) {
      plan->sizes[rank - 1] *= out[d];
      for (size_t k = 0; k < num_inputs; ++k) plan->strides[k][rank - 1] = full[k][d];
    } else {
      plan->sizes[rank] = out[d];
      for (size_t k = 0; k < num_inputs; ++k) plan->strides[k][rank] = full[k][d];
      ++rank;
    }
  }
  if (rank == 0) {  // a single element
    plan->sizes[0] = 1;
    for (size_t k = 0; k < num_inputs; ++k) plan->strides[k][0] = 0;
    rank = 1;
  }
  plan->rank = rank;
}

}  // namespace portable
}  // namespace tern
