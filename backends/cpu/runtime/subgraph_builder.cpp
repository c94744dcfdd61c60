#include "backends/cpu/runtime/subgraph_builder.h"

#include <cstddef>

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
  }
  return Error::InvalidProgram;
}

}  // namespace

Error build_xnn_runtime(const BlobPlan& plan, pthreadpool_t pool, xnn_runtime_t* out) {
  *out = nullptr;
  const uint32_t nv = plan.header.num_values;
  xnn_subgraph_t sg = nullptr;
  TERN_CHECK_OR_RETURN_ERROR(xnn_create_subgraph(nv, 0, &sg) == xnn_status_success,
                             DelegateMemoryAllocationFailed,
                             "cpu backend: xnn_create_subgraph(%u values) failed", nv);
  Error err = Error::Ok;
  for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
    const BlobValue& v = plan.values[i];
    size_t dims[kMaxDims];
    for (uint32_t d = 0; d < v.rank; ++d) dims[d] = static_cast<size_t>(v.dims[d]);
    const ValueKind kind = static_cast<ValueKind>(v.kind);
    const void* data = kind == ValueKind::Constant ? plan.data + v.data_offset : nullptr;
    uint32_t flags = 0;
    if (kind == ValueKind::ExternalInput) flags = XNN_VALUE_FLAG_EXTERNAL_INPUT;
    if (kind == ValueKind::ExternalOutput) flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
    uint32_t id = XNN_INVALID_VALUE_ID;
    if (xnn_define_tensor_value(sg, xnn_datatype_fp32, v.rank, dims, data, i, flags, &id) !=
            xnn_status_success ||
        id != i) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu backend: XNNPACK refused value %u (rank %u)", i, v.rank);
    }
  }
  for (uint32_t n = 0; n < plan.header.num_nodes && err == Error::Ok; ++n) {
    const BlobNode& node = plan.nodes[n];
    Error e;
    if (static_cast<NodeOp>(node.op) == NodeOp::Reshape) {
      const BlobValue& o = plan.values[node.output];
      size_t shape[kMaxDims];
      for (uint32_t d = 0; d < o.rank; ++d) shape[d] = static_cast<size_t>(o.dims[d]);
      e = xnn_define_static_reshape(sg, o.rank, shape, node.inputs[0], node.output, 0) ==
                  xnn_status_success
              ? Error::Ok
              : Error::InvalidProgram;
    } else {
      e = define_node(sg, node);
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
      *out = rt;
    }
  }
  xnn_delete_subgraph(sg);
  return err;
}

}  // namespace tern::cpu
