// Elementwise binaries, selects and wheres, triangles, reductions, normalizations and pools.
#include <algorithm>
#include <cstring>

#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

void Lowering::lower_binary(const Node& node) {
  const double alpha = binary_alpha(g_, node);
  if (fuse_residual_into_conv(node, alpha) || fuse_multiplier_into_gemm(node)) return;
  if (node.op == "tern::mul" && node.args[0] == node.args[1] &&
      fuse_activation_into_gemm(node.args[0], node.outputs[0], cpu::GemmActivation::Square, 2)) {
    return;  // y · y of tern's GEMM or conv output: the square in its epilogue
  }
  if (lower_channel_affine_binary(node, alpha)) return;
  const size_t r = g_.values[static_cast<size_t>(node.outputs[0])].sizes.size();
  const bool plain = is_plain_4d(node.outputs[0]);
  const uint32_t a = binary_operand(node.args[0], r, 1.0, plain);
  const uint32_t b = binary_operand(node.args[1], r, alpha, plain);
  NodeOp op = NodeOp::Add;
  if (node.op == "tern::sub") op = NodeOp::Subtract;
  if (node.op == "tern::mul") op = NodeOp::Multiply;
  if (node.op == "tern::div") op = NodeOp::Divide;
  if (node.op == "tern::maximum") op = NodeOp::Maximum;
  if (node.op == "tern::minimum") op = NodeOp::Minimum;
  add_node(op, {a, b}, output(node.outputs[0]));
}

/// where(cond, x, y) of a bool activation condition: tern's select (op 44). The condition is
/// a region input (bool ops stay outside) bound as a BoolPlain value of its tern dims; x and
/// y are read plain (a number or 0-D constant as one value); the output is plain
/// (layout_plan: makes_plain).
void Lowering::lower_select(const Node& node) {
  check_where_of_activation_condition(g_, node);
  // A condition made by a comparison in the region (x OP number): fused (mode 1..6), x read
  // plain; else a region input bound as BoolPlain (mode 0).
  uint32_t mode = 0, s_bits = 0, cond = 0;
  if (auto c = fused_compares_.find(node.args[0]); c != fused_compares_.end()) {
    const Node& cmp = g_.nodes[static_cast<size_t>(c->second)];
    const float s = check_fused_comparison(g_, cmp);
    mode = select_compare_mode(cmp.op);
    std::memcpy(&s_bits, &s, 4);
    cond = activation_as(cmp.args[0], /*plain=*/true);
  } else {
    cond = typed_input(node.args[0], ValueLayout::BoolPlain, "a where's condition");
  }
  auto operand = [&](int vid) -> uint32_t {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Double) {
      const double s =
          v.kind == Value::Kind::Int ? static_cast<double>(v.int_value) : v.double_value;
      return add_constant({1}, {static_cast<float>(s)});
    }
    if (v.is_constant) {
      if (v.sizes.empty()) return constant_as(vid, {1});
      return constant_as(vid, std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()));
    }
    return activation_as(vid, /*plain=*/true);
  };
  const uint32_t a = operand(node.args[1]);
  const uint32_t b = operand(node.args[2]);
  BlobNode& sel = add_node(NodeOp::Select, {cond, a, b}, output(node.outputs[0]));
  sel.params[0] = mode;
  sel.params[1] = s_bits;
}

/// Whether pow node `node` (checked by supports) has an exponent of 2, 3 or 0.5: products or
/// a sqrt (small_pow_exponent's test).
bool Lowering::is_small_pow(const Node& node) const {
  const double v = number(g_, node.args[1], "exponent");
  return v == 2.0 || v == 3.0 || v == 0.5;
}

