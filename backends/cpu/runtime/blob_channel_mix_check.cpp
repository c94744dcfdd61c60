#include "backends/cpu/runtime/blob_channel_mix_check.h"

#include "backends/cpu/runtime/blob_reader.h"

namespace tern::cpu {

/// Op 49: x plain of rank 2 to 6 with d before its last dim, K = x's dim d and J in
/// 1..kMaxChannelMixWidth, w of J K elements, b (when given) of J, the softmax flag 0 or 1,
/// the output plain with x's dims but dim d J, or any dims of that element count.
Error check_channel_mix(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 1, 2));
  TERN_CHECK_OR_RETURN_ERROR(node.params[2] <= 1, InvalidProgram,
                             "cpu blob: node %u (channel_mix): softmax flag %u, expected 0 or 1",
                             n, node.params[2]);
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& y = v[node.output];
  const uint32_t d = node.params[0];
  const uint64_t j = node.params[1];
  TERN_CHECK_OR_RETURN_ERROR(x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 y.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (channel_mix): x (value %u) and the output "
                             "(value %u) must be plain",
                             n, node.inputs[0], node.output);
  TERN_CHECK_OR_RETURN_ERROR(x.rank >= 2 && d + 1 < x.rank, InvalidProgram,
                             "cpu blob: node %u (channel_mix): dim %u of a rank-%u x, expected a "
                             "dim before x's last",
                             n, d, x.rank);
  const uint64_t k = x.dims[d];
  TERN_CHECK_OR_RETURN_ERROR(
      k <= kMaxChannelMixWidth && j <= kMaxChannelMixWidth, InvalidProgram,
      "cpu blob: node %u (channel_mix): %llu inputs to %llu outputs, expected at most %llu each",
      n, static_cast<unsigned long long>(k), static_cast<unsigned long long>(j),
      static_cast<unsigned long long>(kMaxChannelMixWidth));
  const uint64_t expected = value_numel(x) / k * j;
  TERN_CHECK_OR_RETURN_ERROR(value_numel(y) == expected, InvalidProgram,
                             "cpu blob: node %u (channel_mix): the output (value %u) has %llu "
                             "elements, expected x's with dim %u %llu: %llu",
                             n, node.output, static_cast<unsigned long long>(value_numel(y)), d,
                             static_cast<unsigned long long>(j),
                             static_cast<unsigned long long>(expected));
  const uint64_t w = value_numel(v[node.inputs[1]]);
  TERN_CHECK_OR_RETURN_ERROR(w == j * k, InvalidProgram,
                             "cpu blob: node %u (channel_mix): the matrix (value %u) has %llu "
                             "elements, expected J * K = %llu",
                             n, node.inputs[1], static_cast<unsigned long long>(w),
                             static_cast<unsigned long long>(j * k));
  if (node.num_inputs < 3) return Error::Ok;
  const uint64_t b = value_numel(v[node.inputs[2]]);
  TERN_CHECK_OR_RETURN_ERROR(b == j, InvalidProgram,
                             "cpu blob: node %u (channel_mix): the bias (value %u) has %llu "
                             "elements, expected J = %llu",
                             n, node.inputs[2], static_cast<unsigned long long>(b),
                             static_cast<unsigned long long>(j));
  return Error::Ok;
}

}  // namespace tern::cpu
