#include "backends/vulkan/runtime/dispatch_plan.h"

namespace tern::vulkan {
namespace {

/// `count` workgroups of a 1-D dispatch, folded into x and y.
Error fold(uint64_t count, const uint32_t max_groups[3], uint32_t index, const char* op,
           Dispatch* out) {
  if (count == 0) count = 1;
  const uint64_t x = count < max_groups[0] ? count : max_groups[0];
  const uint64_t y = (count + x - 1) / x;
  if (y > max_groups[1]) {
    TERN_RETURN_ERROR(DelegateInvalidCompatibility,
                      "vulkan: node %u (%s): %llu workgroups exceed the device's %u x %u",
                      index, op, static_cast<unsigned long long>(count), max_groups[0],
                      max_groups[1]);
  }
  out->groups[0] = static_cast<uint32_t>(x);
  out->groups[1] = static_cast<uint32_t>(y);
  out->groups[2] = 1;
  return Error::Ok;
}

}  // namespace

Error plan_dispatch(const BlobPlan& plan, uint32_t index, const uint32_t max_groups[3],
                    Dispatch* out) {
  const BlobNode& n = plan.nodes[index];
  const int32_t* p = n.params;
  const uint64_t wg = plan.header.workgroup_size;
  const uint64_t out_numel = value_numel(plan.values[n.output]);
  const char* name = node_op_name(n.op);
  auto threads = [&](ShaderId s, uint64_t count) {
    out->shader = s;
    return fold((count + wg - 1) / wg, max_groups, index, name, out);
  };
  auto rows = [&](ShaderId s, uint64_t count) {  // one workgroup per row
    out->shader = s;
    return fold(count, max_groups, index, name, out);
  };
  switch (static_cast<NodeOp>(n.op)) {
    case NodeOp::MatMul: {
      out->shader = ShaderId::MatmulTiled;
      const uint64_t t = 4 * uint64_t{plan.header.matmul_tile};  // matmul_tiled.comp's BLOCK
      const uint64_t gx = (static_cast<uint64_t>(p[2]) + t - 1) / t;
      const uint64_t gy = (static_cast<uint64_t>(p[1]) + t - 1) / t;
      const uint64_t gz = static_cast<uint64_t>(p[0]);
      if (gx > max_groups[0] || gy > max_groups[1] || gz > max_groups[2]) {
        TERN_RETURN_ERROR(DelegateInvalidCompatibility,
                          "vulkan: node %u (matmul): %llu x %llu x %llu workgroups exceed the "
                          "device's %u x %u x %u", index, static_cast<unsigned long long>(gx),
                          static_cast<unsigned long long>(gy),
                          static_cast<unsigned long long>(gz), max_groups[0], max_groups[1],
                          max_groups[2]);
      }
      out->groups[0] = static_cast<uint32_t>(gx);
      out->groups[1] = static_cast<uint32_t>(gy);
      out->groups[2] = static_cast<uint32_t>(gz);
      return Error::Ok;
    }
    case NodeOp::Elementwise: return threads(ShaderId::Elementwise, out_numel);
    case NodeOp::Unary: return threads(ShaderId::Unary, out_numel);
    case NodeOp::Softmax:
      return rows(ShaderId::Softmax, static_cast<uint64_t>(p[0]) * static_cast<uint64_t>(p[2]));
    case NodeOp::LayerNorm: return rows(ShaderId::LayerNorm, static_cast<uint64_t>(p[0]));
    case NodeOp::Conv: {
      // conv.comp: one invocation per output voxel and block of 4 output channels when the
      // channels per group are a multiple of 4, else per output element.
      const bool blocked = (p[4] / p[15]) % 4 == 0;
      return threads(ShaderId::Conv, blocked ? out_numel / 4 : out_numel);
    }
    case NodeOp::ConvTranspose: return threads(ShaderId::ConvTranspose, out_numel);
    case NodeOp::Cumsum:  // cumsum.comp: one invocation per (outer, inner) lane
      return threads(ShaderId::Cumsum, static_cast<uint64_t>(p[0]) * static_cast<uint64_t>(p[2]));
    case NodeOp::ChannelAffine: return threads(ShaderId::ChannelAffine, out_numel);
    case NodeOp::Pool2d: return threads(ShaderId::Pool2d, out_numel);
    case NodeOp::Copy: {
      uint64_t count = 1;
      for (int d = 0; d < 6; ++d) count *= static_cast<uint64_t>(p[1 + d]);
      return threads(ShaderId::StridedCopy, count);
    }
    case NodeOp::Reduce: return threads(ShaderId::Reduce, out_numel);
    case NodeOp::Embedding: return threads(ShaderId::Embedding, out_numel);
    case NodeOp::Attention:
      return rows(ShaderId::Attention, static_cast<uint64_t>(p[0]) * static_cast<uint64_t>(p[1]));
    case NodeOp::Pad: return threads(ShaderId::Pad, out_numel);
    case NodeOp::Upsample2d: return threads(ShaderId::Upsample2d, out_numel);
    case NodeOp::QuantLinear: {
      if (p[0] <= kQuantGemvMaxRows) {  // quant_gemv.comp: one workgroup per output column
        return rows(ShaderId::QuantGemv, static_cast<uint64_t>(p[1]));
      }
      out->shader = ShaderId::QuantGemm;  // quant_gemm.comp: matmul_tiled.comp's blocks
      const uint64_t t = 4 * uint64_t{plan.header.matmul_tile};
      const uint64_t gx = (static_cast<uint64_t>(p[1]) + t - 1) / t;
      const uint64_t gy = (static_cast<uint64_t>(p[0]) + t - 1) / t;
      if (gx > max_groups[0] || gy > max_groups[1]) {
        TERN_RETURN_ERROR(DelegateInvalidCompatibility,
                          "vulkan: node %u (quant_linear): %llu x %llu workgroups exceed the "
                          "device's %u x %u", index, static_cast<unsigned long long>(gx),
                          static_cast<unsigned long long>(gy), max_groups[0], max_groups[1]);
      }
      out->groups[0] = static_cast<uint32_t>(gx);
      out->groups[1] = static_cast<uint32_t>(gy);
      out->groups[2] = 1;
      return Error::Ok;
    }
    case NodeOp::QuantEmbedding: return threads(ShaderId::QuantEmbedding, out_numel);
    case NodeOp::GroupedMatmul: return threads(ShaderId::GroupedMatmul, out_numel);
    case NodeOp::QuantGroupedLinear: return threads(ShaderId::QuantGroupedLinear, out_numel);
  }
  TERN_RETURN_ERROR(InvalidProgram, "vulkan: node %u: op %u has no shader", index, n.op);
}

}  // namespace tern::vulkan
