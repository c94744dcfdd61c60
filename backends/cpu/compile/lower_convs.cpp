// Convolutions (1-D, 2-D, 3-D, transposed, depthwise, Winograd, fused bottlenecks) and the
// residual adds folded into them.
#include <algorithm>

#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

/// A pointwise conv (1x1, stride 1, no padding, one group) of an NHWC tensor is a
/// fully-connected layer over its pixels: x [N, H, W, C] -> [N, H, W, O] with weight [O, C].
bool Lowering::is_pointwise(const ConvAttrs& a, const std::vector<int64_t>& w) {
  return !a.depthwise && a.groups == 1 && w[2] == 1 && w[3] == 1 && a.stride[0] == 1 &&
         a.stride[1] == 1 && a.pad[0] == 0 && a.pad[1] == 0 && a.pad_end[0] == 0 &&
         a.pad_end[1] == 0;
}

void Lowering::lower_conv(const Node& node) {
  const ConvAttrs a = conv_attrs(g_, node);
  const Value& w = g_.values[static_cast<size_t>(node.args[1])];
  const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
  const int64_t pixels = xv.sizes[0] * xv.sizes[2] * xv.sizes[3];
  if (is_pointwise(a, w.sizes) && !is_tiny_gemm(pixels, w.sizes[0], w.sizes[1])) {
    lower_packed_fc(node, w.sizes[0], w.sizes[1]);
    return;
  }
  ConvCall call;
  call.x = activation_as(node.args[0], false);
  call.y = [this, &node] { return output(node.outputs[0]); };
  call.weight = node.args[1];
  call.bias = is_none(g_, node.args[2]) ? -1 : node.args[2];
  call.w = w.sizes;
  call.y_sizes = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
  call.a = a;
  emit_conv(call);
}

/// conv1d of x [N, C, L]: the conv2d of height 1 on x's bytes as NHWC [N, 1, L, C]
/// (nlc_input: no copy when x is such a result, e.g. the conv1d before it), its result
/// [N, 1, L', O] left as a view of [N, O, L'] (nlc_output) that readers copy where they need
/// its bytes: the next conv1d, a 3-D group norm or a transpose(1, 2) to [N, L', O] read it as
/// it is, and an activation folds into the conv (fuse_activation_into_gemm).
void Lowering::lower_conv1d(const Node& node) {
  const ConvAttrs a = conv1d_attrs(g_, node);
  const Value& w = g_.values[static_cast<size_t>(node.args[1])];
  const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
  ConvCall call;
  call.x = nlc_input(node.args[0]);
  call.y = [this, &node] { return nlc_output(node.outputs[0]); };
  call.weight = node.args[1];
  call.bias = is_none(g_, node.args[2]) ? -1 : node.args[2];
  call.w = {w.sizes[0], w.sizes[1], 1, w.sizes[2]};
  call.y_sizes = {ys[0], ys[1], 1, ys[2]};
  call.a = a;
  emit_conv(call);
}

/// The blob value of 3-D x [N, C, L] in NHWC order, [N, 1, L, C]: x's own value when its
/// view is already that (the result of a conv1d or 3-D group norm), else a StridedCopy.
uint32_t Lowering::nlc_input(int vid) {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
  StridedView v;
  (void)reshaped(view_of(vid), {s[0], s[1], 1, s[2]}, &v);  // a dim of 1: always a view
  return channels_last_copy(v);
}

/// View `v` (tern dims [N, C, ...spatial], rank 4 or 5) in channels-last order: its base when
/// the base holds exactly that, else a new internal value written by one copy.
uint32_t Lowering::channels_last_copy(const StridedView& v) {
  std::vector<uint64_t> dims{static_cast<uint64_t>(v.sizes[0])};
  for (size_t d = 2; d < v.sizes.size(); ++d) dims.push_back(static_cast<uint64_t>(v.sizes[d]));
  dims.push_back(static_cast<uint64_t>(v.sizes[1]));
  const uint32_t in_place = channels_last_base(v, dims);
  if (in_place != cpu::kNoValue) return in_place;
  const uint32_t id = internal(dims);
  emit_copy(v, true, id);
  return id;
}

