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
#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_conv_checks.h"
#include "backends/cpu/runtime/blob_gather_checks.h"
#include "backends/cpu/runtime/blob_matmul_checks.h"
#include "backends/cpu/runtime/blob_quant_checks.h"
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
                                   n, i, node.inputs[i], format_dims(in.dims, in.rank, a, sizeof(a)),
                                   format_dims(x.dims, x.rank, b, sizeof(b)));
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
                          format_dims(e.dims, e.rank, a, sizeof(a)),
                          format_dims(expect, x.rank, b, sizeof(b)));
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
                               format_dims(v.dims, v.rank, a, sizeof(a)), v.recipe, name,
                               format_dims(shape.out_dims, shape.out_rank, b, sizeof(b)));
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