/// tril / triu of an activation: tern's select (op 44, mode 1) of x where a constant mask
/// over the last two dims is > 0.5, else 0 (where_select.h: triangle_keep_mask).
void Lowering::lower_triangle(const Node& node) {
  int64_t rows = 0, cols = 0;
  const std::vector<float> mask = triangle_keep_mask(g_, node, &rows, &cols);
  const uint32_t keep =
      add_constant({static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)}, mask);
  const uint32_t x = activation_as(node.args[0], /*plain=*/true);
  const uint32_t zero = add_constant({1}, {0.0f});
  BlobNode& sel = add_node(NodeOp::Select, {keep, x, zero}, output(node.outputs[0]));
  const float half = 0.5f;
  sel.params[0] = static_cast<uint32_t>(cpu::SelectMode::Greater);
  std::memcpy(&sel.params[1], &half, 4);
}

/// where(cond, x, y) with a constant condition (where_select.h): one constant side: minimum
/// by the upper bounds, then maximum by the lower ones; two activations: each one's minimum
/// by its bound, then their maximum. Bounds are constants laid out as the output (NHWC for
/// an NHWC 4-D output).
void Lowering::lower_where(const Node& node) {
  const WhereSelect w = where_select(g_, node);
  const int out = node.outputs[0];
  const bool plain = is_plain_4d(out);
  const size_t r = w.dims.size();
  const uint32_t a = r == 4 ? activation_as(w.activation, plain) : activation(w.activation);
  auto laid_out = [&](const std::vector<float>& v) {
    if (r != 4 || plain) {
      return add_constant(std::vector<uint64_t>(w.dims.begin(), w.dims.end()), v);
    }
    const int64_t n = w.dims[0], c = w.dims[1], h = w.dims[2], wd = w.dims[3];
    std::vector<float> nhwc(v.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < wd; ++x)
            nhwc[static_cast<size_t>(((i * h + y) * wd + x) * c + ch)] =
                v[static_cast<size_t>(((i * c + ch) * h + y) * wd + x)];
    return add_constant(xnn_dims(w.dims), nhwc);
  };
  const uint32_t clipped = internal(dims_of(out));
  add_node(NodeOp::Minimum, {a, laid_out(w.upper)}, clipped);
  if (w.other < 0) {
    add_node(NodeOp::Maximum, {clipped, laid_out(w.lower)}, output(out));
    return;
  }
  const uint32_t b = r == 4 ? activation_as(w.other, plain) : activation(w.other);
  const uint32_t other = internal(dims_of(out));
  add_node(NodeOp::Minimum, {b, laid_out(w.other_upper)}, other);
  add_node(NodeOp::Maximum, {clipped, other}, output(out));
}

/// A standalone batch_norm (not after a conv, e.g. DenseNet's pre-activation one): a
/// multiply-add by per-channel constants folded here. On an NHWC 4-D x one XNNPACK 1x1
/// depthwise conv (filter [1, 1, 1, C], one pass over x: DenseNet's BN -> ReLU took 4.5 ms of
/// 24 as a multiply and an add, 1.4 ms so); else XNNPACK multiply and add ([1, C] or [1, C, 1]
/// for plain ones). A relu after it fuses into the last node's output range (XNNPACK).
void Lowering::lower_batch_norm(const Node& node) {
  const BatchNormAffine a = batch_norm_affine(g_, node);
  const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
  if (xv.sizes.size() == 4 && is_nhwc(node.args[0])) {
    channel_affine(node, node.args[0], a);  // the epilogue fold tried there first
    return;
  }
  if (fuse_batch_norm_into_epilogue(node, a)) return;
  const uint64_t c = a.scale.size();
  std::vector<uint64_t> cdims;
  if (xv.sizes.size() == 4) {
    cdims = {1, 1, 1, c};
  } else if (xv.sizes.size() == 3) {
    cdims = {1, c, 1};
  } else {
    cdims = {1, c};
  }
  const uint32_t x = activation(node.args[0]);
  const uint32_t scaled = internal(xnn_dims(xv.sizes));
  add_node(NodeOp::Multiply, {x, add_constant(cdims, a.scale)}, scaled);
  add_node(NodeOp::Add, {scaled, add_constant(cdims, a.shift)}, output(node.outputs[0]));
}