/// The base of view `v` when the base holds the view's channels-last bytes exactly (blob dims
/// `dims`), else kNoValue.
uint32_t Lowering::channels_last_base(const StridedView& v,
                                      const std::vector<uint64_t>& dims) const {
  const CopyPlan p = copy_plan(v, true);
  const BlobValue& base = values_[v.base];
  return p.identity && base.rank == dims.size() && std::equal(dims.begin(), dims.end(), base.dims)
             ? v.base
             : cpu::kNoValue;
}

/// A new blob value [N, 1, L, C] for the 3-D result `vid` [N, C, L]: `vid` becomes its view
/// (copied where a reader needs row-major bytes; a region output at the end).
uint32_t Lowering::nlc_output(int vid) {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
  const uint32_t id = internal(
      {static_cast<uint64_t>(s[0]), 1, static_cast<uint64_t>(s[2]), static_cast<uint64_t>(s[1])});
  StridedView v;
  (void)reshaped(whole_value(id, {s[0], s[1], 1, s[2]}, true), s, &v);
  lazy_[vid] = v;
  channels_last_results_.insert(vid);
  return id;
}

/// A new blob value [N, D, H, W, C] for the 5-D result `vid` [N, C, D, H, W]: `vid` becomes
/// its view (copied where a reader needs row-major bytes; a region output at the end).
uint32_t Lowering::ndhwc_output(int vid) {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
  const uint32_t id = internal({static_cast<uint64_t>(s[0]), static_cast<uint64_t>(s[2]),
                                static_cast<uint64_t>(s[3]), static_cast<uint64_t>(s[4]),
                                static_cast<uint64_t>(s[1])});
  lazy_[vid] = whole_value(id, s, true);
  channels_last_results_.insert(vid);
  return id;
}

/// conv3d of x [N, C, D, H, W]: tern's 3-D conv (op 33) on x's bytes as NDHWC [N, D, H, W,
/// C] (ndhwc_input: no copy when x is such a result, e.g. the conv3d before it), the OIDHW
/// weight packed as PackConv's [O, C, KD·KH, KW] (the same bytes: K in (kd, kh, kw, c)
/// order), its result [N, D', H', W', O] left as a view of [N, O, D', H', W'] (ndhwc_output).
/// A relu / clamp, a residual add and an activation after it fold into the node.
void Lowering::lower_conv3d(const Node& node) {
  const Conv3dAttrs a = conv3d_attrs(g_, node);
  const std::vector<int64_t>& w = g_.values[static_cast<size_t>(node.args[1])].sizes;
  const int64_t o = w[0], cg = w[1], groups = a.groups;
  const uint32_t x = ndhwc_input(node.args[0]);
  Recipe rc(RecipeOp::PackConv);
  rc.r.params[0] = static_cast<uint32_t>(o);
  rc.r.params[1] = static_cast<uint32_t>(cg);
  rc.r.params[2] = static_cast<uint32_t>(w[2] * w[3]);
  rc.r.params[3] = static_cast<uint32_t>(w[4]);
  if (groups > 1) rc.r.params[4] = static_cast<uint32_t>(groups);
  rc.src[0] = node.args[1];
  rc.src[1] = is_none(g_, node.args[2]) ? -1 : node.args[2];
  const uint64_t k = static_cast<uint64_t>(w[2] * w[3] * w[4] * cg);
  const uint32_t f = add_derived(
      {static_cast<uint64_t>(groups) * cpu::packed_fc_floats(static_cast<uint64_t>(o / groups), k)},
      rc);
  BlobNode& n = add_node(NodeOp::PackedConv3d, {x, f}, ndhwc_output(node.outputs[0]));
  for (uint32_t d = 0; d < 3; ++d) {
    n.params[cpu::kConv3dPad + d] = static_cast<uint32_t>(a.pad[d]);
    n.params[cpu::kConv3dKernel + d] = static_cast<uint32_t>(w[2 + d]);
    n.params[cpu::kConv3dStride + d] = static_cast<uint32_t>(a.stride[d]);
    n.params[cpu::kConv3dDilation + d] = static_cast<uint32_t>(a.dilation[d]);
  }
  n.params[cpu::kConv3dInChannels] = static_cast<uint32_t>(cg * groups);
  n.params[cpu::kConv3dOutChannels] = static_cast<uint32_t>(o);
  if (groups > 1) n.params[cpu::kConv3dGroups] = static_cast<uint32_t>(groups);
}

