#include "backends/cpu/runtime/subgraph_builder.h"

#include <cstddef>
#include <cstdlib>

namespace tern::cpu {
namespace {

Error define_node(xnn_subgraph_t sg, const BlobNode& n) {
  const uint32_t* p = n.params;
  const uint32_t x = n.inputs[0];
  const uint32_t bias = n.num_inputs == 3 ? n.inputs[2] : XNN_INVALID_VALUE_ID;
  const float lo = n.fparams[0], hi = n.fparams[1];
  switch (static_cast<NodeOp>(n.op)) {
    case NodeOp::Conv2d:
      if (xnn_define_convolution_2d(sg, p[kPadTop], p[kPadRight], p[kPadBottom], p[kPadLeft],
                                    p[kKernelH], p[kKernelW], p[kStrideH], p[kStrideW],
                                    p[kDilationH], p[kDilationW], p[kGroups], p[kGroupInChannels],
                                    p[kGroupOutChannels], lo, hi, x, n.inputs[1], bias, n.output,
                                    0) != xnn_status_success) {
        return Error::InvalidProgram;
      }
      return Error::Ok;
    case NodeOp::Deconv2d:
      if (xnn_define_deconvolution_2d(
              sg, p[kPadTop], p[kPadRight], p[kPadBottom], p[kPadLeft], p[kDeconvAdjustH],
              p[kDeconvAdjustW], p[kKernelH], p[kKernelW], p[kStrideH], p[kStrideW],
              p[kDilationH], p[kDilationW], p[kGroups], p[kGroupInChannels],
              p[kGroupOutChannels], lo, hi, x, n.inputs[1], bias, n.output, 0) !=
          xnn_status_success) {
        return Error::InvalidProgram;
      }
      return Error::Ok;
    case NodeOp::DepthwiseConv2d:
      if (xnn_define_depthwise_convolution_2d(sg, p[kPadTop], p[kPadRight], p[kPadBottom],
                                              p[kPadLeft], p[kKernelH], p[kKernelW], p[kStrideH],
                                              p[kStrideW], p[kDilationH], p[kDilationW], p[kGroups],
                                              p[kGroupInChannels], lo, hi, x, n.inputs[1], bias,
                                              n.output, 0) != xnn_status_success) {
        return Error::InvalidProgram;
      }
      return Error::Ok;
    case NodeOp::FullyConnected:
      return xnn_define_fully_connected(sg, lo, hi, x, n.inputs[1], bias, n.output, 0) ==
                     xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Add:
      return xnn_define_add2(sg, lo, hi, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Subtract:
      return xnn_define_subtract(sg, lo, hi, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Multiply:
      return xnn_define_multiply2(sg, lo, hi, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Divide:
      return xnn_define_divide(sg, lo, hi, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Maximum:  // no output bounds (the reader checked fparams are (-inf, +inf))
      return xnn_define_maximum2(sg, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Minimum:
      return xnn_define_minimum2(sg, x, n.inputs[1], n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Clamp:
      return xnn_define_clamp(sg, lo, hi, x, n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::Hardswish:
      return xnn_define_hardswish(sg, x, n.output, 0) == xnn_status_success ? Error::Ok
                                                                            : Error::InvalidProgram;
    case NodeOp::Sigmoid:
      return xnn_define_sigmoid(sg, x, n.output, 0) == xnn_status_success ? Error::Ok
                                                                          : Error::InvalidProgram;
    case NodeOp::Softmax:
      return xnn_define_softmax(sg, x, n.output, 0) == xnn_status_success ? Error::Ok
                                                                          : Error::InvalidProgram;
    case NodeOp::SquareRoot:
      return xnn_define_square_root(sg, x, n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::MaxPool2d:
      return xnn_define_max_pooling_2d(sg, p[kPadTop], p[kPadRight], p[kPadBottom], p[kPadLeft],
                                       p[kKernelH], p[kKernelW], p[kStrideH], p[kStrideW],
                                       p[kDilationH], p[kDilationW], lo, hi, x, n.output,
                                       0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::AvgPool2d:
      return xnn_define_average_pooling_2d(sg, p[kPadTop], p[kPadRight], p[kPadBottom], p[kPadLeft],
                                           p[kKernelH], p[kKernelW], p[kStrideH], p[kStrideW], lo,
                                           hi, x, n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::ResizeBilinear:
      return xnn_define_static_resize_bilinear_2d(sg, p[0], p[1], x, n.output,
                                                  p[2] ? XNN_FLAG_ALIGN_CORNERS : 0) ==
                     xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::GlobalAvgPool2d:
      return xnn_define_global_average_pooling_2d(sg, lo, hi, x, n.output, 0) == xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    case NodeOp::ConstantPad: {
      size_t pre[kMaxDims], post[kMaxDims];
      for (uint32_t d = 0; d < kMaxDims; ++d) {
        pre[d] = p[d];
        post[d] = p[kMaxDims + d];
      }
      return xnn_define_static_constant_pad(sg, pre, post, n.fparams[0], x, n.output, 0) ==
                     xnn_status_success
                 ? Error::Ok
                 : Error::InvalidProgram;
    }
    case NodeOp::Reshape:
      // The output value's dims are the new shape (filled by the caller below).
      return Error::Ok;
    case NodeOp::PackedFullyConnected:
    case NodeOp::PackedConv2d:
    case NodeOp::PackedWinogradConv2d:
    case NodeOp::Gelu:
    case NodeOp::PackedBottleneck:
    case NodeOp::Concat:
    case NodeOp::QuantizedFullyConnected:
    case NodeOp::QuantizedEmbedding:
    case NodeOp::LayerNorm:
    case NodeOp::BatchMatMul:
    case NodeOp::StridedCopy:
    case NodeOp::RowConcat:
    case NodeOp::GroupNorm:
    case NodeOp::Attention:
    case NodeOp::PackedConv3d:
    case NodeOp::ResizeBilinearToPlanes:
    case NodeOp::LstmCell:
    case NodeOp::UnaryMath:
    case NodeOp::Cumsum:
    case NodeOp::GatherMap:
    case NodeOp::GridSample:
    case NodeOp::GruCell:
    case NodeOp::Select:
    case NodeOp::IndexRows:
    case NodeOp::GroupedMatmul:
    case NodeOp::QuantizedGroupedMatmul:
    case NodeOp::GroupSum:
    case NodeOp::ChannelMix:
      break;  // tern's own kernels: never in an XNNPACK stage
  }
  return Error::InvalidProgram;
}

}  // namespace

Error build_xnn_stage(const BlobPlan& plan, const StagePlan& stages, const Stage& stage,
                      float* const* addr, pthreadpool_t pool, XnnStage* out) {
  *out = XnnStage();
  const uint32_t nv = plan.header.num_values;
  // Blob value -> XNNPACK id in this stage's subgraph (kUnset: not used by the stage).
  constexpr uint32_t kUnset = 0xFFFFFFFEu;
  uint32_t* xid = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * nv));
  bool* made_here = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  out->values = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * nv));
  out->externals = static_cast<xnn_external_value*>(std::calloc(nv, sizeof(xnn_external_value)));
  if (xid == nullptr || made_here == nullptr || out->values == nullptr ||
      out->externals == nullptr) {
    std::free(xid);
    std::free(made_here);
    free_xnn_stage(out);
    TERN_RETURN_ERROR(DelegateMemoryAllocationFailed,
                      "cpu backend: no memory to build a stage of %u values", nv);
  }
  for (uint32_t i = 0; i < nv; ++i) xid[i] = kUnset;
  // External ids: every value of the stage that has an address outside the runtime.
  uint32_t num_ext = 0;
  for (uint32_t n = stage.first_node; n < stage.end_node; ++n) {
    const BlobNode& node = plan.nodes[n];
    made_here[node.output] = true;
    for (uint32_t j = 0; j <= node.num_inputs; ++j) {
      const uint32_t id = j < node.num_inputs ? node.inputs[j] : node.output;
      const ValueHome h = stages.homes[id];
      if (xid[id] != kUnset || h == ValueHome::Constant || h == ValueHome::XnnInternal) continue;
      xid[id] = num_ext;
      out->values[num_ext++] = id;
    }
  }
  out->num_externals = num_ext;
  // The stage keeps its num_ext entries only: sized by the blob's value count, hundreds of
  // stages (an unrolled LSTM's ~1,000) would hold stages x values of them (~60 MB).
  if (num_ext > 0) {
    void* values = std::realloc(out->values, sizeof(uint32_t) * num_ext);
    void* externals = std::realloc(out->externals, sizeof(xnn_external_value) * num_ext);
    if (values != nullptr) out->values = static_cast<uint32_t*>(values);
    if (externals != nullptr) out->externals = static_cast<xnn_external_value*>(externals);
  }
  xnn_subgraph_t sg = nullptr;
  if (xnn_create_subgraph(num_ext, 0, &sg) != xnn_status_success) {
    std::free(xid);
    std::free(made_here);
    free_xnn_stage(out);
    TERN_RETURN_ERROR(DelegateMemoryAllocationFailed,
                      "cpu backend: xnn_create_subgraph(%u external values) failed", num_ext);
  }
  Error err = Error::Ok;
  auto define_value = [&](uint32_t i) {
    if (err != Error::Ok) return;
    const BlobValue& v = plan.values[i];
    size_t dims[kMaxDims];
    for (uint32_t d = 0; d < v.rank; ++d) dims[d] = static_cast<size_t>(v.dims[d]);
    const ValueHome home = stages.homes[i];
    const void* data = home == ValueHome::Constant ? addr[i] : nullptr;
    uint32_t external_id = XNN_INVALID_VALUE_ID;
    uint32_t flags = 0;
    if (xid[i] != kUnset) {  // an external of this stage
      external_id = xid[i];
      flags = made_here[i] ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : XNN_VALUE_FLAG_EXTERNAL_INPUT;
    }
    uint32_t id = XNN_INVALID_VALUE_ID;
    if (xnn_define_tensor_value(sg, xnn_datatype_fp32, v.rank, dims, data, external_id, flags,
                                &id) != xnn_status_success ||
        (external_id != XNN_INVALID_VALUE_ID && id != external_id)) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu backend: XNNPACK refused value %u (rank %u)", i, v.rank);
      return;
    }
    xid[i] = id;
  };
  // Externals first (their ids are fixed), then the others as the nodes meet them.
  for (uint32_t e = 0; e < num_ext; ++e) {
    const uint32_t i = out->values[e];
    xid[i] = e;
    define_value(i);
  }
  bool* defined = made_here;  // reuse: now "defined in the subgraph"
  for (uint32_t i = 0; i < nv; ++i) defined[i] = false;
  for (uint32_t e = 0; e < num_ext; ++e) defined[out->values[e]] = true;
  for (uint32_t n = stage.first_node; n < stage.end_node && err == Error::Ok; ++n) {
    const BlobNode& node = plan.nodes[n];
    for (uint32_t j = 0; j <= node.num_inputs && err == Error::Ok; ++j) {
      const uint32_t id = j < node.num_inputs ? node.inputs[j] : node.output;
      if (defined[id]) continue;
      xid[id] = kUnset;
      define_value(id);
      defined[id] = true;
    }
    BlobNode mapped = node;
    for (uint32_t j = 0; j < node.num_inputs; ++j) mapped.inputs[j] = xid[node.inputs[j]];
    mapped.output = xid[node.output];
    if (err != Error::Ok) break;
    Error e;
    if (static_cast<NodeOp>(node.op) == NodeOp::Reshape) {
      const BlobValue& o = plan.values[node.output];
      size_t shape[kMaxDims];
      for (uint32_t d = 0; d < o.rank; ++d) shape[d] = static_cast<size_t>(o.dims[d]);
      e = xnn_define_static_reshape(sg, o.rank, shape, mapped.inputs[0], mapped.output, 0) ==
                  xnn_status_success
              ? Error::Ok
              : Error::InvalidProgram;
    } else {
      e = define_node(sg, mapped);
    }
    if (e != Error::Ok) {
      err = set_error_message(e, "cpu backend: XNNPACK refused node %u (op %u)", n, node.op);
    }
  }
  if (err == Error::Ok) {
    xnn_runtime_t rt = nullptr;
    const xnn_status s = xnn_create_runtime_v2(sg, pool, 0, &rt);
    if (s != xnn_status_success) {
      err = set_error_message(s == xnn_status_out_of_memory ? Error::DelegateMemoryAllocationFailed
                                                            : Error::InvalidProgram,
                              "cpu backend: xnn_create_runtime_v2 failed (status %d)",
                              static_cast<int>(s));
    } else {
      out->runtime = rt;
    }
  }
  xnn_delete_subgraph(sg);
  std::free(xid);
  std::free(made_here);
  if (err != Error::Ok) free_xnn_stage(out);
  return err;
}

void free_xnn_stage(XnnStage* stage) {
  if (stage->runtime != nullptr) xnn_delete_runtime(stage->runtime);
  std::free(stage->values);
  std::free(stage->externals);
  *stage = XnnStage();
}

}  // namespace tern::cpu
