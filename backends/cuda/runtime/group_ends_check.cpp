#include "backends/cuda/runtime/group_ends_check.h"

namespace tern::cuda {

Error check_group_ends_args(const BlobPlan& plan, Span<EValue*> args) {
  for (uint32_t i = 0; i < plan.header.num_nodes; ++i) {
    const BlobNode& n = plan.nodes[i];
    if (n.op != static_cast<uint32_t>(NodeOp::GroupedMatmul) &&
        n.op != static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
      continue;
    }
    const BlobValue& ends = plan.values[n.inputs[2]];
    if (ends.kind != static_cast<uint32_t>(ValueKind::ExternalInput)) continue;
    TERN_CHECK_OR_RETURN_ERROR(ends.arg < args.size() && args[ends.arg] != nullptr &&
                                   args[ends.arg]->is_tensor(),
                               InvalidArgument, "cuda backend: node %u (%s): argument %u (the "
                               "group ends) is not a tensor", i, node_op_name(n.op), ends.arg);
    const TensorView& t = args[ends.arg]->to_tensor();
    const bool i64 = ends.dtype == static_cast<uint32_t>(ValueDType::I64);
    const uint64_t count = ends.dims[0];
    TERN_CHECK_OR_RETURN_ERROR(t.data != nullptr &&
                                   t.dtype == (i64 ? DType::I64 : DType::I32) &&
                                   t.nbytes >= count * (i64 ? 8 : 4),
                               InvalidArgument, "cuda backend: node %u (%s): argument %u: %llu "
                               "%s group ends expected", i, node_op_name(n.op), ends.arg,
                               static_cast<unsigned long long>(count), i64 ? "i64" : "i32");
    const int64_t rows = static_cast<int64_t>(plan.values[n.inputs[0]].dims[0]);
    int64_t start = 0;
    for (uint64_t e = 0; e < count; ++e) {
      const int64_t end = i64 ? static_cast<const int64_t*>(t.data)[e]
                              : static_cast<const int32_t*>(t.data)[e];
      TERN_CHECK_OR_RETURN_ERROR(end >= start && end <= rows, InvalidArgument,
                                 "cuda backend: node %u (%s): ends[%llu] is %lld, expected "
                                 "%lld..%lld (the ends must not go backwards nor past the %lld "
                                 "rows)", i, node_op_name(n.op),
                                 static_cast<unsigned long long>(e), static_cast<long long>(end),
                                 static_cast<long long>(start), static_cast<long long>(rows),
                                 static_cast<long long>(rows));
      start = end;
    }
  }
  return Error::Ok;
}

}  // namespace tern::cuda
