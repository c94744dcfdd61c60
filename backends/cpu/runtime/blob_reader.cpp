#include "backends/cpu/runtime/blob_reader.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/quant_weight.h"
#include "backends/cpu/runtime/blob_attention_check.h"
#include "backends/cpu/runtime/blob_conv3d_check.h"
#include "backends/cpu/runtime/blob_channel_mix_check.h"
#include "backends/cpu/runtime/blob_group_sum_check.h"
#include "backends/cpu/runtime/blob_copy_checks.h"
#include "backends/cpu/kernels/unary_math.h"
#include "backends/cpu/runtime/blob_dynamic_checks.h"
#include "backends/cpu/runtime/blob_cell_checks.h"
#include "backends/cpu/runtime/blob_view_checks.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

Error check_unbounded(uint32_t n, const BlobNode& node) {
  TERN_CHECK_OR_RETURN_ERROR(node.fparams[0] == -std::numeric_limits<float>::infinity() &&
                                 node.fparams[1] == std::numeric_limits<float>::infinity(),
                             InvalidProgram,
                             "cpu blob: node %u (%s): output bounds [%g, %g], expected "
                             "(-inf, +inf)",
                             n, node_op_name(node.op), static_cast<double>(node.fparams[0]),
                             static_cast<double>(node.fparams[1]));
  return Error::Ok;
}

Error check_params_range(uint32_t n, const BlobNode& node, uint32_t count, uint32_t min_from,
                         uint32_t min_to) {
  for (uint32_t i = 0; i < kNodeParams; ++i) {
    const uint64_t p = node.params[i];
    if (i >= count) {
      TERN_CHECK_OR_RETURN_ERROR(p == 0, InvalidProgram,
                                 "cpu blob: node %u (%s): unused parameter %u is %llu, expected 0",
                                 n, node_op_name(node.op), i, static_cast<unsigned long long>(p));
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(p <= kMaxParam, InvalidProgram,
                               "cpu blob: node %u (%s): parameter %u is %llu, above %llu", n,
                               node_op_name(node.op), i, static_cast<unsigned long long>(p),
                               static_cast<unsigned long long>(kMaxParam));
    TERN_CHECK_OR_RETURN_ERROR(i < min_from || i >= min_to || p >= 1, InvalidProgram,
                               "cpu blob: node %u (%s): parameter %u is 0, expected >= 1", n,
                               node_op_name(node.op), i);
  }
  return Error::Ok;
}

namespace {

constexpr uint32_t kMaxValues = 1u << 20;
constexpr uint32_t kMaxNodes = 1u << 20;
constexpr uint32_t kMaxArgs = 1u << 20;
/// Largest dim taken (keeps every product below 2^62; node parameters: kMaxParam).
constexpr uint64_t kMaxDim = uint64_t{1} << 31;
/// XNN_EXTRA_BYTES: XNNPACK may read this far past a constant.
constexpr uint64_t kExtraBytes = 16;

const char* op_name(uint32_t op) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Conv2d:
      return "conv2d";
    case NodeOp::DepthwiseConv2d:
      return "depthwise_conv2d";
    case NodeOp::FullyConnected:
      return "fully_connected";
    case NodeOp::Add:
      return "add";
    case NodeOp::Subtract:
      return "subtract";
    case NodeOp::Multiply:
      return "multiply";
    case NodeOp::Divide:
      return "divide";
    case NodeOp::Maximum:
      return "maximum";
    case NodeOp::Minimum:
      return "minimum";
    case NodeOp::Clamp:
      return "clamp";
    case NodeOp::Hardswish:
      return "hardswish";
    case NodeOp::Sigmoid:
      return "sigmoid";
    case NodeOp::Softmax:
      return "softmax";
    case NodeOp::MaxPool2d:
      return "max_pool2d";
    case NodeOp::AvgPool2d:
      return "avg_pool2d";
    case NodeOp::GlobalAvgPool2d:
      return "global_avg_pool2d";
    case NodeOp::ConstantPad:
      return "constant_pad";
    case NodeOp::Reshape:
      return "reshape";
    case NodeOp::PackedFullyConnected:
      return "packed_fully_connected";
    case NodeOp::PackedConv2d:
      return "packed_conv2d";
    case NodeOp::PackedWinogradConv2d:
      return "packed_winograd_conv2d";
    case NodeOp::Gelu:
      return "gelu";
    case NodeOp::PackedBottleneck:
      return "packed_bottleneck";
    case NodeOp::Concat:
      return "concat";
    case NodeOp::RowConcat:
      return "row_concat";
    case NodeOp::QuantizedFullyConnected:
      return "quantized_fully_connected";
    case NodeOp::QuantizedEmbedding:
      return "quantized_embedding";
    case NodeOp::LayerNorm:
      return "layer_norm";
    case NodeOp::GroupNorm:
      return "group_norm";
    case NodeOp::BatchMatMul:
      return "batch_matmul";
    case NodeOp::StridedCopy:
      return "strided_copy";
    case NodeOp::SquareRoot:
      return "square_root";
    case NodeOp::ResizeBilinear:
      return "resize_bilinear";
    case NodeOp::Attention:
      return "attention";
    case NodeOp::PackedConv3d:
      return "packed_conv3d";
    case NodeOp::ResizeBilinearToPlanes:
      return "resize_bilinear_to_planes";
    case NodeOp::LstmCell:
      return "lstm_cell";
    case NodeOp::UnaryMath:
      return "unary_math";
    case NodeOp::Cumsum:
      return "cumsum";
    case NodeOp::GruCell:
      return "gru_cell";
    case NodeOp::Deconv2d:
      return "deconv2d";
    case NodeOp::GatherMap:
      return "gather_map";
    case NodeOp::GridSample:
      return "grid_sample";
    case NodeOp::Select:
      return "select";
    case NodeOp::IndexRows:
      return "index_rows";
    case NodeOp::GroupedMatmul:
      return "grouped_matmul";
    case NodeOp::QuantizedGroupedMatmul:
      return "quantized_grouped_matmul";
    case NodeOp::GroupSum:
      return "group_sum";
    case NodeOp::ChannelMix:
      return "channel_mix";
  }
  return "?";
}

/// Whether the node's flags say its last input is a post-activation affine (op 17's
/// kFcPostAffine, op 21's kBottleneckHasPostAffine; each checked with its op).
bool has_post_affine(const BlobNode& node) {
  if (node.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
    return node.params[kFcEpilogueFlags] == kFcPostAffine;
  }
  return node.op == static_cast<uint32_t>(NodeOp::PackedBottleneck) &&
         (node.params[kBottleneckFlags] & kBottleneckHasPostAffine) != 0;
}

/// Inputs an op takes: [min, max], and which of them must be constants (bit mask).
void op_arity(NodeOp op, uint32_t* min_in, uint32_t* max_in, uint32_t* const_mask,
              uint32_t* either_mask) {
  *const_mask = 0;
  *either_mask = 0;
  switch (op) {
    case NodeOp::Conv2d:
    case NodeOp::DepthwiseConv2d:
    case NodeOp::FullyConnected:
    case NodeOp::Deconv2d:
      *min_in = 2;
      *max_in = 3;
      *const_mask = 0x6;
      return;
    case NodeOp::PackedFullyConnected:  // x, packed weight, residual?, multiplier?
      *min_in = 2;
      *max_in = 4;
      *const_mask = 0x2;
      return;
    case NodeOp::PackedConv2d:
    case NodeOp::PackedConv3d:
    case NodeOp::PackedWinogradConv2d:
      *min_in = 2;
      *max_in = 3;
      *const_mask = 0x2;
      return;
    case NodeOp::PackedBottleneck:  // x, weights, residual?, affine? (see has_post_affine)
      *min_in = 2;
      *max_in = 4;
      *const_mask = 0x2;
      return;
    case NodeOp::Add:
    case NodeOp::Subtract:
    case NodeOp::Multiply:
    case NodeOp::Divide:
    case NodeOp::Maximum:
    case NodeOp::Minimum:
      *min_in = *max_in = 2;
      return;
    case NodeOp::Concat:  // 2 or 3 data inputs
    case NodeOp::RowConcat:
      *min_in = 2;
      *max_in = 3;
      return;
    case NodeOp::QuantizedFullyConnected:  // x, weight, bias?
      *min_in = 2;
      *max_in = 3;
      *const_mask = 0x6;
      return;
    case NodeOp::QuantizedEmbedding:  // indices, table
      *min_in = *max_in = 2;
      *const_mask = 0x2;
      return;
    case NodeOp::LayerNorm:  // x, gamma, beta
    case NodeOp::GroupNorm:
      *min_in = *max_in = 3;
      *const_mask = 0x6;
      return;
    case NodeOp::BatchMatMul:  // a and b, one a data value, the other data or constant
      *min_in = *max_in = 2;
      return;
    case NodeOp::Attention:  // q (data or, since version 20, constant), k, v (data values),
                             // mask? (constant or data; check_attention)
      *min_in = 3;
      *max_in = 4;
      *either_mask = 0x9;
      return;
    case NodeOp::GridSample:  // x, grid (data or constant)
      *min_in = *max_in = 2;
      *either_mask = 0x2;
      return;
    case NodeOp::Select:  // cond (a BoolPlain external input), a, b (data or constant)
      *min_in = *max_in = 3;
      *either_mask = 0x6;
      return;
    case NodeOp::IndexRows:  // x (data or constant), index (an Int64Plain external input)
      *min_in = *max_in = 2;
      *either_mask = 0x1;
      return;
    case NodeOp::GroupedMatmul:  // x, packed weights (a constant), ends (an int external input)
    case NodeOp::QuantizedGroupedMatmul:  // x, quantized weights (a constant), ends
      *min_in = *max_in = 3;
      *const_mask = 0x2;
      *either_mask = 0x4;  // checked by check_grouped_matmul and the int layouts' rule
      return;
    case NodeOp::GroupSum:  // 1 to 3 parts, weight? (data values)
      *min_in = 1;
      *max_in = 4;
      return;
    case NodeOp::ChannelMix:  // x (a data value), w, b? (constants)
      *min_in = 2;
      *max_in = 3;
      *const_mask = 0x6;
      return;
    case NodeOp::GatherMap:  // x, map (a constant)
      *min_in = *max_in = 2;
      *const_mask = 0x2;
      return;
    case NodeOp::LstmCell:  // gates, c (data or constant), gates2?
      *min_in = 2;
      *max_in = 3;
      *either_mask = 0x2;
      return;
    case NodeOp::GruCell:  // gi, gh, h (data or constant)
      *min_in = *max_in = 3;
      *either_mask = 0x4;
      return;
    default:
      *min_in = *max_in = 1;
      return;
  }
}

bool dims_equal(const BlobValue& v, const uint64_t* dims, uint32_t rank) {
  if (v.rank != rank) return false;
  for (uint32_t i = 0; i < rank; ++i) {
    if (v.dims[i] != dims[i]) return false;
  }
  return true;
}

