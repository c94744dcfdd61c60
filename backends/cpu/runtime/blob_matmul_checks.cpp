#include "backends/cpu/runtime/blob_matmul_checks.h"

#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

/// Op 26: a [..., M, K] and b [..., K, N] (or [..., N, K] transposed) of one rank with the same
/// batch dims, both data values; output [..., M, N].
Error check_batch_matmul(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
  TERN_CHECK_OR_RETURN_ERROR(node.params[0] <= 1, InvalidProgram,
                             "cpu blob: node %u (batch_matmul): transpose flag %u, expected 0 "
                             "or 1",
                             n, node.params[0]);
  const BlobValue& a = v[node.inputs[0]];
  const BlobValue& b = v[node.inputs[1]];
  // One of a and b is a data value (checked with every node's inputs); both are f32.
  TERN_CHECK_OR_RETURN_ERROR(a.layout != static_cast<uint32_t>(ValueLayout::Int64Plain) &&
                                 b.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (batch_matmul): a (value %u) and b (value %u) "
                             "must be f32 (data values, or since version 17 b and since "
                             "version 20 a a constant)",
                             n, node.inputs[0], node.inputs[1]);
  char da[128], db[128];
  bool same = a.rank == b.rank && a.rank >= 2;
  for (uint32_t d = 0; same && d + 2 < a.rank; ++d) same = a.dims[d] == b.dims[d];
  const bool trans = node.params[0] == 1;
  const uint64_t k = a.dims[a.rank - 1];
  const uint64_t bk = same ? b.dims[b.rank - (trans ? 1 : 2)] : 0;
  TERN_CHECK_OR_RETURN_ERROR(same && bk == k, InvalidProgram,
                             "cpu blob: node %u (batch_matmul): a (value %u) %s and b (value %u) "
                             "%s do not multiply%s (same rank >= 2, same batch dims, a's last "
                             "dim = b's %s)",
                             n, node.inputs[0], format_dims(a.dims, a.rank, da, sizeof(da)),
                             node.inputs[1], format_dims(b.dims, b.rank, db, sizeof(db)),
                             trans ? " transposed" : "", trans ? "last" : "second-to-last");
  uint64_t expect[kMaxDims];
  for (uint32_t d = 0; d < a.rank; ++d) expect[d] = a.dims[d];
  expect[a.rank - 1] = b.dims[b.rank - (trans ? 2 : 1)];
  return check_out_dims(n, node, v[node.output], expect, a.rank);
}

/// Op 46: E, K, N; x [S, K] plain, the packed weights' size, the ends an external [E] input
/// (their int layout is checked with every node's inputs), the output [S, N] plain.
Error check_grouped_matmul(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 3));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const uint64_t e = node.params[0], k = node.params[1], cols = node.params[2];
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& w = v[node.inputs[1]];
  const BlobValue& ends = v[node.inputs[2]];
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 2 && x.dims[1] == k &&
                                 x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 out.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (grouped_matmul): x (value %u) must be a plain "
                             "[S, %llu] f32 value and the output plain",
                             n, node.inputs[0], static_cast<unsigned long long>(k));
  uint64_t want_w = 0;
  TERN_CHECK_OR_RETURN_ERROR(
      checked_mul(e, packed_fc_floats(cols, k), &want_w) && value_numel(w) == want_w,
      InvalidProgram,
      "cpu blob: node %u (grouped_matmul): the packed weights (value %u) hold %llu floats, "
      "expected %llu (E %llu matrices [%llu, %llu])",
      n, node.inputs[1], static_cast<unsigned long long>(value_numel(w)),
      static_cast<unsigned long long>(want_w), static_cast<unsigned long long>(e),
      static_cast<unsigned long long>(k), static_cast<unsigned long long>(cols));
  TERN_CHECK_OR_RETURN_ERROR(
      ends.kind == static_cast<uint32_t>(ValueKind::ExternalInput) && ends.rank == 1 &&
          ends.dims[0] == e,
      InvalidProgram,
      "cpu blob: node %u (grouped_matmul): the ends (value %u) must be an external [%llu] input",
      n, node.inputs[2], static_cast<unsigned long long>(e));
  const uint64_t want[2] = {x.dims[0], cols};
  return check_out_dims(n, node, out, want, 2);
}

}  // namespace tern::cpu
