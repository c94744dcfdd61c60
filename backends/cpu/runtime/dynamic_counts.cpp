#include "backends/cpu/runtime/dynamic_counts.h"

#include "backends/cpu/runtime/blob_dynamic_checks.h"

namespace tern::cpu {
namespace {

/// The elements of one index of v's dynamic dim (the product of its other dims).
uint64_t row_elements(const BlobValue& v) {
  const uint64_t size = dynamic_bound(v);
  return size == 0 ? 0 : value_numel(v) / size;
}

}  // namespace

Error propagate_dynamic_counts(const BlobPlan& plan, uint64_t* numel) {
  for (uint32_t n = 0; n < plan.header.num_nodes; ++n) {
    const BlobNode& node = plan.nodes[n];
    const BlobValue& out = plan.values[node.output];
    if (!is_dynamic_value(out)) continue;
    uint64_t actual = 0;
    bool found = false;
    for (uint32_t i = 0; i < node.num_inputs; ++i) {
      const uint32_t id = node.inputs[i];
      const BlobValue& in = plan.values[id];
      if (!is_dynamic_value(in)) continue;
      const uint64_t per = row_elements(in);
      const uint64_t size = per == 0 ? 0 : numel[id] / per;
      TERN_CHECK_OR_RETURN_ERROR(!found || size == actual, InvalidArgument,
                                 "cpu backend: node %u (op %u): input %u (value %u) varies to "
                                 "%llu in its dynamic dim, an earlier input to %llu; they must "
                                 "agree",
                                 n, node.op, i, id, static_cast<unsigned long long>(size),
                                 static_cast<unsigned long long>(actual));
      actual = size;
      found = true;
    }
    // parse_blob: a dynamic output has a dynamic input, and actual <= the bound.
    numel[node.output] = actual * row_elements(out);
  }
  return Error::Ok;
}

}  // namespace tern::cpu