/// "[1, 2, 3]" into buf.
const char* dims_str(const uint64_t* dims, uint32_t rank, char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  used += static_cast<size_t>(snprintf(buf, size, "["));
  for (uint32_t i = 0; i < rank && used < size; ++i) {
    used += static_cast<size_t>(snprintf(buf + used, size - used, "%s%llu", i ? ", " : "",
                                         static_cast<unsigned long long>(dims[i])));
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

Error check_out_dims(uint32_t n, const BlobNode& node, const BlobValue& out, const uint64_t* expect,
                     uint32_t rank) {
  if (dims_equal(out, expect, rank)) return Error::Ok;
  char a[128], b[128];
  TERN_RETURN_ERROR(InvalidProgram,
                    "cpu blob: node %u (%s): output value %u has dims %s, the inputs and "
                    "parameters give %s",
                    n, op_name(node.op), node.output, dims_str(out.dims, out.rank, a, sizeof(a)),
                    dims_str(expect, rank, b, sizeof(b)));
}

/// A 3rd input (the residual of tern's packed ops), when the node has one, has dims `expect`; or an
/// error.
Error check_residual(uint32_t n, const BlobNode& node, const BlobValue* v, const uint64_t* expect,
                     uint32_t rank) {
  if (node.num_inputs != 3 || dims_equal(v[node.inputs[2]], expect, rank)) return Error::Ok;
  char a[128], b[128];
  TERN_RETURN_ERROR(InvalidProgram,
                    "cpu blob: node %u (%s): residual value %u has dims %s, expected the "
                    "output's %s",
                    n, op_name(node.op), node.inputs[2],
                    dims_str(v[node.inputs[2]].dims, v[node.inputs[2]].rank, a, sizeof(a)),
                    dims_str(expect, rank, b, sizeof(b)));
}

/// The node's input 0 is NHWC with `in_c` channels, or an error.
Error check_nhwc_input(uint32_t n, const BlobNode& node, const BlobValue* v, uint64_t in_c) {
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 4 && x.dims[3] == in_c, InvalidProgram,
                             "cpu blob: node %u (%s): input value %u: expected 4 dims with %llu "
                             "channels last, found rank %u",
                             n, op_name(node.op), node.inputs[0],
                             static_cast<unsigned long long>(in_c), x.rank);
  return Error::Ok;
}

/// The output of a window over the node's 4-D NHWC input 0 (kernel, stride, padding and dilation
/// at the ConvParam indices of node.params, each already checked by check_params_range: kernel,
/// stride and dilation in 1..2^30, padding at most 2^30, so nothing below overflows with dims of
/// at most 2^31) is [N, OH, OW, out_c]; each dim's dilated window must fit its padded input. With
/// `residual`, a 3rd input (the residual) must have the output's dims (check_residual); then the
/// output value must. Every checker of a windowed op (conv, depthwise conv, pooling, tern's
/// packed and Winograd convs, the fused bottleneck) ends with this.
Error check_window_output(uint32_t n, const BlobNode& node, const BlobValue* v, uint64_t out_c,
                          bool residual) {
  struct Dim {
    const char* name;
    uint32_t pad0, pad1, kernel, stride, dilation;
  };
  static constexpr Dim kDims[2] = {
      {"height", kPadTop, kPadBottom, kKernelH, kStrideH, kDilationH},
      {"width", kPadLeft, kPadRight, kKernelW, kStrideW, kDilationW},
  };
  const BlobValue& x = v[node.inputs[0]];
  const uint32_t* q = node.params;
  uint64_t out[4] = {x.dims[0], 0, 0, out_c};
  for (uint32_t d = 0; d < 2; ++d) {
    const Dim& w = kDims[d];
    const uint64_t padded = x.dims[1 + d] + q[w.pad0] + q[w.pad1];
    const uint64_t span = uint64_t{q[w.dilation]} * (q[w.kernel] - uint64_t{1}) + 1;
    TERN_CHECK_OR_RETURN_ERROR(padded >= span, InvalidProgram,
                               "cpu blob: node %u (%s): the %s window (%llu) does not fit the "
                               "padded input (%llu)",
                               n, op_name(node.op), w.name, static_cast<unsigned long long>(span),
                               static_cast<unsigned long long>(padded));
    out[1 + d] = (padded - span) / q[w.stride] + 1;
  }
  if (residual) {
    TERN_RETURN_IF_ERROR(check_residual(n, node, v, out, 4));
  }
  return check_out_dims(n, node, v[node.output], out, 4);
}


/// A normalization node's eps (fparams[0] finite and > 0, fparams[1] 0) and its gamma and beta
/// (inputs 1, 2) of x's last dim: LayerNorm and GroupNorm.
Error check_norm_affine(uint32_t n, const BlobNode& node, const BlobValue* v, const BlobValue& x) {
  TERN_CHECK_OR_RETURN_ERROR(std::isfinite(node.fparams[0]) && node.fparams[0] > 0.0f &&
                                 node.fparams[1] == 0.0f,
                             InvalidProgram,
                             "cpu blob: node %u (%s): eps %g and fparams[1] %g, expected a "
                             "finite eps > 0 and 0",
                             n, op_name(node.op), static_cast<double>(node.fparams[0]),
                             static_cast<double>(node.fparams[1]));
  const uint64_t c = x.dims[x.rank - 1];
  for (uint32_t i = 1; i < 3; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[i]], &c, 1), InvalidProgram,
                               "cpu blob: node %u (%s): %s value %u is not [%llu] (x's last dim)",
                               n, op_name(node.op), i == 1 ? "gamma" : "beta", node.inputs[i],
                               static_cast<unsigned long long>(c));
  }
  return Error::Ok;
}

Error check_conv(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const bool dw = static_cast<NodeOp>(node.op) == NodeOp::DepthwiseConv2d;
  TERN_RETURN_IF_ERROR(check_params_range(n, node, dw ? 12 : 13, kKernelH, dw ? 12 : 13));
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t kh = node.params[kKernelH], kw = node.params[kKernelW];
  uint64_t out_c, in_c;
  uint64_t fexp[4];
  if (dw) {
    in_c = node.params[kGroupInChannels];
    out_c = in_c * node.params[kGroups];
    fexp[0] = 1;
    fexp[1] = kh;
    fexp[2] = kw;
    fexp[3] = out_c;
  } else {
    in_c = static_cast<uint64_t>(node.params[kGroups]) * node.params[kGroupInChannels];
    out_c = static_cast<uint64_t>(node.params[kGroups]) * node.params[kGroupOutChannels];
    fexp[0] = out_c;
    fexp[1] = kh;
    fexp[2] = kw;
    fexp[3] = node.params[kGroupInChannels];
  }
  TERN_RETURN_IF_ERROR(check_nhwc_input(n, node, v, in_c));
  if (!dims_equal(f, fexp, 4)) {
    char a[128], b[128];
    TERN_RETURN_ERROR(InvalidProgram,
                      "cpu blob: node %u (%s): filter value %u: dims %s, expected %s", n,
                      op_name(node.op), node.inputs[1], dims_str(f.dims, f.rank, a, sizeof(a)),
                      dims_str(fexp, 4, b, sizeof(b)));
  }
  if (node.num_inputs == 3) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &out_c, 1), InvalidProgram,
                               "cpu blob: node %u (%s): bias value %u: expected [%llu]", n,
                               op_name(node.op), node.inputs[2],
                               static_cast<unsigned long long>(out_c));
  }
  return check_window_output(n, node, v, out_c, /*residual=*/false);  // input 2 is the bias
}

/// Op 41: kernel, stride, dilation and channels >= 1, one group, each adjustment below its
/// stride; the filter [O, KH, KW, C], the bias [O]; the output [N, OH, OW, O] of the
/// transposed window (every term at most 2^31 · 2^30, so nothing overflows).
Error check_deconv(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, kDeconvAdjustW + 1, kKernelH,
                                          kGroupOutChannels + 1));
  const uint32_t* q = node.params;  // (groups, like every parameter from kKernelH on: >= 1)
  TERN_CHECK_OR_RETURN_ERROR(
      q[kDeconvAdjustH] < q[kStrideH] && q[kDeconvAdjustW] < q[kStrideW], InvalidProgram,
      "cpu blob: node %u (deconv2d): adjustment %u x %u, expected below the stride %u x %u", n,
      q[kDeconvAdjustH], q[kDeconvAdjustW], q[kStrideH], q[kStrideW]);
  // Filter [G·O/G, KH, KW, C/G] (XNNPACK's [G, O/G, KH, KW, C/G]); x has G·C/G channels.
  const uint64_t groups = q[kGroups];
  const uint64_t in_c = groups * q[kGroupInChannels], out_c = groups * q[kGroupOutChannels];
  TERN_RETURN_IF_ERROR(check_nhwc_input(n, node, v, in_c));
  const uint64_t fexp[4] = {out_c, q[kKernelH], q[kKernelW], q[kGroupInChannels]};
  const BlobValue& f = v[node.inputs[1]];
  if (!dims_equal(f, fexp, 4)) {
    char a[128], b[128];
    TERN_RETURN_ERROR(InvalidProgram, "cpu blob: node %u (deconv2d): filter value %u: dims %s, "
                      "expected %s",
                      n, node.inputs[1], dims_str(f.dims, f.rank, a, sizeof(a)),
                      dims_str(fexp, 4, b, sizeof(b)));
  }
  if (node.num_inputs == 3) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &out_c, 1), InvalidProgram,
                               "cpu blob: node %u (deconv2d): bias value %u: expected [%llu]", n,
                               node.inputs[2], static_cast<unsigned long long>(out_c));
  }
  const BlobValue& x = v[node.inputs[0]];
  uint64_t out[4] = {x.dims[0], 0, 0, out_c};
  const uint32_t pad0[2] = {kPadTop, kPadLeft}, pad1[2] = {kPadBottom, kPadRight};
  for (uint32_t d = 0; d < 2; ++d) {
    const uint64_t full = (x.dims[1 + d] - 1) * q[kStrideH + d] +
                          uint64_t{q[kDilationH + d]} * (q[kKernelH + d] - uint64_t{1}) + 1 +
                          q[kDeconvAdjustH + d];
    const uint64_t cut = uint64_t{q[pad0[d]]} + q[pad1[d]];
    TERN_CHECK_OR_RETURN_ERROR(full > cut, InvalidProgram,
                               "cpu blob: node %u (deconv2d): padding %llu leaves no output of "
                               "the %llu %s",
                               n, static_cast<unsigned long long>(cut),
                               static_cast<unsigned long long>(full), d == 0 ? "rows" : "columns");
    out[1 + d] = full - cut;
  }
  return check_out_dims(n, node, v[node.output], out, 4);
}

/// An epilogue activation code of ops 17-19 and its parameter's bits: the leaky ReLU's
/// negative slope (a finite f32 >= 0; at most 2 by check_params_range), else 0.
Error check_epilogue_activation(uint32_t n, const BlobNode& node, uint32_t act, uint32_t alpha) {
  TERN_CHECK_OR_RETURN_ERROR(act <= kLastPackedActivation, InvalidProgram,
                             "cpu blob: node %u (%s): activation %u, expected 0 (none), 1 "
                             "(hardswish), 2 (gelu), 3 (gelu tanh), 4 (silu), 5 (sigmoid), 6 "
                             "(square) or 7 (leaky relu)",
                             n, op_name(node.op), act);
  float slope = 0.0f;
  std::memcpy(&slope, &alpha, 4);
  TERN_CHECK_OR_RETURN_ERROR(
      act == kLeakyReluActivation ? (std::isfinite(slope) && slope >= 0.0f) : alpha == 0,
      InvalidProgram,
      "cpu blob: node %u (%s): activation parameter bits 0x%08x with activation %u, expected "
      "%s",
      n, op_name(node.op), alpha, act,
      act == kLeakyReluActivation ? "a finite slope >= 0" : "0");
  return Error::Ok;
}

