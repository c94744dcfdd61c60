#include "backends/cpu/runtime/blob_attention_check.h"

#include <cmath>

#include "backends/cpu/runtime/blob_copy_checks.h"

namespace tern::cpu {
namespace {

uint64_t dim(const BlobValue& x, uint32_t from_end) { return x.dims[x.rank - from_end]; }

/// The product of x's dims before its last two (1 for rank 2; 0 below rank 2).
uint64_t leading(const BlobValue& x) {
  if (x.rank < 2) return 0;
  uint64_t p = 1;
  for (uint32_t d = 0; d + 2 < x.rank; ++d) p *= x.dims[d];  // values are checked: no overflow
  return p;
}

}  // namespace

Error check_attention(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t* q = node.params;
  const uint32_t flags = q[kAttentionFlags];
  const uint32_t mask_rank = q[kAttentionMaskBatchRank];
  const bool has_mask = node.num_inputs == 4;
  TERN_CHECK_OR_RETURN_ERROR(
      (flags & ~(kAttentionKTransposed | kAttentionEmptyRowsNan)) == 0, InvalidProgram,
      "cpu blob: node %u (attention): flags %u, expected bits %u (k transposed) and %u (empty "
      "rows NaN) only",
      n, flags, kAttentionKTransposed, kAttentionEmptyRowsNan);
  TERN_CHECK_OR_RETURN_ERROR(
      has_mask ? mask_rank <= kAttentionMaxMaskBatchRank : mask_rank == 0, InvalidProgram,
      "cpu blob: node %u (attention): mask batch rank %u, expected %s", n, mask_rank,
      has_mask ? "0..4" : "0 (no mask)");
  for (uint32_t i = kAttentionMaskBatchRank + 1; i < kNodeParams; ++i) {
    const bool used = i < kAttentionMaskBatch + mask_rank;
    TERN_CHECK_OR_RETURN_ERROR(used ? q[i] >= 1 && q[i] <= kMaxParam : q[i] == 0, InvalidProgram,
                               "cpu blob: node %u (attention): parameter %u is %u, expected %s",
                               n, i, q[i], used ? "1..2^30" : "0 (unused)");
  }
  TERN_CHECK_OR_RETURN_ERROR(std::isfinite(node.fparams[0]) && node.fparams[1] == 0.0f,
                             InvalidProgram,
                             "cpu blob: node %u (attention): scale %g and %g, expected a finite "
                             "scale and 0",
                             n, static_cast<double>(node.fparams[0]),
                             static_cast<double>(node.fparams[1]));
  const BlobValue& qv = v[node.inputs[0]];
  const BlobValue& kv = v[node.inputs[1]];
  const BlobValue& vv = v[node.inputs[2]];
  const BlobValue& out = v[node.output];
  const uint64_t heads = leading(qv);
  TERN_CHECK_OR_RETURN_ERROR(
      qv.rank >= 2 && kv.rank >= 2 && vv.rank >= 2 && out.rank >= 2 && leading(kv) == heads &&
          leading(vv) == heads && leading(out) == heads,
      InvalidProgram,
      "cpu blob: node %u (attention): q, k, v and the output (values %u, %u, %u, %u) must have "
      "rank 2..6 and the same product of the dims before their last two (the heads: %llu, %llu, "
      "%llu, %llu)",
      n, node.inputs[0], node.inputs[1], node.inputs[2], node.output,
      static_cast<unsigned long long>(heads), static_cast<unsigned long long>(leading(kv)),
      static_cast<unsigned long long>(leading(vv)), static_cast<unsigned long long>(leading(out)));
  // k and v are data values; q is f32, a data value or (since version 20) a constant.
  TERN_CHECK_OR_RETURN_ERROR(qv.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (attention): q (value %u) must be f32 (a data "
                             "value or, since version 20, a constant)",
                             n, node.inputs[0]);
  TERN_RETURN_IF_ERROR(check_f32_data_inputs(n, node, v, 3, 1));
  const bool kt = (flags & kAttentionKTransposed) != 0;
  const uint64_t l = dim(qv, 2), e = dim(qv, 1);
  const uint64_t s = kt ? dim(kv, 1) : dim(kv, 2);
  const uint64_t ke = kt ? dim(kv, 2) : dim(kv, 1);
  TERN_CHECK_OR_RETURN_ERROR(
      ke == e && dim(vv, 2) == s && dim(out, 2) == l && dim(out, 1) == dim(vv, 1), InvalidProgram,
      "cpu blob: node %u (attention): q [.., %llu, %llu], k%s [.., %llu, %llu], v [.., %llu, "
      "%llu] and the output [.., %llu, %llu] do not agree",
      n, static_cast<unsigned long long>(l), static_cast<unsigned long long>(e),
      kt ? " transposed" : "", static_cast<unsigned long long>(dim(kv, 2)),
      static_cast<unsigned long long>(dim(kv, 1)), static_cast<unsigned long long>(dim(vv, 2)),
      static_cast<unsigned long long>(dim(vv, 1)), static_cast<unsigned long long>(dim(out, 2)),
      static_cast<unsigned long long>(dim(out, 1)));
  TERN_CHECK_OR_RETURN_ERROR(q[kAttentionCausal] <= l, InvalidProgram,
                             "cpu blob: node %u (attention): causal period %u, expected 0 or "
                             "1..%llu (the query rows)",
                             n, q[kAttentionCausal], static_cast<unsigned long long>(l));
  if (!has_mask) return Error::Ok;
  const BlobValue& m = v[node.inputs[3]];
  TERN_CHECK_OR_RETURN_ERROR(m.rank == mask_rank + 2 &&
                                 m.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (attention): mask value %u has rank %u, expected "
                             "an f32 value of rank %u",
                             n, node.inputs[3], m.rank, mask_rank + 2);
  uint64_t product = 1;
  for (uint32_t d = 0; d < mask_rank; ++d) {
    const uint64_t b = q[kAttentionMaskBatch + d];
    product *= b;  // each <= 2^30, at most 4 of them: heads bound it below (checked next)
    TERN_CHECK_OR_RETURN_ERROR(m.dims[d] == b || m.dims[d] == 1, InvalidProgram,
                               "cpu blob: node %u (attention): mask dim %u is %llu, expected %llu "
                               "or 1",
                               n, d, static_cast<unsigned long long>(m.dims[d]),
                               static_cast<unsigned long long>(b));
    if (product > heads) break;
  }
  TERN_CHECK_OR_RETURN_ERROR(product == heads, InvalidProgram,
                             "cpu blob: node %u (attention): the mask's batch dims multiply to "
                             "%llu, expected the %llu heads",
                             n, static_cast<unsigned long long>(product),
                             static_cast<unsigned long long>(heads));
  TERN_CHECK_OR_RETURN_ERROR(dim(m, 1) == s && (dim(m, 2) == l || dim(m, 2) == 1),
                             InvalidProgram,
                             "cpu blob: node %u (attention): mask [.., %llu, %llu], expected "
                             "[.., %llu or 1, %llu]",
                             n, static_cast<unsigned long long>(dim(m, 2)),
                             static_cast<unsigned long long>(dim(m, 1)),
                             static_cast<unsigned long long>(l),
                             static_cast<unsigned long long>(s));
  return Error::Ok;
}

}  // namespace tern::cpu