/// A binary op of an NHWC activation and a per-channel constant (channel_affine_binary):
/// one multiply-add per channel (channel_affine) rather than XNNPACK's broadcasting binary,
/// which steps one row of C at a time (an RGB input's normalisation: rows of 3 floats).
bool Lowering::lower_channel_affine_binary(const Node& node, double alpha) {
  const ChannelAffineBinary b = channel_affine_binary(g_, node, alpha);
  if (b.x < 0 || !is_nhwc(b.x) || !is_nhwc(node.outputs[0])) return false;
  channel_affine(node, b.x, b.affine);
  return true;
}

/// y = x · scale + shift per channel of an NHWC activation x (node's output y): folded into
/// the affine that made x when one did (an input's (x − mean) / std is one node), else into
/// the epilogue of the GEMM or bottleneck that made it, else a 1x1 depthwise conv of filter
/// [1, 1, 1, C] = scale and bias = shift (a relu after it fuses into its output range).
void Lowering::channel_affine(const Node& node, int x, const BatchNormAffine& a) {
  const int y = node.outputs[0];
  const uint64_t c = a.scale.size();
  const uint32_t made = made_value(x);
  BlobNode* prev = made == cpu::kNoValue || channel_affines_.count(made) == 0 ? nullptr : maker_of(made);
  if (prev != nullptr && ids_.count(x) != 0 && uses_.at(x) == 1 && output_arg_.count(x) == 0 &&
      !shared(made) && prev->fparams[0] == -kInf && prev->fparams[1] == kInf) {
    float* s = constant_data(prev->inputs[1]);
    float* t = constant_data(prev->inputs[2]);
    for (size_t i = 0; i < c; ++i) {  // a·(s x + t) + b, rounded once
      t[i] = static_cast<float>(static_cast<double>(a.scale[i]) * t[i] + a.shift[i]);
      s[i] = static_cast<float>(static_cast<double>(a.scale[i]) * s[i]);
    }
    rename_result(x, y);
    return;
  }
  Node unary = node;
  unary.args = {x};
  if (fuse_batch_norm_into_epilogue(unary, a)) return;
  ConvAttrs unit{};
  unit.stride[0] = unit.stride[1] = 1;
  unit.dilation[0] = unit.dilation[1] = 1;
  unit.groups = static_cast<int64_t>(c);
  unit.depthwise = true;
  const uint32_t out = output(y);
  BlobNode& n = add_node(NodeOp::DepthwiseConv2d,
                         {activation(x), add_constant({1, 1, 1, c}, a.scale), add_constant({c}, a.shift)},
                         out);
  set_window_params(n, unit, 1, 1);
  n.params[cpu::kGroups] = 1;                                  // depth multiplier
  n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(c);  // input channels
  channel_affines_.insert(out);
}