Error check_packed_conv(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const bool winograd = static_cast<NodeOp>(node.op) == NodeOp::PackedWinogradConv2d;
  // Ops 18 and 19 have their epilogue activation at kPackedActivation and its slope at
  // kPackedActivationAlpha; op 18 its groups between them (op 19: 0).
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 15, kKernelH, 12));
  TERN_CHECK_OR_RETURN_ERROR(!winograd || node.params[kPackedGroups] == 0, InvalidProgram,
                             "cpu blob: node %u (%s): groups %u, expected 0", n,
                             op_name(node.op), node.params[kPackedGroups]);
  TERN_RETURN_IF_ERROR(check_epilogue_activation(n, node, node.params[kPackedActivation],
                                                 node.params[kPackedActivationAlpha]));
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t kh = node.params[kKernelH], kw = node.params[kKernelW];
  const uint64_t in_c = node.params[kPackedInChannels], out_c = node.params[kPackedOutChannels];
  const uint64_t groups = winograd ? 1 : conv_groups(node.params[kPackedGroups]);
  TERN_CHECK_OR_RETURN_ERROR(in_c % groups == 0 && out_c % groups == 0, InvalidProgram,
                             "cpu blob: node %u (%s): %llu groups do not divide %llu input and "
                             "%llu output channels",
                             n, op_name(node.op), static_cast<unsigned long long>(groups),
                             static_cast<unsigned long long>(in_c),
                             static_cast<unsigned long long>(out_c));
  TERN_RETURN_IF_ERROR(check_nhwc_input(n, node, v, in_c));
  uint64_t taps = 0, k = 0;
  TERN_CHECK_OR_RETURN_ERROR(
      checked_mul(kh, kw, &taps) && checked_mul(taps, in_c / groups, &k) && k <= kMaxDim,
      InvalidProgram, "cpu blob: node %u (%s): %llux%llu window x %llu channels is too large", n,
      op_name(node.op), static_cast<unsigned long long>(kh), static_cast<unsigned long long>(kw),
      static_cast<unsigned long long>(in_c));
  if (winograd) {
    const uint32_t* q = node.params;
    TERN_CHECK_OR_RETURN_ERROR(kh == 3 && kw == 3 && q[kStrideH] == 1 && q[kStrideW] == 1 &&
                                   q[kDilationH] == 1 && q[kDilationW] == 1,
                               InvalidProgram,
                               "cpu blob: node %u (%s): expected a 3x3 window, stride 1, dilation "
                               "1; found %llux%llu, stride %ux%u, dilation %ux%u",
                               n, op_name(node.op), static_cast<unsigned long long>(kh),
                               static_cast<unsigned long long>(kw), q[kStrideH], q[kStrideW],
                               q[kDilationH], q[kDilationW]);
  }
  // One group's packed floats stay below 2^62 (O/G <= 2^30, K <= 2^31); all G of them may not.
  uint64_t want = 0;
  bool fits = true;
  if (winograd) {
    want = winograd_packed_floats(out_c, in_c);
  } else {
    fits = checked_mul(groups, packed_fc_floats(out_c / groups, k), &want);
  }
  TERN_CHECK_OR_RETURN_ERROR(
      fits && f.rank == 1 && f.dims[0] == want, InvalidProgram,
      "cpu blob: node %u (%s): packed weight value %u is not [%llu] (%llu "
      "out channels x %llux%llux%llu, %llu groups)",
      n, op_name(node.op), node.inputs[1], static_cast<unsigned long long>(want),
      static_cast<unsigned long long>(out_c), static_cast<unsigned long long>(kh),
      static_cast<unsigned long long>(kw), static_cast<unsigned long long>(in_c / groups),
      static_cast<unsigned long long>(groups));
  return check_window_output(n, node, v, out_c, /*residual=*/true);
}

/// PackedBottleneck: the window, channels, flags and epilogues, the weight constant's size, the
/// residual (with a project only) and the output dims.
Error check_bottleneck(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t* q = node.params;
  TERN_RETURN_IF_ERROR(check_params_range(n, node, kNodeParams, kKernelH, kBottleneckFlags));
  const uint64_t c = q[kBottleneckInChannels], e = q[kBottleneckExpandedChannels],
                 o = q[kBottleneckOutChannels], kh = q[kKernelH], kw = q[kKernelW];
  constexpr uint32_t kLow = (1u << kBottleneckHighShift) - 1;
  const uint32_t flags = q[kBottleneckFlags] & kLow;
  const uint32_t expand_epi = q[kBottleneckExpandEpilogue] & kLow;
  const uint32_t dw_epi = q[kBottleneckDepthwiseEpilogue] & kLow;
  const uint64_t se_c = q[kBottleneckFlags] >> kBottleneckHighShift;
  const uint32_t squeeze_epi = q[kBottleneckExpandEpilogue] >> kBottleneckHighShift;
  const uint32_t gate = q[kBottleneckDepthwiseEpilogue] >> kBottleneckHighShift;
  const bool expand = (flags & kBottleneckHasExpand) != 0;
  const bool project = (flags & kBottleneckHasProject) != 0;
  const bool se = (flags & kBottleneckHasSqueezeExcite) != 0;
  const bool affine = (flags & kBottleneckHasPostAffine) != 0;
  TERN_CHECK_OR_RETURN_ERROR(
      flags <= kBottleneckNodeFlagBits && expand_epi <= (expand ? kLastBottleneckEpilogue : 0) &&
          dw_epi <= kLastBottleneckEpilogue && !(affine && project),
      InvalidProgram,
      "cpu blob: node %u (packed_bottleneck): flags %u, epilogues %u and %u; expected flags <= "
      "15 (the affine 8 only without a project 2) and epilogues <= %u (the expand's 0 without an "
      "expand)",
      n, flags, expand_epi, dw_epi, kLastBottleneckEpilogue);
  TERN_CHECK_OR_RETURN_ERROR(
      !affine || node.num_inputs >= 3, InvalidProgram,
      "cpu blob: node %u (packed_bottleneck): flags %u with %u inputs, expected 3 or 4 (x, "
      "weights, residual?, affine) with the affine",
      n, flags, node.num_inputs);
  TERN_CHECK_OR_RETURN_ERROR(
      !affine || value_numel(v[node.inputs[node.num_inputs - 1]]) == 2 * e, InvalidProgram,
      "cpu blob: node %u (packed_bottleneck): the affine (value %u) has %llu elements, expected "
      "2 * E = %llu",
      n, node.inputs[node.num_inputs - 1],
      static_cast<unsigned long long>(value_numel(v[node.inputs[node.num_inputs - 1]])),
      static_cast<unsigned long long>(2 * e));
  TERN_CHECK_OR_RETURN_ERROR(
      affine || node.num_inputs <= 3, InvalidProgram,
      "cpu blob: node %u (packed_bottleneck): %u inputs without the affine flag, expected 2 or 3 "
      "(x, weights, residual?)",
      n, node.num_inputs);
  TERN_CHECK_OR_RETURN_ERROR(
      se ? (project && se_c >= 1 && squeeze_epi <= kLastBottleneckEpilogue &&
            gate <= kLastSqueezeGate)
         : (se_c == 0 && squeeze_epi == 0 && gate == 0),
      InvalidProgram,
      "cpu blob: node %u (packed_bottleneck): flags %u, squeeze-excitation of %llu channels, "
      "squeeze epilogue %u, gate %u; expected a project, >= 1 channels, an epilogue <= %u and a "
      "gate <= %u with squeeze-excitation, all 0 without",
      n, flags, static_cast<unsigned long long>(se_c), squeeze_epi, gate,
      kLastBottleneckEpilogue, kLastSqueezeGate);
  TERN_CHECK_OR_RETURN_ERROR(kh <= kMaxBottleneckWindow && q[kDilationH] == 1 &&
                                 q[kDilationW] == 1,
                             InvalidProgram,
                             "cpu blob: node %u (packed_bottleneck): a %llux%llu window with "
                             "dilation %ux%u; expected at most %u rows and dilation 1",
                             n, static_cast<unsigned long long>(kh),
                             static_cast<unsigned long long>(kw), q[kDilationH], q[kDilationW],
                             kMaxBottleneckWindow);
  TERN_CHECK_OR_RETURN_ERROR((expand || e == c) && (project || o == e), InvalidProgram,
                             "cpu blob: node %u (packed_bottleneck): %llu -> %llu -> %llu "
                             "channels, flags %u: without an expand the expanded channels are "
                             "the input's, without a project the output's are the expanded ones",
                             n, static_cast<unsigned long long>(c),
                             static_cast<unsigned long long>(e),
                             static_cast<unsigned long long>(o), flags);
  TERN_RETURN_IF_ERROR(check_nhwc_input(n, node, v, c));
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t want = bottleneck_weight_floats(expand, project, c, e, o, kh, kw, se_c);
  TERN_CHECK_OR_RETURN_ERROR(f.rank == 1 && f.dims[0] == want, InvalidProgram,
                             "cpu blob: node %u (packed_bottleneck): weight value %u is not "
                             "[%llu] (%llu -> %llu -> %llu channels, %llux%llu window, "
                             "squeeze %llu)",
                             n, node.inputs[1], static_cast<unsigned long long>(want),
                             static_cast<unsigned long long>(c),
                             static_cast<unsigned long long>(e),
                             static_cast<unsigned long long>(o),
                             static_cast<unsigned long long>(kh),
                             static_cast<unsigned long long>(kw),
                             static_cast<unsigned long long>(se_c));
  // The dilation is 1 (checked above). With the affine, a residual is input 2 of 4.
  if (affine && node.num_inputs == 4) {
    BlobNode without = node;
    without.num_inputs = 3;
    return check_window_output(n, without, v, o, /*residual=*/true);
  }
  return check_window_output(n, node, v, o, /*residual=*/!affine);
}

Error check_pool(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const bool is_max = static_cast<NodeOp>(node.op) == NodeOp::MaxPool2d;
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 10, kKernelH, 10));
  const uint64_t kh = node.params[kKernelH], kw = node.params[kKernelW];
  TERN_CHECK_OR_RETURN_ERROR(kh * kw > 1, InvalidProgram, "cpu blob: node %u (%s): a 1x1 window", n,
                             op_name(node.op));
  TERN_CHECK_OR_RETURN_ERROR(
      is_max || (node.params[kDilationH] == 1 && node.params[kDilationW] == 1), InvalidProgram,
      "cpu blob: node %u (%s): dilation must be 1", n, op_name(node.op));
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 4, InvalidProgram,
                             "cpu blob: node %u (%s): input value %u: expected 4 dims, found %u", n,
                             op_name(node.op), node.inputs[0], x.rank);
  return check_window_output(n, node, v, x.dims[3], /*residual=*/false);
}

/// Ops 23 and 24: the scheme parameters (QuantParam), the weight constant's size against the
/// layout they give, FP8 codes (no NaN / infinity encodings) and the double quantization's
/// offset (finite). `data` is the data section (constants' offsets are already checked).
Error check_quant_weight(uint32_t n, const BlobNode& node, const BlobValue* v,
                         const uint8_t* data, QuantWeightView* out) {
  const uint32_t* q = node.params;
  // Op 47 has one parameter more, E (checked by check_quant_grouped).
  const bool grouped = static_cast<NodeOp>(node.op) == NodeOp::QuantizedGroupedMatmul;
  TERN_RETURN_IF_ERROR(check_params_range(n, node, kQuantParamCount + (grouped ? 1 : 0),
                                          kQuantRows, kQuantFormat + 1));
  const QuantWeightDesc d = quant_weight_desc(q);
  QuantWeightLayout layout;
  TERN_CHECK_OR_RETURN_ERROR(
      q[kQuantFormat] <= kLastQuantWeightFormat && quant_weight_layout(d, &layout), InvalidProgram,
      "cpu blob: node %u (%s): illegal quantization parameters: format %u (1 nf4, 2 nf4 double "
      "quantization, 3 fp8 e4m3, 4 fp8 e5m2), block size %u (nf4: a power of two in [32, 4096], "
      "else 0), dq block size %u (>= 1 with double quantization, else 0), granularity %u (fp8: "
      "0..2, nf4: 0), tile %ux%u (fp8 block only)",
      n, op_name(node.op), q[kQuantFormat], q[kQuantBlockSize], q[kQuantDqBlockSize],
      q[kQuantGranularity], q[kQuantBlockRows], q[kQuantBlockCols]);
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t want = layout.total_bytes / 4;
  TERN_CHECK_OR_RETURN_ERROR(f.rank == 1 && f.dims[0] == want, InvalidProgram,
                             "cpu blob: node %u (%s): quantized weight value %u is not [%llu] "
                             "floats (%llu bytes for a %u x %u weight in this scheme)",
                             n, op_name(node.op), node.inputs[1],
                             static_cast<unsigned long long>(want),
                             static_cast<unsigned long long>(layout.total_bytes), q[kQuantRows],
                             q[kQuantCols]);
  // A weight made at prepare (a QuantWeight recipe of the same params, checked with the
  // recipes) has its codes and offset checked there, from the program's tensors.
  out->desc = d;
  out->layout = layout;
  if (f.kind == static_cast<uint32_t>(ValueKind::Derived)) return Error::Ok;
  *out = quant_weight_view(d, layout, data + f.data_offset);
  TERN_CHECK_OR_RETURN_ERROR(d.format != QuantWeightFormat::Nf4DoubleQuant ||
                                 std::isfinite(out->dq_offset),
                             InvalidProgram,
                             "cpu blob: node %u (%s): double quantization offset %g is not finite",
                             n, op_name(node.op), static_cast<double>(out->dq_offset));
  TERN_CHECK_OR_RETURN_ERROR(!quant_weight_has_nonfinite_codes(*out), InvalidProgram,
                             "cpu blob: node %u (%s): the fp8 weight (value %u) holds a NaN or "
                             "infinity code, which the fused kernels do not decode",
                             n, op_name(node.op), node.inputs[1]);
  return Error::Ok;
}

