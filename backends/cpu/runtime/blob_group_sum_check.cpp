#include "backends/cpu/runtime/blob_group_sum_check.h"

#include "backends/cpu/runtime/blob_reader.h"

namespace tern::cpu {

/// Op 48: 1 to 3 NHWC parts of whole groups of the output's C channels (same N, H, W), and the
/// weight's element count when params[0] says there is one.
Error check_group_sum(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const uint32_t weighted = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(weighted <= 1, InvalidProgram,
                             "cpu blob: node %u (group_sum): parameter 0 is %u, expected 0 (no "
                             "weight) or 1",
                             n, weighted);
  const uint32_t parts = node.num_inputs - weighted;
  TERN_CHECK_OR_RETURN_ERROR(parts >= 1 && parts <= 3, InvalidProgram,
                             "cpu blob: node %u (group_sum): %u inputs with%s a weight: expected "
                             "1 to 3 parts",
                             n, node.num_inputs, weighted ? "" : "out");
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(out.rank == 4 && out.dims[3] >= 1, InvalidProgram,
                             "cpu blob: node %u (group_sum): output value %u must be NHWC with "
                             "channels, found rank %u",
                             n, node.output, out.rank);
  const uint64_t c = out.dims[3];
  uint64_t grouped = 0;  // R * C: the parts' channels, each <= 2^31
  for (uint32_t i = 0; i < parts; ++i) {
    const BlobValue& x = v[node.inputs[i]];
    TERN_CHECK_OR_RETURN_ERROR(
        x.rank == 4 && x.dims[0] == out.dims[0] && x.dims[1] == out.dims[1] &&
            x.dims[2] == out.dims[2] && x.dims[3] >= c && x.dims[3] % c == 0,
        InvalidProgram,
        "cpu blob: node %u (group_sum): part %u (value %u) must be [%llu, %llu, %llu, R * %llu], "
        "found rank %u, last dim %llu",
        n, i, node.inputs[i], static_cast<unsigned long long>(out.dims[0]),
        static_cast<unsigned long long>(out.dims[1]), static_cast<unsigned long long>(out.dims[2]),
        static_cast<unsigned long long>(c), x.rank,
        static_cast<unsigned long long>(x.rank == 0 ? 0 : x.dims[x.rank - 1]));
    grouped += x.dims[3];
  }
  if (weighted == 0) return Error::Ok;
  const uint64_t want = out.dims[0] * grouped;  // <= 2^31 * 3 * 2^31: no overflow
  const uint64_t have = value_numel(v[node.inputs[parts]]);
  TERN_CHECK_OR_RETURN_ERROR(have == want, InvalidProgram,
                             "cpu blob: node %u (group_sum): the weight (value %u) has %llu "
                             "elements, expected N * R * C = %llu",
                             n, node.inputs[parts], static_cast<unsigned long long>(have),
                             static_cast<unsigned long long>(want));
  return Error::Ok;
}

}  // namespace tern::cpu