/// A mean, sum or amax (ReductionAttrs): its reduced dims are one range of x's blob dims (NHWC or
/// row-major, as check_layout allowed), so x is
/// [outer, mid, inner] with mid reduced. Over the last dims (inner 1): XNNPACK's
/// fully-connected node with a [1, mid] filter of 1/mid (1 for a sum). Else XNNPACK's global
/// average pool of x seen as [outer, mid, 1, inner] (a reshape first unless x is 4-D and mid
/// its dims 1 and 2: an NHWC spatial mean, GRN's sum over H, W of [N, H, W, C]), times mid
/// for a sum. A reshape to the output's dims where they differ (same bytes). A 4-D NHWC output
/// of a reduction of more dims (a five-dim sum the layout plan keeps NHWC for a GroupSum,
/// group_sum_match.h, that the matcher did not take) is computed row-major, then copied into
/// NHWC order.
void Lowering::lower_reduction(const Node& node) {
  const ReductionAttrs a = reduction_attrs(g_, node);
  const std::vector<uint64_t> bx = dims_of(node.args[0]);
  std::vector<bool> red = a.reduced;  // per blob dim
  if (is_nhwc(node.args[0])) {        // blob dims N, H, W, C (check_layout)
    red = {a.reduced[0], a.reduced[2], a.reduced[3], a.reduced[1]};
  }
  size_t first = bx.size(), last = 0;
  for (size_t d = 0; d < bx.size(); ++d) {
    if (red[d]) {
      first = std::min(first, d);
      last = d;
    }
  }
  uint64_t outer = 1, mid = 1, inner = 1;
  for (size_t d = 0; d < bx.size(); ++d) (d < first ? outer : d <= last ? mid : inner) *= bx[d];
  const uint32_t x = activation(node.args[0]);
  const int y = node.outputs[0];
  const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(y)].sizes;
  const bool relayout = bx.size() > 4 && is_nhwc(y);
  const std::vector<uint64_t> out_dims =
      relayout ? std::vector<uint64_t>(ys.begin(), ys.end()) : dims_of(y);
  uint32_t target_id = cpu::kNoValue;  // made once, on first use
  auto target = [&] {
    if (target_id == cpu::kNoValue) target_id = relayout ? internal(out_dims) : output(y);
    return target_id;
  };
  uint32_t result;
  std::vector<uint64_t> result_dims;
  if (a.max) {  // XNNPACK's max pooling over a window of the reduced extent (Hiera's amax)
    // Max pooling over the window [mid, 1] of x seen as [outer, mid, 1, inner]; NaN handling
    // is XNNPACK's, where the portable kernel propagates NaN.
    const uint32_t in = internal({outer, mid, 1, inner});
    add_node(NodeOp::Reshape, {x}, in);
    result_dims = {outer, 1, 1, inner};
    result = result_dims == out_dims ? target() : internal(result_dims);
    if (mid == 1) {  // nothing to reduce: a copy
      add_node(NodeOp::Reshape, {in}, result);
    } else {
      BlobNode& n = add_node(NodeOp::MaxPool2d, {in}, result);
      n.params[cpu::kKernelH] = static_cast<uint32_t>(mid);
      n.params[cpu::kKernelW] = 1;
      n.params[cpu::kStrideH] = n.params[cpu::kStrideW] = 1;
      n.params[cpu::kDilationH] = n.params[cpu::kDilationW] = 1;
    }
  } else if (inner == 1) {
    // Dims of 1 after the reduced ones: the node reduces through to the last dim (the
    // fully-connected node reduces x's last dim, and the dims after `last` are all 1).
    last = bx.size() - 1;
    result_dims = bx;
    for (size_t d = first; d < bx.size(); ++d) result_dims[d] = 1;
    result_dims.resize(first + 1);
    const uint32_t f = add_constant(
        {1, mid}, std::vector<float>(mid, a.sum ? 1.0f : static_cast<float>(1.0 / mid)));
    // The fully-connected node reduces the last dim alone: x's other reduced dims go first.
    const uint32_t in = last == first ? x : internal({outer, mid});
    if (in != x) add_node(NodeOp::Reshape, {x}, in);
    if (in != x) result_dims = {outer, 1};
    result = result_dims == out_dims ? target() : internal(result_dims);
    add_node(NodeOp::FullyConnected, {in, f}, result);
  } else {
    const bool direct = bx.size() == 4 && first == 1 && last == 2;
    const uint32_t in = direct ? x : internal({outer, mid, 1, inner});
    if (!direct) add_node(NodeOp::Reshape, {x}, in);
    result_dims = {outer, 1, 1, inner};
    const uint32_t final_id =
        result_dims == out_dims ? target() : internal(result_dims);
    if (a.sum) {
      const uint32_t mean = internal(result_dims);
      add_node(NodeOp::GlobalAvgPool2d, {in}, mean);
      add_node(NodeOp::Multiply, {mean, add_constant({1}, {static_cast<float>(mid)})}, final_id);
    } else {
      add_node(NodeOp::GlobalAvgPool2d, {in}, final_id);
    }
    result = final_id;
  }
  if (result_dims != out_dims) add_node(NodeOp::Reshape, {result}, target());
  if (relayout) emit_copy(whole_value(target(), ys, false), true, output(y));
}