Error check_quant_fc(uint32_t n, const BlobNode& node, const BlobValue* v, const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  const BlobValue& x = v[node.inputs[0]];
  const uint64_t out_features = node.params[kQuantRows], in_features = node.params[kQuantCols];
  TERN_CHECK_OR_RETURN_ERROR(x.dims[x.rank - 1] == in_features &&
                                 x.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_fully_connected): x (value %u) has "
                             "last dim %llu, params give %llu in features",
                             n, node.inputs[0],
                             static_cast<unsigned long long>(x.dims[x.rank - 1]),
                             static_cast<unsigned long long>(in_features));
  if (node.num_inputs == 3) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &out_features, 1), InvalidProgram,
                               "cpu blob: node %u (quantized_fully_connected): bias value %u is "
                               "not [%llu]",
                               n, node.inputs[2], static_cast<unsigned long long>(out_features));
  }
  uint64_t expect[kMaxDims];
  for (uint32_t i = 0; i < x.rank; ++i) expect[i] = x.dims[i];
  expect[x.rank - 1] = out_features;
  return check_out_dims(n, node, v[node.output], expect, x.rank);
}

/// Op 47: the weight as op 23's, E dividing its rows into experts quant_rows_split_ok accepts,
/// x [S, K] plain, the ends an external [E] input, the output [S, N] plain.
Error check_quant_grouped(uint32_t n, const BlobNode& node, const BlobValue* v,
                          const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const uint64_t e = node.params[kQuantGroups], rows = w.desc.rows, k = w.desc.cols;
  TERN_CHECK_OR_RETURN_ERROR(e >= 1 && rows % e == 0 && quant_rows_split_ok(w.desc, rows / e),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_grouped_matmul): %llu experts of a "
                             "%llu-row weight: expected E dividing the rows into parts of a "
                             "multiple of 8 rows that start its blocks, double quantization "
                             "groups and tiles",
                             n, static_cast<unsigned long long>(e),
                             static_cast<unsigned long long>(rows));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& ends = v[node.inputs[2]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 2 && x.dims[1] == k &&
                                 x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 v[node.output].layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (quantized_grouped_matmul): x (value %u) must be "
                             "a plain [S, %llu] f32 value and the output plain",
                             n, node.inputs[0], static_cast<unsigned long long>(k));
  TERN_CHECK_OR_RETURN_ERROR(
      ends.kind == static_cast<uint32_t>(ValueKind::ExternalInput) && ends.rank == 1 &&
          ends.dims[0] == e,
      InvalidProgram,
      "cpu blob: node %u (quantized_grouped_matmul): the ends (value %u) must be an external "
      "[%llu] input",
      n, node.inputs[2], static_cast<unsigned long long>(e));
  const uint64_t want[2] = {x.dims[0], rows / e};
  return check_out_dims(n, node, v[node.output], want, 2);
}

Error check_quant_embedding(uint32_t n, const BlobNode& node, const BlobValue* v,
                            const uint8_t* data) {
  QuantWeightView w;
  TERN_RETURN_IF_ERROR(check_quant_weight(n, node, v, data, &w));
  const BlobValue& idx = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(idx.layout == static_cast<uint32_t>(ValueLayout::Int64Plain) &&
                                 idx.rank < kMaxDims,
                             InvalidProgram,
                             "cpu blob: node %u (quantized_embedding): indices (value %u) must "
                             "be an int64 external input (layout 2) of rank below %u; found "
                             "layout %u, rank %u",
                             n, node.inputs[0], kMaxDims, idx.layout, idx.rank);
  uint64_t expect[kMaxDims];
  for (uint32_t i = 0; i < idx.rank; ++i) expect[i] = idx.dims[i];
  expect[idx.rank] = node.params[kQuantCols];
  return check_out_dims(n, node, v[node.output], expect, idx.rank + 1);
}

/// Op 22 with params[0] = R: each input and the output seen as [R, numel / R].
Error check_concat_rows(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 1));
  const uint64_t rows = node.params[0];
  uint64_t total = 0;
  for (uint32_t i = 0; i < node.num_inputs; ++i) {
    const uint64_t count = value_numel(v[node.inputs[i]]);
    TERN_CHECK_OR_RETURN_ERROR(count % rows == 0, InvalidProgram,
                               "cpu blob: node %u (concat): input %u (value %u) has %llu "
                               "elements, not a multiple of the %llu rows",
                               n, i, node.inputs[i], static_cast<unsigned long long>(count),
                               static_cast<unsigned long long>(rows));
    total += count;
  }
  const uint64_t out = value_numel(v[node.output]);
  TERN_CHECK_OR_RETURN_ERROR(out == total, InvalidProgram,
                             "cpu blob: node %u (concat): output value %u has %llu elements, the "
                             "inputs %llu",
                             n, node.output, static_cast<unsigned long long>(out),
                             static_cast<unsigned long long>(total));
  return Error::Ok;
}

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
                             n, node.inputs[0], dims_str(a.dims, a.rank, da, sizeof(da)),
                             node.inputs[1], dims_str(b.dims, b.rank, db, sizeof(db)),
                             trans ? " transposed" : "", trans ? "last" : "second-to-last");
  uint64_t expect[kMaxDims];
  for (uint32_t d = 0; d < a.rank; ++d) expect[d] = a.dims[d];
  expect[a.rank - 1] = b.dims[b.rank - (trans ? 2 : 1)];
  return check_out_dims(n, node, v[node.output], expect, a.rank);
}

/// Op 42: x an f32 data value; the map a Constant of B int32 offsets (its bytes in the blob),
/// O * B * R output elements (R = params[2], 0 meaning 1), and every run of R elements read
/// from o * step + map[t] inside x.
Error check_gather_map(uint32_t n, const BlobNode& node, const BlobValue* v,
                       const uint8_t* data) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 1));
  TERN_RETURN_IF_ERROR(check_f32_data_inputs(n, node, v, 1));
  const uint64_t outer = node.params[0], step = node.params[1];
  const uint64_t run = node.params[2] == 0 ? 1 : node.params[2];  // 0: blobs before runs
  const BlobValue& m = v[node.inputs[1]];
  TERN_CHECK_OR_RETURN_ERROR(m.kind == static_cast<uint32_t>(ValueKind::Constant) &&
                                 m.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
                             InvalidProgram,
                             "cpu blob: node %u (gather_map): the map (value %u) must be a "
                             "constant of int32 offsets in the blob",
                             n, node.inputs[1]);
  const uint64_t block = value_numel(m), xs = value_numel(v[node.inputs[0]]);
  const uint64_t ys = value_numel(v[node.output]);
  // ys == outer · block · run, by divisions (no product overflows).
  const bool sizes_agree = block == 0 ? ys == 0
                                      : ys % block == 0 && (ys / block) % outer == 0 &&
                                            ys / block / outer == run;
  TERN_CHECK_OR_RETURN_ERROR(sizes_agree,
                             InvalidProgram,
                             "cpu blob: node %u (gather_map): %llu rows of the %llu-entry map "
                             "copying runs of %llu, expected the output's %llu elements",
                             n, static_cast<unsigned long long>(outer),
                             static_cast<unsigned long long>(block),
                             static_cast<unsigned long long>(run),
                             static_cast<unsigned long long>(ys));
  TERN_CHECK_OR_RETURN_ERROR(outer > 1 || step == 0, InvalidProgram,
                             "cpu blob: node %u (gather_map): step %llu with one row, expected 0",
                             n, static_cast<unsigned long long>(step));
  // Both at most 2^30: the last row's start fits in 64 bits.
  const uint64_t last_row = (outer - 1) * step;
  TERN_CHECK_OR_RETURN_ERROR(last_row + run <= xs, InvalidProgram,
                             "cpu blob: node %u (gather_map): the last row starts at %llu, and "
                             "with a run of %llu passes x's %llu elements",
                             n, static_cast<unsigned long long>(last_row),
                             static_cast<unsigned long long>(run),
                             static_cast<unsigned long long>(xs));
  const uint64_t limit = xs - last_row - run;  // the largest offset an entry may have
  const uint8_t* map = data + m.data_offset;
  for (uint64_t t = 0; t < block; ++t) {
    int32_t offset;
    std::memcpy(&offset, map + 4 * t, 4);
    TERN_CHECK_OR_RETURN_ERROR(offset >= 0 && static_cast<uint64_t>(offset) <= limit,
                               InvalidProgram,
                               "cpu blob: node %u (gather_map): map entry %llu is %d, expected "
                               "0..%llu (x's %llu elements less the last row's start %llu "
                               "and the run of %llu)",
                               n, static_cast<unsigned long long>(t), offset,
                               static_cast<unsigned long long>(limit),
                               static_cast<unsigned long long>(xs),
                               static_cast<unsigned long long>(last_row),
                               static_cast<unsigned long long>(run));
  }
  return Error::Ok;
}

/// Op 43: x [N, H, W, C] a data value (channels last, as every NHWC reader's), grid [N, HO,
/// WO, 2] f32 row-major pairs (not an NHWC edge value), the output [N, HO, WO, C], mode 0..1,
/// padding 0..2, align_corners 0..1.
Error check_grid_sample(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 0));
  TERN_CHECK_OR_RETURN_ERROR(node.params[0] <= 1 && node.params[1] <= 2 && node.params[2] <= 1,
                             InvalidProgram,
                             "cpu blob: node %u (grid_sample): mode %u, padding %u, "
                             "align_corners %u, expected 0..1, 0..2 and 0..1",
                             n, node.params[0], node.params[1], node.params[2]);
  TERN_RETURN_IF_ERROR(check_f32_data_inputs(n, node, v, 1));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& g = v[node.inputs[1]];
  TERN_CHECK_OR_RETURN_ERROR(
      x.rank == 4 && g.rank == 4 && g.dims[0] == x.dims[0] && g.dims[3] == 2 &&
          g.layout != static_cast<uint32_t>(ValueLayout::Nhwc) &&
          g.layout != static_cast<uint32_t>(ValueLayout::Int64Plain),
      InvalidProgram,
      "cpu blob: node %u (grid_sample): x (value %u) must be [N, H, W, C] and the grid (value "
      "%u) f32 row-major [N, HO, WO, 2]",
      n, node.inputs[0], node.inputs[1]);
  const uint64_t expect[4] = {x.dims[0], g.dims[1], g.dims[2], x.dims[3]};
  return check_out_dims(n, node, v[node.output], expect, 4);
}