/// conv_transpose2d of NHWC x: XNNPACK's deconvolution (op 41), the weight [C, O, KH, KW]
/// permuted to its [O, KH, KW, C], the padding off both ends, the output padding at the
/// bottom / right.
void Lowering::lower_deconv(const Node& node) {
  const DeconvAttrs a = conv_transpose2d_attrs(g_, node);
  const std::vector<int64_t>& w = g_.values[static_cast<size_t>(node.args[1])].sizes;
  // Per group: C/G input and O/G output channels (weight [C, O/G, KH, KW]).
  const int64_t gs = a.groups, c = w[0] / gs, o = w[1], kh = w[2], kw = w[3];
  const uint32_t x = activation(node.args[0]);
  // XNNPACK's filter [G, O/G, KH, KW, C/G]: one group, the weight permuted (1, 2, 3, 0);
  // G groups, the weight seen as [G, C/G, O/G, KH·KW], permuted (0, 2, 3, 1) and read flat.
  Recipe rc = gs == 1 ? permute(w, {1, 2, 3, 0}) : permute({gs, c, o, kh * kw}, {0, 2, 3, 1});
  if (gs != 1) rc.r.flags = cpu::kRecipeFlat;
  rc.src[0] = node.args[1];
  const uint32_t f = add_derived({static_cast<uint64_t>(gs * o), static_cast<uint64_t>(kh),
                                  static_cast<uint64_t>(kw), static_cast<uint64_t>(c)},
                                 rc);
  std::vector<uint32_t> inputs{x, f};
  if (!is_none(g_, node.args[2])) {
    inputs.push_back(constant_as(node.args[2], {static_cast<uint64_t>(gs * o)}));
  }
  BlobNode& n = add_node(NodeOp::Deconv2d, inputs, output(node.outputs[0]));
  set_window_params(n, a, kh, kw);
  n.params[cpu::kGroups] = static_cast<uint32_t>(gs);
  n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(c);
  n.params[cpu::kGroupOutChannels] = static_cast<uint32_t>(o);
  n.params[cpu::kDeconvAdjustH] = static_cast<uint32_t>(a.output_padding[0]);
  n.params[cpu::kDeconvAdjustW] = static_cast<uint32_t>(a.output_padding[1]);
}

/// A convolution on NHWC values (ConvCall): tern's packed conv for dense and grouped ones
/// (Winograd where it pays), XNNPACK's for depthwise and pointwise ones.
void Lowering::emit_conv(const ConvCall& c) {
  const ConvAttrs& a = c.a;
  if (!a.depthwise && !is_pointwise(a, c.w)) {
    lower_packed_conv(c);
    return;
  }
  const int64_t o = c.w[0], cg = c.w[1], kh = c.w[2], kw = c.w[3];
  // A depth multiplier M > 1 (FastViT's patch embedding: 48 channels to 96 by 7x7 and 3x3
  // groups of one) runs as XNNPACK's grouped GEMM, a product of M columns per group, ten
  // times slower than its depthwise kernel: so each input channel is repeated M times (one
  // StridedCopy, shared by the convs that read the same x) and the conv is a depthwise one of
  // multiplier 1 over O channels. Output channel g·M + m reads input channel g either way.
  const int64_t multiplier = a.depthwise ? o / a.groups : 1;
  const uint32_t x = multiplier > 1 ? channels_repeated(c.x, multiplier) : c.x;
  // depthwise [O, 1, KH, KW] -> [1, KH, KW, O]; dense OIHW -> OHWI
  Recipe rc = a.depthwise ? permute(c.w, {1, 2, 3, 0}) : permute(c.w, {0, 2, 3, 1});
  rc.src[0] = c.weight;
  const std::vector<uint64_t> fdims =
      a.depthwise ? std::vector<uint64_t>{1, static_cast<uint64_t>(kh), static_cast<uint64_t>(kw),
                                          static_cast<uint64_t>(o)}
                  : std::vector<uint64_t>{static_cast<uint64_t>(o), static_cast<uint64_t>(kh),
                                          static_cast<uint64_t>(kw), static_cast<uint64_t>(cg)};
  const uint32_t f = add_derived(fdims, rc);
  uint32_t b = cpu::kNoValue;
  if (c.bias >= 0) b = constant_as(c.bias, {static_cast<uint64_t>(o)});
  BlobNode& n = add_node(
      a.depthwise ? NodeOp::DepthwiseConv2d : NodeOp::Conv2d,
      b == cpu::kNoValue ? std::vector<uint32_t>{x, f} : std::vector<uint32_t>{x, f, b}, c.y());
  set_window_params(n, a, kh, kw);
  if (a.depthwise) {
    n.params[cpu::kGroups] = 1;                                  // depth multiplier
    n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(o);  // input channels
  } else {
    n.params[cpu::kGroups] = static_cast<uint32_t>(a.groups);
    n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(cg);
    n.params[cpu::kGroupOutChannels] = static_cast<uint32_t>(o / a.groups);
  }
}