/// A norm's gamma and beta of C values: the weight or bias in place (an Alias); None: the
/// attributes' ones / zeros, embedded.
std::pair<uint32_t, uint32_t> Lowering::norm_affine(const Node& node,
                                                    const std::vector<float>& gamma,
                                                    const std::vector<float>& beta) {
  const uint64_t c = gamma.size();
  const uint32_t g =
      is_none(g_, node.args[2]) ? add_constant({c}, gamma) : constant_as(node.args[2], {c});
  const uint32_t b =
      is_none(g_, node.args[3]) ? add_constant({c}, beta) : constant_as(node.args[3], {c});
  return {g, b};
}

/// layer_norm over the last dim: tern's own node (op 25).
void Lowering::lower_layer_norm(const Node& node) {
  const LayerNormAttrs a = layer_norm_attrs(g_, node);
  const uint32_t x = activation(node.args[0]);
  const auto [gamma, beta] = norm_affine(node, a.gamma, a.beta);
  BlobNode& n = add_node(NodeOp::LayerNorm, {x, gamma, beta}, output(node.outputs[0]));
  n.fparams[0] = a.eps;
  n.fparams[1] = 0.0f;
}

/// rms_norm over the last dim: op 25 in RMS mode (params[0] = 1; beta unused, zeros).
void Lowering::lower_rms_norm(const Node& node) {
  const LayerNormAttrs a = rms_norm_attrs(g_, node);
  const uint32_t x = activation(node.args[0]);
  const uint64_t c = a.gamma.size();
  const uint32_t gamma =
      is_none(g_, node.args[2]) ? add_constant({c}, a.gamma) : constant_as(node.args[2], {c});
  BlobNode& n =
      add_node(NodeOp::LayerNorm, {x, gamma, add_constant({c}, a.beta)}, output(node.outputs[0]));
  n.params[0] = 1;
  n.fparams[0] = a.eps;
  n.fparams[1] = 0.0f;
}

/// RMS norm written out (rms_norm_match.h): tern's layer norm node in its RMS mode over the
/// last dim, the weight (or ones) as gamma.
void Lowering::lower_rms_norm_match(const RmsNormMatch& m) {
  const uint64_t c = static_cast<uint64_t>(g_.values[static_cast<size_t>(m.x)].sizes.back());
  const uint32_t x = activation(m.x);
  const uint32_t gamma = m.weight >= 0 ? constant_as(m.weight, {c})
                                       : add_constant({c}, std::vector<float>(c, 1.0f));
  BlobNode& n = add_node(NodeOp::LayerNorm,
                         {x, gamma, add_constant({c}, std::vector<float>(c, 0.0f))},
                         output(m.y));
  n.params[0] = 1;
  n.fparams[0] = static_cast<float>(m.eps);
  n.fparams[1] = 0.0f;
}

/// A channel-group sum (group_sum_match.h): tern's GroupSum node (op 48) over the NHWC parts
/// in place, the weight A [N, R, C, 1, 1] read as its [N, R C] bytes.
void Lowering::lower_group_sum(const GroupSumMatch& m) {
  std::vector<uint32_t> ins;
  for (int x : m.parts) ins.push_back(activation(x));
  if (m.weight >= 0) ins.push_back(activation(m.weight));
  BlobNode& n = add_node(NodeOp::GroupSum, ins, output(m.y));
  n.params[0] = m.weight >= 0 ? 1 : 0;
}