/// Op 44: a and b f32, every input's dims (right-aligned) the output's or 1, the output no
/// NHWC edge value. cond's layout (BoolPlain) is checked with every node's inputs.
Error check_select(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const uint32_t mode = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(mode <= kLastSelectMode, InvalidProgram,
                             "cpu blob: node %u (select): mode %u, expected 0 (a bool condition) "
                             "or 1..6 (a comparison with a number)",
                             n, mode);
  TERN_CHECK_OR_RETURN_ERROR(mode != 0 || node.params[1] == 0, InvalidProgram,
                             "cpu blob: node %u (select): unused parameter 1 is %u, expected 0",
                             n, node.params[1]);
  for (uint32_t i = 2; i < kNodeParams; ++i) {
    TERN_CHECK_OR_RETURN_ERROR(node.params[i] == 0, InvalidProgram,
                               "cpu blob: node %u (select): unused parameter %u is %u, "
                               "expected 0",
                               n, i, node.params[i]);
  }
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const BlobValue& out = v[node.output];
  TERN_CHECK_OR_RETURN_ERROR(out.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (select): output value %u must be plain", n,
                             node.output);
  for (uint32_t i = 0; i < 3; ++i) {
    const BlobValue& x = v[node.inputs[i]];
    TERN_CHECK_OR_RETURN_ERROR(
        (i == 0 && mode == 0) || (x.layout == static_cast<uint32_t>(ValueLayout::Plain)),
        InvalidProgram, "cpu blob: node %u (select): %s (value %u) must be plain f32", n,
        i == 0 ? "x" : i == 1 ? "a" : "b", node.inputs[i]);
    bool fits = x.rank <= out.rank;
    for (uint32_t d = 0; fits && d < x.rank; ++d) {
      const uint64_t o = out.dims[out.rank - x.rank + d];
      fits = x.dims[d] == o || x.dims[d] == 1;
    }
    char have[128], want[128];
    TERN_CHECK_OR_RETURN_ERROR(fits, InvalidProgram,
                               "cpu blob: node %u (select): input %u (value %u) of dims %s does "
                               "not broadcast to the output's %s",
                               n, i, node.inputs[i], dims_str(x.dims, x.rank, have, sizeof(have)),
                               dims_str(out.dims, out.rank, want, sizeof(want)));
  }
  return Error::Ok;
}

/// Op 45: the dim, the layouts, and the output's dims (x's with dim d the index's count).
Error check_index_rows(uint32_t n, const BlobNode& node, const BlobValue* v) {
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
  TERN_RETURN_IF_ERROR(check_unbounded(n, node));
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& idx = v[node.inputs[1]];
  const BlobValue& out = v[node.output];
  const uint32_t d = node.params[0];
  TERN_CHECK_OR_RETURN_ERROR(d < x.rank, InvalidProgram,
                             "cpu blob: node %u (index_rows): dim %u of a rank-%u x", n, d,
                             x.rank);
  TERN_CHECK_OR_RETURN_ERROR(x.layout == static_cast<uint32_t>(ValueLayout::Plain) &&
                                 out.layout == static_cast<uint32_t>(ValueLayout::Plain),
                             InvalidProgram,
                             "cpu blob: node %u (index_rows): x (value %u) and the output (value "
                             "%u) must be plain f32",
                             n, node.inputs[0], node.output);
  TERN_CHECK_OR_RETURN_ERROR(idx.kind == static_cast<uint32_t>(ValueKind::ExternalInput),
                             InvalidProgram,
                             "cpu blob: node %u (index_rows): the index (value %u) must be an "
                             "external input",
                             n, node.inputs[1]);
  uint64_t want[kMaxDims] = {};
  for (uint32_t i = 0; i < x.rank; ++i) want[i] = x.dims[i];
  want[d] = value_numel(idx);
  return check_out_dims(n, node, out, want, x.rank);
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

/// Op 27: the rank, extents and strides, the element count, and every read inside x.
Error check_node_shapes(uint32_t n, const BlobNode& node, const BlobValue* v,
                        const uint8_t* data) {
  const BlobValue& x = v[node.inputs[0]];
  const BlobValue& out = v[node.output];
  const NodeOp op = static_cast<NodeOp>(node.op);
  switch (op) {
    case NodeOp::Conv2d:
    case NodeOp::DepthwiseConv2d:
      return check_conv(n, node, v);
    case NodeOp::Deconv2d:
      return check_deconv(n, node, v);
    case NodeOp::MaxPool2d:
    case NodeOp::AvgPool2d:
      return check_pool(n, node, v);
    case NodeOp::FullyConnected: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      const BlobValue& f = v[node.inputs[1]];
      TERN_CHECK_OR_RETURN_ERROR(f.rank == 2 && f.dims[1] == x.dims[x.rank - 1], InvalidProgram,
                                 "cpu blob: node %u (fully_connected): filter value %u is not "
                                 "[out, %llu]",
                                 n, node.inputs[1],
                                 static_cast<unsigned long long>(x.dims[x.rank - 1]));
      if (node.num_inputs == 3) {
        TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &f.dims[0], 1), InvalidProgram,
                                   "cpu blob: node %u (fully_connected): bias value %u is not "
                                   "[%llu]",
                                   n, node.inputs[2], static_cast<unsigned long long>(f.dims[0]));
      }
      uint64_t expect[kMaxDims];
      for (uint32_t i = 0; i < x.rank; ++i) expect[i] = x.dims[i];
      expect[x.rank - 1] = f.dims[0];
      return check_out_dims(n, node, out, expect, x.rank);
    }
    case NodeOp::Add:
    case NodeOp::Subtract:
    case NodeOp::Multiply:
    case NodeOp::Divide:
    case NodeOp::Maximum:
    case NodeOp::Minimum: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      const bool bounded = node.fparams[0] != -std::numeric_limits<float>::infinity() ||
                           node.fparams[1] != std::numeric_limits<float>::infinity();
      TERN_CHECK_OR_RETURN_ERROR(
          !bounded || (static_cast<NodeOp>(node.op) != NodeOp::Maximum &&
                       static_cast<NodeOp>(node.op) != NodeOp::Minimum),
          InvalidProgram,
          "cpu blob: node %u (%s): output bounds [%g, %g], expected (-inf, +inf) (XNNPACK's "
          "maximum and minimum take none)",
          n, op_name(node.op), static_cast<double>(node.fparams[0]),
          static_cast<double>(node.fparams[1]));
      const BlobValue& y = v[node.inputs[1]];
      const uint32_t r = x.rank > y.rank ? x.rank : y.rank;
      uint64_t expect[kMaxDims];
      for (uint32_t i = 0; i < r; ++i) {
        const uint64_t a = i + x.rank >= r ? x.dims[i + x.rank - r] : 1;
        const uint64_t b = i + y.rank >= r ? y.dims[i + y.rank - r] : 1;
        TERN_CHECK_OR_RETURN_ERROR(a == b || a == 1 || b == 1, InvalidProgram,
                                   "cpu blob: node %u (%s): inputs %u and %u do not broadcast "
                                   "(dim %u: %llu vs %llu)",
                                   n, op_name(node.op), node.inputs[0], node.inputs[1], i,
                                   static_cast<unsigned long long>(a),
                                   static_cast<unsigned long long>(b));
        expect[i] = a == 1 ? b : a;
      }
      return check_out_dims(n, node, out, expect, r);
    }
    case NodeOp::Clamp:
    case NodeOp::Hardswish:
    case NodeOp::Sigmoid:
    case NodeOp::Softmax:
    case NodeOp::SquareRoot:
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      return check_out_dims(n, node, out, x.dims, x.rank);
    case NodeOp::ResizeBilinear:
    case NodeOp::ResizeBilinearToPlanes: {  // NHWC out, or the channels' planes
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 3, 0, 2));
      TERN_CHECK_OR_RETURN_ERROR(node.params[2] <= 1, InvalidProgram,
                                 "cpu blob: node %u (%s): align_corners %u, expected 0 or 1", n,
                                 op_name(node.op), node.params[2]);
      TERN_CHECK_OR_RETURN_ERROR(x.rank == 4, InvalidProgram,
                                 "cpu blob: node %u (%s): input value %u: expected 4 dims [N, H, "
                                 "W, C], found %u",
                                 n, op_name(node.op), node.inputs[0], x.rank);
      const bool planes = static_cast<NodeOp>(node.op) == NodeOp::ResizeBilinearToPlanes;
      TERN_CHECK_OR_RETURN_ERROR(!planes || x.dims[3] <= kMaxResizePlanesChannels, InvalidProgram,
                                 "cpu blob: node %u (%s): %llu channels, expected at most %llu", n,
                                 op_name(node.op), static_cast<unsigned long long>(x.dims[3]),
                                 static_cast<unsigned long long>(kMaxResizePlanesChannels));
      const uint64_t nhwc[4] = {x.dims[0], node.params[0], node.params[1], x.dims[3]};
      const uint64_t nchw[4] = {x.dims[0], x.dims[3], node.params[0], node.params[1]};
      return check_out_dims(n, node, out, planes ? nchw : nhwc, 4);
    }
    case NodeOp::GlobalAvgPool2d: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(x.rank == 4, InvalidProgram,
                                 "cpu blob: node %u (global_avg_pool2d): input value %u: "
                                 "expected 4 dims, found %u",
                                 n, node.inputs[0], x.rank);
      const uint64_t expect[4] = {x.dims[0], 1, 1, x.dims[3]};
      return check_out_dims(n, node, out, expect, 4);
    }
    case NodeOp::ConstantPad: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 2 * kMaxDims, 0, 0));
      uint64_t expect[kMaxDims];
      for (uint32_t d = 0; d < kMaxDims; ++d) {
        const uint64_t pre = node.params[d], post = node.params[kMaxDims + d];
        TERN_CHECK_OR_RETURN_ERROR(d < x.rank || (pre == 0 && post == 0), InvalidProgram,
                                   "cpu blob: node %u (constant_pad): padding of dim %u beyond "
                                   "rank %u",
                                   n, d, x.rank);
        if (d < x.rank) expect[d] = x.dims[d] + pre + post;
      }
      return check_out_dims(n, node, out, expect, x.rank);
    }
    case NodeOp::PackedConv2d:
    case NodeOp::PackedWinogradConv2d:
      return check_packed_conv(n, node, v);
    case NodeOp::PackedConv3d:
      return check_packed_conv3d(n, node, v);
    case NodeOp::PackedBottleneck:
      return check_bottleneck(n, node, v);
    case NodeOp::Concat: {
      if (node.params[0] != 0) return check_concat_rows(n, node, v);
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      uint64_t expect[kMaxDims] = {};
      for (uint32_t d = 0; d < x.rank && d < kMaxDims; ++d) expect[d] = x.dims[d];
      expect[x.rank - 1] = 0;
      for (uint32_t i = 0; i < node.num_inputs; ++i) {
        const BlobValue& in = v[node.inputs[i]];
        bool same = in.rank == x.rank;
        for (uint32_t d = 0; same && d + 1 < x.rank; ++d) same = in.dims[d] == x.dims[d];
        char a[128], b[128];
        TERN_CHECK_OR_RETURN_ERROR(same, InvalidProgram,
                                   "cpu blob: node %u (concat): input %u (value %u) has dims %s, "
                                   "expected input 0's %s but the last",
                                   n, i, node.inputs[i], dims_str(in.dims, in.rank, a, sizeof(a)),
                                   dims_str(x.dims, x.rank, b, sizeof(b)));
        expect[x.rank - 1] += in.dims[x.rank - 1];
      }
      return check_out_dims(n, node, out, expect, x.rank);
    }
    case NodeOp::QuantizedFullyConnected:
      return check_quant_fc(n, node, v, data);
    case NodeOp::QuantizedEmbedding:
      return check_quant_embedding(n, node, v, data);
    case NodeOp::LayerNorm:
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(node.params[0] <= 1, InvalidProgram,
                                 "cpu blob: node %u (layer_norm): mode %u, expected 0 (layer "
                                 "norm) or 1 (RMS norm, since version 21)",
                                 n, node.params[0]);
      TERN_RETURN_IF_ERROR(check_norm_affine(n, node, v, x));
      return check_out_dims(n, node, out, x.dims, x.rank);
    case NodeOp::GroupNorm: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(x.rank >= 3, InvalidProgram,
                                 "cpu blob: node %u (group_norm): input value %u: expected 3..6 "
                                 "dims [N, ..., C], found %u",
                                 n, node.inputs[0], x.rank);
      const uint64_t c = x.dims[x.rank - 1];
      TERN_CHECK_OR_RETURN_ERROR(node.params[0] >= 1 && c % node.params[0] == 0, InvalidProgram,
                                 "cpu blob: node %u (group_norm): %u groups, expected a positive "
                                 "divisor of the %llu channels",
                                 n, node.params[0], static_cast<unsigned long long>(c));
      TERN_RETURN_IF_ERROR(check_norm_affine(n, node, v, x));
      return check_out_dims(n, node, out, x.dims, x.rank);
    }
    case NodeOp::BatchMatMul:
      return check_batch_matmul(n, node, v);
    case NodeOp::GatherMap:
      return check_gather_map(n, node, v, data);
    case NodeOp::GridSample:
      return check_grid_sample(n, node, v);
    case NodeOp::Select:
      return check_select(n, node, v);
    case NodeOp::IndexRows:
      return check_index_rows(n, node, v);
    case NodeOp::GroupedMatmul:
      return check_grouped_matmul(n, node, v);
    case NodeOp::QuantizedGroupedMatmul:
      return check_quant_grouped(n, node, v, data);
    case NodeOp::GroupSum:
      return check_group_sum(n, node, v);
    case NodeOp::ChannelMix:
      return check_channel_mix(n, node, v);
    case NodeOp::Attention:
      return check_attention(n, node, v);
    case NodeOp::LstmCell:
      return check_lstm_cell(n, node, v);
    case NodeOp::GruCell:
      return check_gru_cell(n, node, v);
    case NodeOp::StridedCopy:
      return check_strided_copy(n, node, v);
    case NodeOp::RowConcat:
      return check_row_concat(n, node, v);
    case NodeOp::Cumsum:
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(node.params[0] < x.rank, InvalidProgram,
                                 "cpu blob: node %u (cumsum): dim %u of a rank-%u value", n,
                                 node.params[0], x.rank);
      TERN_RETURN_IF_ERROR(check_unbounded(n, node));
      return check_out_dims(n, node, out, x.dims, x.rank);
    case NodeOp::UnaryMath: {
      const bool softplus = node.params[0] == static_cast<uint32_t>(UnaryMathFn::Softplus);
      const bool pow = node.params[0] == static_cast<uint32_t>(UnaryMathFn::Pow);
      TERN_CHECK_OR_RETURN_ERROR(node.params[0] >= 1 && node.params[0] <= kLastUnaryMathFn,
                                 InvalidProgram,
                                 "cpu blob: node %u (unary_math): function %u, expected 1 (exp), "
                                 "2 (softplus), 3 (sin), 4 (cos), 5 (log), 6 (expm1), 7 "
                                 "(log1p), 8 (acos), 9 (asin), 10 (atan) or 11 (pow)",
                                 n, node.params[0]);
      float beta = 0.0f, threshold = 0.0f;
      std::memcpy(&beta, &node.params[1], 4);
      std::memcpy(&threshold, &node.params[2], 4);
      TERN_CHECK_OR_RETURN_ERROR(
          softplus ? (std::isfinite(beta) && beta != 0.0f && std::isfinite(threshold))
          : pow    ? (std::isfinite(beta) && node.params[2] == 0)
                   : (node.params[1] == 0 && node.params[2] == 0),
          InvalidProgram,
          "cpu blob: node %u (unary_math): parameters 0x%x, 0x%x, expected %s", n,
          node.params[1], node.params[2],
          softplus ? "a finite non-zero beta and a finite threshold (f32 bits)"
          : pow    ? "a finite exponent (f32 bits), 0"
                   : "0, 0");
      for (uint32_t i = 3; i < kNodeParams; ++i) {
        TERN_CHECK_OR_RETURN_ERROR(node.params[i] == 0, InvalidProgram,
                                   "cpu blob: node %u (unary_math): unused parameter %u is %u, "
                                   "expected 0",
                                   n, i, node.params[i]);
      }
      TERN_RETURN_IF_ERROR(check_unbounded(n, node));
      return check_out_dims(n, node, out, x.dims, x.rank);
    }
    case NodeOp::Gelu:
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 1, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(node.params[0] <= 1, InvalidProgram,
                                 "cpu blob: node %u (gelu): form %u, expected 0 (erf) or 1 "
                                 "(tanh)",
                                 n, node.params[0]);
      return check_out_dims(n, node, out, x.dims, x.rank);
    case NodeOp::PackedFullyConnected: {
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 5, 0, 2));
      const bool multiplier = node.params[kFcEpilogueFlags] == kFcMultiplier;
      const bool affine = node.params[kFcEpilogueFlags] == kFcPostAffine;
      const uint32_t extra = multiplier || affine ? 1u : 0u;
      TERN_CHECK_OR_RETURN_ERROR(
          node.params[kFcEpilogueFlags] <= kFcPostAffine && node.num_inputs <= 3u + extra &&
              node.num_inputs >= 2u + extra,
          InvalidProgram,
          "cpu blob: node %u (packed_fully_connected): epilogue flags %u with %u inputs, expected "
          "0 with 2 or 3 inputs (x, weight, residual?), 1 with 3 or 4 (x, weight, residual?, "
          "multiplier) or 2 with 3 or 4 (x, weight, residual?, affine)",
          n, node.params[kFcEpilogueFlags], node.num_inputs);
      TERN_RETURN_IF_ERROR(
          check_epilogue_activation(n, node, node.params[2], node.params[kFcActivationAlpha]));
      const uint64_t out_features = node.params[0], in_features = node.params[1];
      const BlobValue& f = v[node.inputs[1]];
      const uint64_t want = packed_fc_floats(out_features, in_features);
      TERN_CHECK_OR_RETURN_ERROR(x.dims[x.rank - 1] == in_features, InvalidProgram,
                                 "cpu blob: node %u (packed_fully_connected): x's last dim is "
                                 "%llu, params give %llu in features",
                                 n, static_cast<unsigned long long>(x.dims[x.rank - 1]),
                                 static_cast<unsigned long long>(in_features));
      TERN_CHECK_OR_RETURN_ERROR(f.rank == 1 && f.dims[0] == want, InvalidProgram,
                                 "cpu blob: node %u (packed_fully_connected): packed weight value "
                                 "%u is not [%llu] (%llu out x %llu in features)",
                                 n, node.inputs[1], static_cast<unsigned long long>(want),
                                 static_cast<unsigned long long>(out_features),
                                 static_cast<unsigned long long>(in_features));
      uint64_t expect[kMaxDims];
      for (uint32_t i = 0; i < x.rank; ++i) expect[i] = x.dims[i];
      expect[x.rank - 1] = out_features;
      // The affine (the last input with kFcPostAffine): a scale and a shift per output column.
      if (affine) {
        const uint64_t have = value_numel(v[node.inputs[node.num_inputs - 1]]);
        TERN_CHECK_OR_RETURN_ERROR(have == 2 * out_features, InvalidProgram,
                                   "cpu blob: node %u (packed_fully_connected): the affine (value "
                                   "%u) has %llu elements, expected 2 * N = %llu",
                                   n, node.inputs[node.num_inputs - 1],
                                   static_cast<unsigned long long>(have),
                                   static_cast<unsigned long long>(2 * out_features));
      }
      // The residual (input 2 of 3 without a multiplier, of 4 with one) and the multiplier
      // (the last input) have the output's dims.
      for (uint32_t i = 2; i < node.num_inputs - (affine ? 1u : 0u); ++i) {
        const BlobValue& e = v[node.inputs[i]];
        if (dims_equal(e, expect, x.rank)) continue;
        char a[128], b[128];
        const bool is_multiplier = multiplier && i + 1 == node.num_inputs;
        TERN_RETURN_ERROR(InvalidProgram,
                          "cpu blob: node %u (packed_fully_connected): %s value %u has dims %s, "
                          "expected the output's %s",
                          n, is_multiplier ? "multiplier" : "residual", node.inputs[i],
                          dims_str(e.dims, e.rank, a, sizeof(a)),
                          dims_str(expect, x.rank, b, sizeof(b)));
      }
      return check_out_dims(n, node, out, expect, x.rank);
    }
    case NodeOp::Reshape:
      TERN_RETURN_IF_ERROR(check_params_range(n, node, 0, 0, 0));
      TERN_CHECK_OR_RETURN_ERROR(value_numel(x) == value_numel(out), InvalidProgram,
                                 "cpu blob: node %u (reshape): %llu elements in, %llu out", n,
                                 static_cast<unsigned long long>(value_numel(x)),
                                 static_cast<unsigned long long>(value_numel(out)));
      return Error::Ok;
  }
  TERN_RETURN_ERROR(InvalidProgram, "cpu blob: node %u: unknown op %u", n, node.op);
}