/// When blob value `id` is a View (a run of an internal value), `v` (reading `id`) reads its
/// base from the run's offset instead.
void Lowering::read_through_view(uint32_t id, StridedView* v) const {
  if (values_[id].kind != static_cast<uint32_t>(ValueKind::View)) return;
  const BlobValue& base = values_[values_[id].view_base];
  v->base = values_[id].view_base;
  v->base_numel = 1;
  for (uint32_t d = 0; d < base.rank; ++d) v->base_numel *= base.dims[d];
  v->offset += static_cast<int64_t>(values_[id].data_offset);
}

/// NHWC blob value `x` [N, H, W, C] with each channel repeated `m` times: [N, H, W, C·m],
/// channel c·m + k = x's channel c (one StridedCopy reading x with a stride of 0 over k),
/// made once per x and m.
uint32_t Lowering::channels_repeated(uint32_t x, int64_t m) {
  auto it = repeated_.find({x, m});
  if (it != repeated_.end()) return it->second;
  const BlobValue& xv = values_[x];
  const int64_t n = static_cast<int64_t>(xv.dims[0]), h = static_cast<int64_t>(xv.dims[1]),
                w = static_cast<int64_t>(xv.dims[2]), ch = static_cast<int64_t>(xv.dims[3]);
  StridedView v;
  v.base = x;
  v.base_numel = static_cast<uint64_t>(n * h * w * ch);
  v.sizes = {n, h, w, ch, m};  // in the copy's (the output's) order
  v.strides = {h * w * ch, w * ch, ch, 1, 0};
  read_through_view(x, &v);
  const uint32_t id = internal({static_cast<uint64_t>(n), static_cast<uint64_t>(h),
                                static_cast<uint64_t>(w), static_cast<uint64_t>(ch * m)});
  emit_copy(v, /*nhwc=*/false, id);
  repeated_.emplace(std::make_pair(x, m), id);
  return id;
}