/// group_norm of an NHWC activation: tern's own node (op 30) over its channels-last dims.
/// A 3-D x [N, C, L] (wav2vec2's first feature layer) is read and written as NHWC
/// [N, 1, L, C] (nlc_input / nlc_output), as a conv1d's; a 5-D x [N, C, D, H, W] (video
/// UNets and VAEs between their 3-D convs) as NDHWC [N, D, H, W, C] (ndhwc_input /
/// ndhwc_output, no copy after a conv3d): op 30 normalizes every dim between N and C.
void Lowering::lower_group_norm(const Node& node) {
  const GroupNormAttrs a = group_norm_attrs(g_, node);
  const size_t rank = g_.values[static_cast<size_t>(node.args[0])].sizes.size();
  const uint32_t x = rank == 3   ? nlc_input(node.args[0])
                     : rank == 5 ? ndhwc_input(node.args[0])
                                 : activation(node.args[0]);
  const auto [gamma, beta] = norm_affine(node, a.gamma, a.beta);
  const uint32_t y = rank == 3   ? nlc_output(node.outputs[0])
                     : rank == 5 ? ndhwc_output(node.outputs[0])
                                 : output(node.outputs[0]);
  BlobNode& n = add_node(NodeOp::GroupNorm, {x, gamma, beta}, y);
  n.params[0] = static_cast<uint32_t>(a.groups);
  n.fparams[0] = a.eps;
  n.fparams[1] = 0.0f;
}

void Lowering::lower_pool(const Node& node, bool is_max) {
  PoolAttrs a = pool_attrs(g_, node, is_max);
  if (a.subsample) {  // a 1x1 window: every stride-th pixel, copied in NHWC order
    const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
    StridedView v = view_of(node.args[0]);
    v = sliced(v, 2, 0, a.stride[0], ys[2]);
    v = sliced(v, 3, 0, a.stride[1], ys[3]);
    emit_copy(v, /*nhwc=*/true, output(node.outputs[0]));
    return;
  }
  uint32_t x = activation_as(node.args[0], /*plain=*/false);  // NHWC (a copy of a plain x)
  if (a.zero_pad_first) {  // count_include_pad with padding: zeros, then a pool without it
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
    const uint64_t ph = static_cast<uint64_t>(a.pad[0]), pw = static_cast<uint64_t>(a.pad[1]);
    const uint32_t padded =
        internal({static_cast<uint64_t>(xv.sizes[0]), static_cast<uint64_t>(xv.sizes[2]) + 2 * ph,
                  static_cast<uint64_t>(xv.sizes[3]) + 2 * pw, static_cast<uint64_t>(xv.sizes[1])});
    BlobNode& p = add_node(NodeOp::ConstantPad, {x}, padded);
    p.params[1] = p.params[cpu::kMaxDims + 1] = static_cast<uint32_t>(ph);  // H (NHWC dim 1)
    p.params[2] = p.params[cpu::kMaxDims + 2] = static_cast<uint32_t>(pw);  // W
    p.fparams[0] = 0.0f;
    p.fparams[1] = 0.0f;
    x = padded;
    a.pad[0] = a.pad[1] = 0;
  }
  BlobNode& n =
      add_node(is_max ? NodeOp::MaxPool2d : NodeOp::AvgPool2d, {x}, output(node.outputs[0]));
  n.params[cpu::kPadTop] = static_cast<uint32_t>(a.pad[0]);
  n.params[cpu::kPadBottom] = static_cast<uint32_t>(a.pad[0] + a.extra_pad[0]);
  n.params[cpu::kPadLeft] = static_cast<uint32_t>(a.pad[1]);
  n.params[cpu::kPadRight] = static_cast<uint32_t>(a.pad[1] + a.extra_pad[1]);
  n.params[cpu::kKernelH] = static_cast<uint32_t>(a.kernel[0]);
  n.params[cpu::kKernelW] = static_cast<uint32_t>(a.kernel[1]);
  n.params[cpu::kStrideH] = static_cast<uint32_t>(a.stride[0]);
  n.params[cpu::kStrideW] = static_cast<uint32_t>(a.stride[1]);
  n.params[cpu::kDilationH] = static_cast<uint32_t>(a.dilation[0]);
  n.params[cpu::kDilationW] = static_cast<uint32_t>(a.dilation[1]);
}

}  // namespace tern::compiler::cpu_compile::lowering