Error check_value(uint32_t i, const BlobValue& v, const BlobHeader& h, bool* arg_used) {
  TERN_CHECK_OR_RETURN_ERROR(v.kind <= kLastValueKind, InvalidProgram,
                             "cpu blob: value %u: kind %u unknown (0..6)", i, v.kind);
  TERN_CHECK_OR_RETURN_ERROR(v.layout <= kLastValueLayout, InvalidProgram,
                             "cpu blob: value %u: layout %u unknown (0..3)", i, v.layout);
  TERN_CHECK_OR_RETURN_ERROR(v.rank >= 1 && v.rank <= kMaxDims, InvalidProgram,
                             "cpu blob: value %u: rank %u, expected 1..%u", i, v.rank, kMaxDims);
  for (uint32_t d = 0; d < kMaxDims; ++d) {
    const bool used = d < v.rank;
    TERN_CHECK_OR_RETURN_ERROR(used ? (v.dims[d] >= 1 && v.dims[d] <= kMaxDim) : v.dims[d] == 0,
                               InvalidProgram, "cpu blob: value %u: dim %u is %llu, expected %s", i,
                               d, static_cast<unsigned long long>(v.dims[d]),
                               used ? "1..2^31" : "0 (beyond the rank)");
  }
  uint64_t numel = 1;
  for (uint32_t d = 0; d < v.rank; ++d) {
    TERN_CHECK_OR_RETURN_ERROR(checked_mul(numel, v.dims[d], &numel) && numel <= (1ull << 40),
                               InvalidProgram, "cpu blob: value %u: element count overflows", i);
  }
  const ValueKind kind = static_cast<ValueKind>(v.kind);
  const bool source = kind == ValueKind::Source, derived = kind == ValueKind::Derived;
  const bool external =
      kind == ValueKind::ExternalInput || kind == ValueKind::ExternalOutput || source;
  TERN_CHECK_OR_RETURN_ERROR(
      (source || derived) ? v.layout == static_cast<uint32_t>(ValueLayout::Plain) : true,
      InvalidProgram, "cpu blob: value %u: a %s value has layout %u, expected 0 (plain)", i,
      source ? "source" : "derived", v.layout);
  TERN_CHECK_OR_RETURN_ERROR(derived ? v.recipe < h.num_recipes : v.recipe == kNoValue,
                             InvalidProgram,
                             "cpu blob: value %u: recipe %u, expected %s", i, v.recipe,
                             derived ? "one of the blob's recipes" : "none (4294967295)");
  const uint32_t type = v.source & 0xFFu;
  TERN_CHECK_OR_RETURN_ERROR(
      source ? (type >= 1 && type <= kLastSourceType && (v.source & ~kSourceFlagBits) == 0)
             : v.source == 0,
      InvalidProgram, "cpu blob: value %u: source field 0x%x, expected %s", i, v.source,
      source ? "a source type 1..4 and flag 0x100" : "0 on a value that is no source");
  if (source) {
    // The argument's exact bytes: f32 4 per element, nf4 two codes a byte, fp8 one.
    const SourceType t = static_cast<SourceType>(type);
    const uint64_t bytes = t == SourceType::F32 ? numel * 4
                           : t == SourceType::Nf4 ? (numel + 1) / 2
                                                  : numel;
    TERN_CHECK_OR_RETURN_ERROR(v.data_offset == 0 && v.data_bytes == bytes, InvalidProgram,
                               "cpu blob: value %u: source of %llu bytes (offset %llu), expected "
                               "%llu bytes (offset 0)",
                               i, static_cast<unsigned long long>(v.data_bytes),
                               static_cast<unsigned long long>(v.data_offset),
                               static_cast<unsigned long long>(bytes));
  } else if (derived) {
    TERN_CHECK_OR_RETURN_ERROR(v.data_offset == 0 && v.data_bytes == numel * 4, InvalidProgram,
                               "cpu blob: value %u: derived constant of %llu bytes (offset %llu), "
                               "expected %llu bytes (offset 0)",
                               i, static_cast<unsigned long long>(v.data_bytes),
                               static_cast<unsigned long long>(v.data_offset),
                               static_cast<unsigned long long>(numel * 4));
  }
  TERN_CHECK_OR_RETURN_ERROR(
      v.layout != static_cast<uint32_t>(ValueLayout::Nhwc) || (external && v.rank == 4),
      InvalidProgram, "cpu blob: value %u: NHWC layout needs an external 4-D value", i);
  TERN_CHECK_OR_RETURN_ERROR(
      v.layout != static_cast<uint32_t>(ValueLayout::Int64Plain) ||
          kind == ValueKind::ExternalInput,
      InvalidProgram, "cpu blob: value %u: the int64 layout needs an external input", i);
  TERN_CHECK_OR_RETURN_ERROR(
      v.layout != static_cast<uint32_t>(ValueLayout::BoolPlain) ||
          kind == ValueKind::ExternalInput,
      InvalidProgram, "cpu blob: value %u: the bool layout needs an external input", i);
  TERN_CHECK_OR_RETURN_ERROR(
      v.layout != static_cast<uint32_t>(ValueLayout::Int32Plain) ||
          kind == ValueKind::ExternalInput,
      InvalidProgram, "cpu blob: value %u: the int32 layout needs an external input", i);
  if (external) {
    TERN_CHECK_OR_RETURN_ERROR(v.arg < h.num_args, InvalidProgram,
                               "cpu blob: value %u: argument %u out of range (%u arguments)", i,
                               v.arg, h.num_args);
    TERN_CHECK_OR_RETURN_ERROR(!arg_used[v.arg], InvalidProgram,
                               "cpu blob: value %u: argument %u is bound twice", i, v.arg);
    arg_used[v.arg] = true;
  } else {
    TERN_CHECK_OR_RETURN_ERROR(v.arg == kNoValue, InvalidProgram,
                               "cpu blob: value %u: argument %u on a non-external value", i, v.arg);
  }
  if (kind == ValueKind::Constant) {
    TERN_CHECK_OR_RETURN_ERROR(v.data_bytes == numel * 4 && v.data_offset % 4 == 0, InvalidProgram,
                               "cpu blob: value %u: constant of %llu bytes at %llu, expected %llu "
                               "bytes at a multiple of 4",
                               i, static_cast<unsigned long long>(v.data_bytes),
                               static_cast<unsigned long long>(v.data_offset),
                               static_cast<unsigned long long>(numel * 4));
    TERN_CHECK_OR_RETURN_ERROR(range_within(v.data_offset, v.data_bytes + kExtraBytes, h.data_size),
                               InvalidProgram,
                               "cpu blob: value %u: constant bytes [%llu, +%llu) past the data "
                               "section (%llu bytes)",
                               i, static_cast<unsigned long long>(v.data_offset),
                               static_cast<unsigned long long>(v.data_bytes),
                               static_cast<unsigned long long>(h.data_size));
  } else if (!source && !derived && kind != ValueKind::View) {  // a view: check_view_value
    TERN_CHECK_OR_RETURN_ERROR(v.data_offset == 0 && v.data_bytes == 0, InvalidProgram,
                               "cpu blob: value %u: data on a non-constant value", i);
  }
  return Error::Ok;
}