/// An inverted bottleneck chain (bottleneck_match.h) as one PackedBottleneck node.
void Lowering::lower_bottleneck(const BottleneckMatch& m) {
  const Node& dw = g_.nodes[static_cast<size_t>(m.depthwise)];
  const ConvAttrs a = conv_attrs(g_, dw);
  const std::vector<int64_t>& wd = g_.values[static_cast<size_t>(dw.args[1])].sizes;
  const int64_t e = wd[0];
  const int64_t o = g_.values[static_cast<size_t>(m.output)].sizes[1];
  // A depth multiplier M > 1: the kernel reads x with each channel repeated M times.
  const int64_t c = m.multiplier > 1 ? e : g_.values[static_cast<size_t>(m.input)].sizes[1];
  const uint32_t x = m.multiplier > 1
                         ? channels_repeated(activation_as(m.input, false), m.multiplier)
                         : activation_as(m.input, false);
  const bool se = m.se_squeeze >= 0;
  Recipe rc(RecipeOp::PackBottleneck);
  uint32_t* q = rc.r.params;
  q[cpu::kBnC] = static_cast<uint32_t>(c);
  q[cpu::kBnE] = static_cast<uint32_t>(e);
  q[cpu::kBnO] = static_cast<uint32_t>(o);
  q[cpu::kBnKh] = static_cast<uint32_t>(wd[2]);
  q[cpu::kBnKw] = static_cast<uint32_t>(wd[3]);
  q[cpu::kBnS] = se ? static_cast<uint32_t>(m.se_channels) : 0u;
  q[cpu::kBnFlags] = (m.expand >= 0 ? cpu::kBottleneckHasExpand : 0u) |
                     (m.project >= 0 ? cpu::kBottleneckHasProject : 0u) |
                     (se ? cpu::kBottleneckHasSqueezeExcite : 0u);
  q[cpu::kBnGate] = se ? m.se_gate : 0u;
  auto conv_sources = [&](int conv, uint32_t weight_slot) {
    if (conv < 0) return;
    const Node& cn = g_.nodes[static_cast<size_t>(conv)];
    rc.src[weight_slot] = cn.args[1];
    rc.src[weight_slot + 1] = is_none(g_, cn.args[2]) ? -1 : cn.args[2];
  };
  conv_sources(m.expand, cpu::kBnExpandWeight);
  conv_sources(m.depthwise, cpu::kBnDepthwiseWeight);
  conv_sources(m.project, cpu::kBnProjectWeight);
  conv_sources(m.se_squeeze, cpu::kBnSqueezeWeight);
  conv_sources(m.se_excite, cpu::kBnExciteWeight);
  const uint64_t floats = cpu::bottleneck_weight_floats(
      m.expand >= 0, m.project >= 0, static_cast<uint64_t>(c), static_cast<uint64_t>(e),
      static_cast<uint64_t>(o), static_cast<uint64_t>(wd[2]), static_cast<uint64_t>(wd[3]),
      se ? static_cast<uint64_t>(m.se_channels) : 0u);
  const uint32_t f = add_derived({floats}, rc);
  std::vector<uint32_t> ins{x, f};
  // The residual is read in the output's (NHWC) order: a plain 4-D one is copied first.
  if (m.residual >= 0) ins.push_back(activation_as(m.residual, is_plain_4d(m.output)));
  BlobNode& n = add_node(NodeOp::PackedBottleneck, ins, output(m.output));
  set_window_params(n, a, wd[2], wd[3]);
  n.params[cpu::kBottleneckInChannels] = static_cast<uint32_t>(c);
  n.params[cpu::kBottleneckExpandedChannels] = static_cast<uint32_t>(e);
  n.params[cpu::kBottleneckOutChannels] = static_cast<uint32_t>(o);
  n.params[cpu::kBottleneckFlags] =
      (m.expand >= 0 ? cpu::kBottleneckHasExpand : 0u) |
      (m.project >= 0 ? cpu::kBottleneckHasProject : 0u) |
      (se ? cpu::kBottleneckHasSqueezeExcite |
                (static_cast<uint32_t>(m.se_channels) << cpu::kBottleneckHighShift)
          : 0u);
  n.params[cpu::kBottleneckExpandEpilogue] =
      m.expand_epilogue | (se ? m.se_squeeze_epilogue << cpu::kBottleneckHighShift : 0u);
  n.params[cpu::kBottleneckDepthwiseEpilogue] =
      m.depthwise_epilogue | (se ? m.se_gate << cpu::kBottleneckHighShift : 0u);
}

/// A dense or grouped conv (not depthwise) runs on tern's own NHWC convolution: each group's
/// OIHW weight becomes its [O/G, KH*KW*C/G] matrix in (kh, kw, c) order, packed with its bias
/// like a linear. Grouped convs with group widths of 4 to 16 (ResNeXt, RegNet) ran on
/// XNNPACK's at 50-65 GFLOP/s; on tern's they gather C/G floats per tap into the GEMM's tiles.
void Lowering::lower_packed_conv(const ConvCall& cc) {
  const ConvAttrs& a = cc.a;
  const int64_t o = cc.w[0], c = cc.w[1], kh = cc.w[2], kw = cc.w[3];
  const int64_t groups = a.groups;  // c is a group's input channels
  if (const int tile = winograd_tile(a, cc.w, cc.y_sizes); tile != 0) {
    lower_winograd_conv(cc, o, c, tile);
    return;
  }
  const int64_t k = kh * kw * c;
  Recipe rc(RecipeOp::PackConv);
  for (uint32_t i = 0; i < 4; ++i) rc.r.params[i] = static_cast<uint32_t>(cc.w[i]);
  if (groups > 1) rc.r.params[4] = static_cast<uint32_t>(groups);
  rc.src[0] = cc.weight;
  rc.src[1] = cc.bias;
  const uint32_t f = add_derived(
      {static_cast<uint64_t>(groups) *
       cpu::packed_fc_floats(static_cast<uint64_t>(o / groups), static_cast<uint64_t>(k))},
      rc);
  BlobNode& n = add_node(NodeOp::PackedConv2d, {cc.x, f}, cc.y());
  set_window_params(n, a, kh, kw);
  n.params[cpu::kPackedInChannels] = static_cast<uint32_t>(c * groups);
  n.params[cpu::kPackedOutChannels] = static_cast<uint32_t>(o);
  if (groups > 1) n.params[cpu::kPackedGroups] = static_cast<uint32_t>(groups);
}

