#include "backends/cpu/runtime/blob_conv_checks.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/runtime/blob_check_util.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

namespace {

/// The node's input 0 is NHWC with `in_c` channels, or an error.
Error check_nhwc_input(uint32_t n, const BlobNode& node, const BlobValue* v, uint64_t in_c) {
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 4 && x.dims[3] == in_c, InvalidProgram,
                             "cpu blob: node %u (%s): input value %u: expected 4 dims with %llu "
                             "channels last, found rank %u",
                             n, node_op_name(node.op), node.inputs[0],
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
                               n, node_op_name(node.op), w.name, static_cast<unsigned long long>(span),
                               static_cast<unsigned long long>(padded));
    out[1 + d] = (padded - span) / q[w.stride] + 1;
  }
  if (residual) {
    TERN_RETURN_IF_ERROR(check_residual(n, node, v, out, 4));
  }
  return check_out_dims(n, node, v[node.output], out, 4);
}

}  // namespace

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
                      node_op_name(node.op), node.inputs[1], format_dims(f.dims, f.rank, a, sizeof(a)),
                      format_dims(fexp, 4, b, sizeof(b)));
  }
  if (node.num_inputs == 3) {
    TERN_CHECK_OR_RETURN_ERROR(dims_equal(v[node.inputs[2]], &out_c, 1), InvalidProgram,
                               "cpu blob: node %u (%s): bias value %u: expected [%llu]", n,
                               node_op_name(node.op), node.inputs[2],
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
                      n, node.inputs[1], format_dims(f.dims, f.rank, a, sizeof(a)),
                      format_dims(fexp, 4, b, sizeof(b)));
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
                             n, node_op_name(node.op), act);
  float slope = 0.0f;
  std::memcpy(&slope, &alpha, 4);
  TERN_CHECK_OR_RETURN_ERROR(
      act == kLeakyReluActivation ? (std::isfinite(slope) && slope >= 0.0f) : alpha == 0,
      InvalidProgram,
      "cpu blob: node %u (%s): activation parameter bits 0x%08x with activation %u, expected "
      "%s",
      n, node_op_name(node.op), alpha, act,
      act == kLeakyReluActivation ? "a finite slope >= 0" : "0");
  return Error::Ok;
}

Error check_packed_conv(uint32_t n, const BlobNode& node, const BlobValue* v) {
  const bool winograd = static_cast<NodeOp>(node.op) == NodeOp::PackedWinogradConv2d;
  // Ops 18 and 19 have their epilogue activation at kPackedActivation and its slope at
  // kPackedActivationAlpha; op 18 its groups between them (op 19: 0).
  TERN_RETURN_IF_ERROR(check_params_range(n, node, 15, kKernelH, 12));
  TERN_CHECK_OR_RETURN_ERROR(!winograd || node.params[kWinogradTile] == kWinogradTileF2x2 ||
                                 node.params[kWinogradTile] == kWinogradTileF4x4,
                             InvalidProgram,
                             "cpu blob: node %u (%s): tile field %u, expected %u (F(2x2, 3x3)) or "
                             "%u (F(4x4, 3x3))",
                             n, node_op_name(node.op), node.params[kWinogradTile],
                             kWinogradTileF2x2, kWinogradTileF4x4);
  TERN_RETURN_IF_ERROR(check_epilogue_activation(n, node, node.params[kPackedActivation],
                                                 node.params[kPackedActivationAlpha]));
  const BlobValue& f = v[node.inputs[1]];
  const uint64_t kh = node.params[kKernelH], kw = node.params[kKernelW];
  const uint64_t in_c = node.params[kPackedInChannels], out_c = node.params[kPackedOutChannels];
  const uint64_t groups = winograd ? 1 : conv_groups(node.params[kPackedGroups]);
  TERN_CHECK_OR_RETURN_ERROR(in_c % groups == 0 && out_c % groups == 0, InvalidProgram,
                             "cpu blob: node %u (%s): %llu groups do not divide %llu input and "
                             "%llu output channels",
                             n, node_op_name(node.op), static_cast<unsigned long long>(groups),
                             static_cast<unsigned long long>(in_c),
                             static_cast<unsigned long long>(out_c));
  TERN_RETURN_IF_ERROR(check_nhwc_input(n, node, v, in_c));
  uint64_t taps = 0, k = 0;
  TERN_CHECK_OR_RETURN_ERROR(
      checked_mul(kh, kw, &taps) && checked_mul(taps, in_c / groups, &k) && k <= kMaxDim,
      InvalidProgram, "cpu blob: node %u (%s): %llux%llu window x %llu channels is too large", n,
      node_op_name(node.op), static_cast<unsigned long long>(kh), static_cast<unsigned long long>(kw),
      static_cast<unsigned long long>(in_c));
  if (winograd) {
    const uint32_t* q = node.params;
    TERN_CHECK_OR_RETURN_ERROR(kh == 3 && kw == 3 && q[kStrideH] == 1 && q[kStrideW] == 1 &&
                                   q[kDilationH] == 1 && q[kDilationW] == 1,
                               InvalidProgram,
                               "cpu blob: node %u (%s): expected a 3x3 window, stride 1, dilation "
                               "1; found %llux%llu, stride %ux%u, dilation %ux%u",
                               n, node_op_name(node.op), static_cast<unsigned long long>(kh),
                               static_cast<unsigned long long>(kw), q[kStrideH], q[kStrideW],
                               q[kDilationH], q[kDilationW]);
  }
  // One group's packed floats stay below 2^62 (O/G <= 2^30, K <= 2^31); all G of them may not.
  uint64_t want = 0;
  bool fits = true;
  if (winograd) {
    want = winograd_packed_floats(out_c, in_c, node.params[kWinogradTile]);
  } else {
    fits = checked_mul(groups, packed_fc_floats(out_c / groups, k), &want);
  }
  TERN_CHECK_OR_RETURN_ERROR(
      fits && f.rank == 1 && f.dims[0] == want, InvalidProgram,
      "cpu blob: node %u (%s): packed weight value %u is not [%llu] (%llu "
      "out channels x %llux%llux%llu, %llu groups)",
      n, node_op_name(node.op), node.inputs[1], static_cast<unsigned long long>(want),
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
                             node_op_name(node.op));
  TERN_CHECK_OR_RETURN_ERROR(
      is_max || (node.params[kDilationH] == 1 && node.params[kDilationW] == 1), InvalidProgram,
      "cpu blob: node %u (%s): dilation must be 1", n, node_op_name(node.op));
  const BlobValue& x = v[node.inputs[0]];
  TERN_CHECK_OR_RETURN_ERROR(x.rank == 4, InvalidProgram,
                             "cpu blob: node %u (%s): input value %u: expected 4 dims, found %u", n,
                             node_op_name(node.op), node.inputs[0], x.rank);
  return check_window_output(n, node, v, x.dims[3], /*residual=*/false);
}

}  // namespace tern::cpu