/// Derived value `i`'s recipe (each recipe made by exactly one value: `recipe_used`): op,
/// flags and params legal, the value's size and dims what they give, and every source slot a
/// Source value of the element type and count the recipe reads (or left out where optional).
Error check_derived(uint32_t i, const BlobValue* values, uint32_t nv, const BlobRecipe* recipes,
                    bool* recipe_used) {
  const BlobValue& v = values[i];
  TERN_CHECK_OR_RETURN_ERROR(!recipe_used[v.recipe], InvalidProgram,
                             "cpu blob: value %u: recipe %u makes another value too", i, v.recipe);
  recipe_used[v.recipe] = true;
  const BlobRecipe& r = recipes[v.recipe];
  RecipeShape shape;
  const char* why = "";
  const char* name = recipe_op_name(r.op);
  TERN_CHECK_OR_RETURN_ERROR(recipe_shape(r, value_numel(v), &shape, &why), InvalidProgram,
                             "cpu blob: value %u: recipe %u (%s, op %u): %s", i, v.recipe, name,
                             r.op, why);
  TERN_CHECK_OR_RETURN_ERROR(shape.out_floats == value_numel(v), InvalidProgram,
                             "cpu blob: value %u: recipe %u (%s) makes %llu floats, the value "
                             "holds %llu",
                             i, v.recipe, name, static_cast<unsigned long long>(shape.out_floats),
                             static_cast<unsigned long long>(value_numel(v)));
  if (shape.out_rank != 0) {
    char a[128], b[128];
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v, shape.out_dims, shape.out_rank), InvalidProgram,
                               "cpu blob: value %u: dims %s, recipe %u (%s) makes %s", i,
                               dims_str(v.dims, v.rank, a, sizeof(a)), v.recipe, name,
                               dims_str(shape.out_dims, shape.out_rank, b, sizeof(b)));
  }
  for (uint32_t slot = 0; slot < kRecipeSources; ++slot) {
    const uint32_t id = r.sources[slot];
    const uint64_t want = shape.source_numel[slot];
    if (id == kNoValue) {
      TERN_CHECK_OR_RETURN_ERROR(want == 0 || shape.optional[slot], InvalidProgram,
                                 "cpu blob: value %u: recipe %u (%s): source %u missing", i,
                                 v.recipe, name, slot);
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(want != 0, InvalidProgram,
                               "cpu blob: value %u: recipe %u (%s): source slot %u is unused, "
                               "found value %u",
                               i, v.recipe, name, slot, id);
    TERN_CHECK_OR_RETURN_ERROR(
        id < nv && values[id].kind == static_cast<uint32_t>(ValueKind::Source), InvalidProgram,
        "cpu blob: value %u: recipe %u (%s): source %u is value %u, which is out of range (%u "
        "values) or no source",
        i, v.recipe, name, slot, id, nv);
    const uint32_t want_type =
        static_cast<uint32_t>(slot == 0 ? shape.quantized : SourceType::F32);
    TERN_CHECK_OR_RETURN_ERROR(
        (values[id].source & 0xFFu) == want_type && value_numel(values[id]) == want,
        InvalidProgram,
        "cpu blob: value %u: recipe %u (%s): source %u (value %u) has type %u and %llu elements, "
        "expected type %u and %llu",
        i, v.recipe, name, slot, id, values[id].source & 0xFFu,
        static_cast<unsigned long long>(value_numel(values[id])), want_type,
        static_cast<unsigned long long>(want));
  }
  return Error::Ok;
}

Error check_header(Span<const uint8_t> blob, BlobHeader* h) {
  TERN_CHECK_OR_RETURN_ERROR(blob.size() >= sizeof(BlobHeader), InvalidProgram,
                             "cpu blob: %zu bytes, shorter than its %zu-byte header", blob.size(),
                             sizeof(BlobHeader));
  std::memcpy(h, blob.data(), sizeof(BlobHeader));
  TERN_CHECK_OR_RETURN_ERROR(std::memcmp(h->magic, kBlobMagic, 4) == 0, InvalidProgram,
                             "cpu blob: bad magic %02x %02x %02x %02x, expected \"TCPU\"",
                             static_cast<uint8_t>(h->magic[0]), static_cast<uint8_t>(h->magic[1]),
                             static_cast<uint8_t>(h->magic[2]), static_cast<uint8_t>(h->magic[3]));
  TERN_CHECK_OR_RETURN_ERROR(h->version == kBlobVersion, DelegateInvalidCompatibility,
                             "cpu blob: version %u, this runtime reads version %u", h->version,
                             kBlobVersion);
  TERN_CHECK_OR_RETURN_ERROR(
      h->header_size == sizeof(BlobHeader) && h->value_record_size == sizeof(BlobValue) &&
          h->node_record_size == sizeof(BlobNode) && h->recipe_record_size == sizeof(BlobRecipe),
      InvalidProgram,
      "cpu blob: header/value/node/recipe sizes %u/%u/%u/%u, expected %zu/%zu/%zu/%zu",
      h->header_size, h->value_record_size, h->node_record_size, h->recipe_record_size,
      sizeof(BlobHeader), sizeof(BlobValue), sizeof(BlobNode), sizeof(BlobRecipe));
  TERN_CHECK_OR_RETURN_ERROR(h->num_values >= 1 && h->num_values <= kMaxValues &&
                                 h->num_nodes >= 1 && h->num_nodes <= kMaxNodes &&
                                 h->num_args <= kMaxArgs && h->num_recipes <= h->num_values,
                             InvalidProgram,
                             "cpu blob: %u values, %u nodes, %u arguments, %u recipes (1..2^20 "
                             "values and nodes, at most 2^20 arguments, at most a recipe a "
                             "value)",
                             h->num_values, h->num_nodes, h->num_args, h->num_recipes);
  const uint64_t tables = sizeof(BlobHeader) + uint64_t{h->num_values} * sizeof(BlobValue) +
                          uint64_t{h->num_nodes} * sizeof(BlobNode) +
                          uint64_t{h->num_recipes} * sizeof(BlobRecipe);
  TERN_CHECK_OR_RETURN_ERROR(h->data_offset % kDataAlignment == 0 && h->data_offset >= tables &&
                                 range_within(h->data_offset, h->data_size, blob.size()),
                             InvalidProgram,
                             "cpu blob: data section [%llu, +%llu) must start at a multiple of "
                             "%llu after the tables (%llu bytes) and end within the blob (%zu "
                             "bytes)",
                             static_cast<unsigned long long>(h->data_offset),
                             static_cast<unsigned long long>(h->data_size),
                             static_cast<unsigned long long>(kDataAlignment),
                             static_cast<unsigned long long>(tables), blob.size());
  return Error::Ok;
}

}  // namespace

const char* node_op_name(uint32_t op) { return op_name(op); }

const char* format_dims(const uint64_t* dims, uint32_t rank, char* buf, size_t size) {
  return dims_str(dims, rank, buf, size);
}

uint64_t value_numel(const BlobValue& v) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < v.rank && d < kMaxDims; ++d) n *= v.dims[d];
  return n;
}