/// A 3x3 stride-1 conv (one group, dilation 1, 16 or more channels in and out) runs on tern's
/// Winograd kernels when its output has enough tiles for the transformed weight to be reused.
/// Measured against tern's direct conv (backends/cpu/kernels/README.md, 2 threads):
/// - F(2x2, 3x3) (transformed weight 16/9 of the direct one): 2.0-2.2x at 56x56, 28x28 and
///   14x14 (49 tiles), 1.0-1.2x at 7x7 (16 tiles, bound by reading the 16 MiB weight); taken
///   from 32 tiles of 2x2.
/// - F(4x4, 3x3) (36/9): 2.4-3.1x at 112x112, 56x56 and 28x28 (1.1-1.4x F(2x2)'s), but no
///   faster than F(2x2) at 14x14 (16 tiles, 4x4 tiles covering 256 outputs for 196) nor at
///   batch 3 there, and slower at 7x7; with winograd=f4 only (its rounding error is about
///   twice the direct conv's: cpu_options.h), taken from 49 tiles of 4x4 when those tiles
///   cover at most 15 % more outputs than there are.
int Lowering::winograd_tile(const ConvAttrs& a, const std::vector<int64_t>& w,
                            const std::vector<int64_t>& y) const {
  if (options_.winograd == WinogradMode::Off || a.depthwise || a.groups != 1 || w[2] != 3 ||
      w[3] != 3 || a.stride[0] != 1 || a.stride[1] != 1 || a.dilation[0] != 1 ||
      a.dilation[1] != 1 || w[1] < 16 || w[0] < 16) {
    return 0;
  }
  const int64_t h4 = (y[2] + 3) / 4, w4 = (y[3] + 3) / 4;
  const bool whole_enough = 16 * h4 * w4 * 100 <= 115 * y[2] * y[3];
  if (options_.winograd == WinogradMode::F4x4 && y[0] * h4 * w4 >= kWinogradF4MinTiles &&
      whole_enough) {
    return 4;
  }
  return y[0] * ((y[2] + 1) / 2) * ((y[3] + 1) / 2) >= kWinogradMinTiles ? 2 : 0;
}

/// The conv on tern's Winograd kernel: the OIHW weight transformed and packed at prepare.
void Lowering::lower_winograd_conv(const ConvCall& cc, int64_t o, int64_t c, int tile) {
  const uint32_t tile_field = tile == 4 ? cpu::kWinogradTileF4x4 : cpu::kWinogradTileF2x2;
  Recipe rc(RecipeOp::PackWinograd);
  rc.r.params[0] = static_cast<uint32_t>(o);
  rc.r.params[1] = static_cast<uint32_t>(c);
  rc.r.params[2] = tile_field;
  rc.src[0] = cc.weight;
  rc.src[1] = cc.bias;
  const uint32_t f = add_derived({cpu::winograd_packed_floats(static_cast<uint64_t>(o),
                                                              static_cast<uint64_t>(c), tile_field)},
                                 rc);
  BlobNode& n = add_node(NodeOp::PackedWinogradConv2d, {cc.x, f}, cc.y());
  set_window_params(n, cc.a, 3, 3);
  n.params[cpu::kPackedInChannels] = static_cast<uint32_t>(c);
  n.params[cpu::kPackedOutChannels] = static_cast<uint32_t>(o);
  n.params[cpu::kWinogradTile] = tile_field;
}

/// Whether a binary op's `out` = f(made, other) can be `last`'s epilogue with `other` as its
/// operand: `made` is `last`'s output (not shared, read by nothing else, not leaving the
/// region), no broadcasting (made, other and out of one shape), and `other` an activation made
/// before (or a region input) in the output's order with the same dynamic dim.
bool Lowering::is_epilogue_operand(const BlobNode& last, int made, int other, int out) const {
  const std::vector<int64_t>& os = g_.values[static_cast<size_t>(out)].sizes;
  const Value& ov = g_.values[static_cast<size_t>(other)];
  return ids_.count(made) != 0 && ids_.at(made) == last.output && !shared(last.output) &&
         uses_.at(made) == 1 && output_arg_.count(made) == 0 && made != other &&
         g_.values[static_cast<size_t>(made)].sizes == os && ov.kind == Value::Kind::Tensor &&
         !ov.is_constant && ov.sizes == os &&
         (ids_.count(other) != 0 || input_arg_.count(other) != 0) &&
         is_plain_4d(other) == is_plain_4d(out) && dynamic_dim_of(other) == dynamic_dim_of(out);
}

