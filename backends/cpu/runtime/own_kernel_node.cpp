#include "backends/cpu/runtime/own_kernel_node.h"

#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu {

static_assert(kPanelWidth == static_cast<int64_t>(kPackedPanelWidth),
              "the blob's packed weight layout is the kernel's");

Error run_own_kernel_node(const BlobPlan& plan, uint32_t n, float* const* addr,
                          pthreadpool_t pool) {
  const BlobNode& node = plan.nodes[n];
  switch (static_cast<NodeOp>(node.op)) {
    case NodeOp::PackedFullyConnected: {
      const int64_t out_features = node.params[0], in_features = node.params[1];
      GemmProblem p;
      p.m = static_cast<int64_t>(value_numel(plan.values[node.inputs[0]]) /
                                 static_cast<uint64_t>(in_features));
      p.n = out_features;
      p.k = in_features;
      p.a = addr[node.inputs[0]];
      p.lda = in_features;
      p.packed = addr[node.inputs[1]];
      p.c = addr[node.output];
      p.ldc = out_features;
      p.out_min = node.fparams[0];
      p.out_max = node.fparams[1];
      packed_gemm(p, pool);
      return Error::Ok;
    }
    default:
      break;
  }
  TERN_RETURN_ERROR(InvalidProgram, "cpu backend: node %u: op %u is not one of tern's kernels", n,
                    node.op);
}

}  // namespace tern::cpu