void free_blob_plan(BlobPlan* plan) {
  std::free(plan->values);
  std::free(plan->nodes);
  std::free(plan->recipes);
  *plan = BlobPlan();
}

Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan) {
  *plan = BlobPlan();
  TERN_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(blob.data()) % 4 == 0, InvalidArgument,
                             "cpu blob: not 4-byte aligned");
  BlobHeader h;
  TERN_RETURN_IF_ERROR(check_header(blob, &h));
  const uint32_t nv = h.num_values, nn = h.num_nodes;
  BlobValue* values = static_cast<BlobValue*>(std::malloc(sizeof(BlobValue) * nv));
  BlobNode* nodes = static_cast<BlobNode*>(std::malloc(sizeof(BlobNode) * nn));
  const uint32_t nr = h.num_recipes;
  BlobRecipe* recipes = static_cast<BlobRecipe*>(std::malloc(sizeof(BlobRecipe) * (nr + 1)));
  // Per value: 1 once produced (or available: constant / external input); per argument: used;
  // per recipe: made by a value.
  uint8_t* ready = static_cast<uint8_t*>(std::calloc(nv, 1));
  bool* arg_used = static_cast<bool*>(std::calloc(h.num_args + 1, sizeof(bool)));
  bool* recipe_used = static_cast<bool*>(std::calloc(nr + 1, sizeof(bool)));
  Error err = Error::Ok;
  if (values == nullptr || nodes == nullptr || recipes == nullptr || ready == nullptr ||
      arg_used == nullptr || recipe_used == nullptr) {
    err = set_error_message(Error::MemoryAllocationFailed,
                            "cpu blob: no memory for %u values, %u nodes and %u recipes", nv, nn,
                            nr);
  }
  if (err == Error::Ok) {
    const uint8_t* tables = blob.data() + sizeof(BlobHeader);
    std::memcpy(values, tables, sizeof(BlobValue) * nv);
    std::memcpy(nodes, tables + sizeof(BlobValue) * nv, sizeof(BlobNode) * nn);
    if (nr > 0) {
      std::memcpy(recipes, tables + sizeof(BlobValue) * nv + sizeof(BlobNode) * nn,
                  sizeof(BlobRecipe) * nr);
    }
    for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
      err = check_value(i, values[i], h, arg_used);
      if (err == Error::Ok) err = check_dynamic_value(i, values[i]);
      if (err == Error::Ok) err = check_view_value(i, values, nv);
      const ValueKind k = static_cast<ValueKind>(values[i].kind);
      ready[i] = (k == ValueKind::Constant || k == ValueKind::Derived ||
                  k == ValueKind::ExternalInput)
                     ? 1
                     : 0;
    }
    for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
      if (values[i].kind != static_cast<uint32_t>(ValueKind::Derived)) continue;
      err = check_derived(i, values, nv, recipes, recipe_used);
    }
    for (uint32_t r = 0; r < nr && err == Error::Ok; ++r) {
      if (!recipe_used[r]) {
        err = set_error_message(Error::InvalidProgram, "cpu blob: recipe %u makes no value", r);
      }
    }
  }
  for (uint32_t n = 0; n < nn && err == Error::Ok; ++n) {
    const BlobNode& node = nodes[n];
    uint32_t min_in = 0, max_in = 0, const_mask = 0, either_mask = 0;
    if (node.op < static_cast<uint32_t>(NodeOp::Conv2d) ||
        node.op > kLastNodeOp) {
      err =
          set_error_message(Error::InvalidProgram, "cpu blob: node %u: unknown op %u", n, node.op);
      break;
    }
    op_arity(static_cast<NodeOp>(node.op), &min_in, &max_in, &const_mask, &either_mask);
    // A select's compared x may be a constant (tril / triu: the triangle's mask).
    if (node.op == static_cast<uint32_t>(NodeOp::Select) && node.params[0] != 0) either_mask |= 0x1;
    // A post-activation affine (ops 17 and 21) is the last input, a constant.
    if (has_post_affine(node) && node.num_inputs >= 1 && node.num_inputs <= kMaxNodeInputs) {
      const_mask |= 1u << (node.num_inputs - 1);
    }
    if (node.num_inputs < min_in || node.num_inputs > max_in) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu blob: node %u (%s): %u inputs, expected %u..%u", n,
                              op_name(node.op), node.num_inputs, min_in, max_in);
      break;
    }
    for (uint32_t i = 0; i < kMaxNodeInputs && err == Error::Ok; ++i) {
      const uint32_t id = node.inputs[i];
      if (i >= node.num_inputs) {
        if (id != kNoValue) {
          err = set_error_message(Error::InvalidProgram,
                                  "cpu blob: node %u (%s): unused input slot %u holds %u", n,
                                  op_name(node.op), i, id);
        }
        continue;
      }
      if (id < nv && values[id].kind == static_cast<uint32_t>(ValueKind::Source)) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u is value %u, a source (read by "
                                "recipes only)",
                                n, op_name(node.op), i, id);
        break;
      }
      if (id >= nv || !ready[is_view_value(values[id]) ? values[id].view_base : id]) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u is value %u, which is out of "
                                "range (%u values) or not made before this node",
                                n, op_name(node.op), i, id, nv);
        break;
      }
      auto constant = [&](uint32_t v) {
        return v < nv && (values[v].kind == static_cast<uint32_t>(ValueKind::Constant) ||
                          values[v].kind == static_cast<uint32_t>(ValueKind::Derived));
      };
      const bool is_const = constant(id);
      const bool want_const = (const_mask >> i) & 1u;
      if ((either_mask >> i) & 1u) continue;  // a constant or a data value
      // Weights must be constants; the data input must not be. A binary op needs one
      // non-constant operand of the two, a concatenation one of its inputs (since version 14:
      // a ViT's class token is a constant part).
      const NodeOp op = static_cast<NodeOp>(node.op);
      const bool any_data = (max_in == 2 && const_mask == 0) || op == NodeOp::Concat ||
                            op == NodeOp::RowConcat;
      bool others_const = true;
      for (uint32_t k = 0; any_data && k < node.num_inputs && k < kMaxNodeInputs; ++k) {
        if (k != i && !constant(node.inputs[k])) others_const = false;
      }
      if ((want_const && !is_const) || (!want_const && is_const && (!any_data || others_const))) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u (value %u) must %sbe a "
                                "constant",
                                n, op_name(node.op), i, id, want_const ? "" : "not ");
      }
    }
    if (err != Error::Ok) break;
    if (static_cast<NodeOp>(node.op) != NodeOp::ConstantPad &&
        static_cast<NodeOp>(node.op) != NodeOp::LayerNorm &&  // eps: checked with its shapes
        static_cast<NodeOp>(node.op) != NodeOp::GroupNorm &&
        static_cast<NodeOp>(node.op) != NodeOp::Attention &&  // the scale: check_attention
        (std::isnan(node.fparams[0]) || std::isnan(node.fparams[1]) ||
         !(node.fparams[0] <= node.fparams[1]))) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu blob: node %u (%s): output bounds [%g, %g] not ordered", n,
                              op_name(node.op), static_cast<double>(node.fparams[0]),
                              static_cast<double>(node.fparams[1]));
      break;
    }
    if (node.output >= nv || ready[node.output] ||
        (values[node.output].kind != static_cast<uint32_t>(ValueKind::Internal) &&
         values[node.output].kind != static_cast<uint32_t>(ValueKind::ExternalOutput))) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu blob: node %u (%s): output value %u is out of range (%u "
                              "values), made twice, a constant or an external input",
                              n, op_name(node.op), node.output, nv);
      break;
    }
    // An int64 value (indices) is read by QuantizedEmbedding's input 0 and IndexRows' input 1
    // only, a bool one (a condition) by Select's input 0 only, GroupedMatmul's ends (input 2)
    // are int32 or int64; every other input is f32.
    for (uint32_t i = 0; i < node.num_inputs && err == Error::Ok; ++i) {
      const uint32_t layout = values[node.inputs[i]].layout;
      const NodeOp op = static_cast<NodeOp>(node.op);
      const bool ends =
          i == 2 && (op == NodeOp::GroupedMatmul || op == NodeOp::QuantizedGroupedMatmul);
      const bool int32 = layout == static_cast<uint32_t>(ValueLayout::Int32Plain);
      const bool int64 = layout == static_cast<uint32_t>(ValueLayout::Int64Plain);
      const bool wants = (i == 0 && op == NodeOp::QuantizedEmbedding) ||
                         (i == 1 && op == NodeOp::IndexRows);
      const bool boolean = layout == static_cast<uint32_t>(ValueLayout::BoolPlain);
      const bool wants_bool = i == 0 && op == NodeOp::Select && node.params[0] == 0;
      if (ends != (int32 || int64) && (ends || int32)) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u (value %u) %s an int32 or "
                                "int64 value",
                                n, op_name(node.op), i, node.inputs[i],
                                ends ? "must be" : "is");
      } else if (!ends && int64 != wants) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u (value %u) %s an int64 value",
                                n, op_name(node.op), i, node.inputs[i],
                                int64 ? "is" : "must be");
      } else if (boolean != wants_bool) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): input %u (value %u) %s a bool value",
                                n, op_name(node.op), i, node.inputs[i],
                                boolean ? "is" : "must be");
      }
    }
    if (err != Error::Ok) break;
    err = check_dynamic_node(n, node, values);
    if (err != Error::Ok) break;
    err = check_node_shapes(n, node, values, blob.data() + h.data_offset);
    if (err == Error::Ok && static_cast<NodeOp>(node.op) == NodeOp::GroupedMatmul &&
        values[node.inputs[1]].kind == static_cast<uint32_t>(ValueKind::Derived)) {
      // A recipe's packing is what the node reads: the grouped packing of its own E, K, N.
      const BlobRecipe& r = recipes[values[node.inputs[1]].recipe];
      if (r.op != static_cast<uint32_t>(RecipeOp::PackGroupedKn) ||
          std::memcmp(r.params, node.params, sizeof(uint32_t) * 3) != 0) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): weight value %u is made by recipe %u "
                                "(%s), expected a pack_grouped_kn recipe of the node's E, K, N",
                                n, op_name(node.op), node.inputs[1],
                                values[node.inputs[1]].recipe, recipe_op_name(r.op));
      }
    }
    const bool quant = static_cast<NodeOp>(node.op) == NodeOp::QuantizedFullyConnected ||
                       static_cast<NodeOp>(node.op) == NodeOp::QuantizedGroupedMatmul ||
                       static_cast<NodeOp>(node.op) == NodeOp::QuantizedEmbedding;
    if (err == Error::Ok && quant &&
        values[node.inputs[1]].kind == static_cast<uint32_t>(ValueKind::Derived)) {
      // The codes a recipe makes are checked at prepare (finite FP8 codes), so the recipe must
      // be the quantized weight's of the node's own parameters.
      const BlobRecipe& r = recipes[values[node.inputs[1]].recipe];
      if (r.op != static_cast<uint32_t>(RecipeOp::QuantWeight) ||
          std::memcmp(r.params, node.params, sizeof(uint32_t) * kQuantParamCount) != 0) {
        err = set_error_message(Error::InvalidProgram,
                                "cpu blob: node %u (%s): weight value %u is made by recipe %u "
                                "(%s), expected a quant_weight recipe of the node's parameters",
                                n, op_name(node.op), node.inputs[1],
                                values[node.inputs[1]].recipe, recipe_op_name(r.op));
      }
    }
    ready[node.output] = 1;
  }
  uint32_t num_outputs = 0;
  for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
    const ValueKind k = static_cast<ValueKind>(values[i].kind);
    if (k == ValueKind::ExternalOutput) ++num_outputs;
    if (!ready[i] && k != ValueKind::Source && k != ValueKind::View) {
      err = set_error_message(Error::InvalidProgram,
                              "cpu blob: value %u (%s) is never made by a node", i,
                              k == ValueKind::Internal ? "internal" : "external output");
    }
  }
  if (err == Error::Ok && num_outputs == 0) {
    err = set_error_message(Error::InvalidProgram, "cpu blob: no external output");
  }
  std::free(ready);
  std::free(arg_used);
  std::free(recipe_used);
  if (err != Error::Ok) {
    std::free(values);
    std::free(nodes);
    std::free(recipes);
    return err;
  }
  plan->header = h;
  plan->values = values;
  plan->nodes = nodes;
  plan->recipes = recipes;
  plan->data = blob.data() + h.data_offset;
  plan->data_size = h.data_size;
  for (uint32_t i = 0; i < nv; ++i) plan->dynamic = plan->dynamic || is_dynamic_value(values[i]);
  return Error::Ok;
}

}  // namespace tern::cpu