/// add(conv_out, r) (either order, alpha 1) where conv_out is made by the node just lowered,
/// one of tern's convs or GEMMs with no clamp or residual yet (or a depthwise-only bottleneck
/// with a post-activation affine and no residual), and read by nothing else, and r is an
/// activation of the output's shape: r becomes the node's residual input (ResNet's basic block,
/// MobileNetV2's inverted residual). Returns false when it does not apply.
bool Lowering::fuse_residual_into_conv(const Node& node, double alpha) {
  if (node.op != "tern::add" || alpha != 1.0 || nodes_.empty()) return false;
  BlobNode& last = nodes_.back();
  if (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d))
    return fuse_residual_into_conv3d(node);
  // A bottleneck without a project whose batch norm was fused (x + bn(relu(dw(x))):
  // ConvMixer's block) takes the residual after its affine: input 2, the affine moved to 3.
  const bool affine_bottleneck =
      last.op == static_cast<uint32_t>(NodeOp::PackedBottleneck) &&
      (last.params[cpu::kBottleneckFlags] & cpu::kBottleneckHasPostAffine) != 0 &&
      last.num_inputs == 3;
  if (!affine_bottleneck &&
      ((last.op != static_cast<uint32_t>(NodeOp::PackedConv2d) &&
        last.op != static_cast<uint32_t>(NodeOp::PackedWinogradConv2d) &&
        last.op != static_cast<uint32_t>(NodeOp::PackedFullyConnected)) ||
       last.num_inputs != 2 || has_activation(last) || last.fparams[0] != -kInf ||
       last.fparams[1] != kInf)) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    const int conv_out = node.args[static_cast<size_t>(i)];
    const int other = node.args[static_cast<size_t>(1 - i)];
    if (!is_epilogue_operand(last, conv_out, other, node.outputs[0])) continue;
    const uint32_t r = activation(other);
    if (r == last.output) continue;
    if (affine_bottleneck) last.inputs[3] = last.inputs[2];
    last.inputs[2] = r;
    ++last.num_inputs;
    retarget_output(conv_out, node.outputs[0]);
    return true;
  }
  return false;
}

/// add(conv3d_out, r) (either order, alpha 1) where conv3d_out is the NDHWC result of the
/// conv3d just lowered (no clamp, residual or activation yet; read by nothing else) and r
/// another conv3d's NDHWC result of the same shape, or any 5-D value already in that order
/// (a region input is not: it would need a copy before the conv): r is the node's residual.
bool Lowering::fuse_residual_into_conv3d(const Node& node) {
  BlobNode& last = nodes_.back();
  if (last.num_inputs != 2 || has_activation(last) || last.fparams[0] != -kInf ||
      last.fparams[1] != kInf) {
    return false;
  }
  const Value& out = g_.values[static_cast<size_t>(node.outputs[0])];
  for (int i = 0; i < 2; ++i) {
    const int conv_out = node.args[static_cast<size_t>(i)];
    const int other = node.args[static_cast<size_t>(1 - i)];
    const Value& ov = g_.values[static_cast<size_t>(other)];
    if (conv_out == other || made_value(conv_out) != last.output || ids_.count(conv_out) != 0 ||
        shared(last.output) || uses_.at(conv_out) != 1 || output_arg_.count(conv_out) != 0 ||
        ov.kind != Value::Kind::Tensor || ov.is_constant || ov.sizes != out.sizes ||
        g_.values[static_cast<size_t>(conv_out)].sizes != out.sizes || lazy_.count(other) == 0 ||
        ids_.count(other) != 0) {
      continue;
    }
    const BlobValue& made = values_[last.output];
    const uint32_t r = channels_last_base(lazy_.at(other),
                                          std::vector<uint64_t>(made.dims, made.dims + made.rank));
    if (r == cpu::kNoValue || r == last.output || r == last.inputs[0]) continue;
    last.inputs[2] = r;
    last.num_inputs = 3;
    rename_result(conv_out, node.outputs[0]);
    return true;
  }
  return false;
}

}  // namespace tern::compiler::cpu_compile::lowering
