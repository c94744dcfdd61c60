// The vulkan lowerings of 2-D and 3-D convolutions, upsampling and pooling.
#include "backends/vulkan/compile/lowerings.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tern::compiler::vulkan_compile {

using vulkan::ElementwiseKind;
using vulkan::NodeOp;
using vulkan::UnaryKind;

// ---- convolution and pooling ----
namespace {

void pair(const Graph& g, int id, int64_t out[2], const int64_t* empty_default) {
  std::vector<int64_t> v = ints_of(g, id);
  if (v.empty() && empty_default != nullptr) {
    out[0] = empty_default[0];
    out[1] = empty_default[1];
    return;
  }
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw Unsupported("expected 1 or 2 values");
  out[0] = v[0];
  out[1] = v[1];
}

/// `values` of an IntList argument of a conv with `spatial` (2 or 3) window dims: one value
/// for all of them, or one each.
std::vector<int64_t> window_ints(const Graph& g, int id, size_t spatial, const char* what) {
  std::vector<int64_t> v = ints_of(g, id);
  if (v.size() == 1) v.assign(spatial, v[0]);
  if (v.size() != spatial) {
    throw Unsupported(std::string("conv ") + what + ": expected 1 or " + std::to_string(spatial) +
                      " values");
  }
  return v;
}

}  // namespace

/// conv1d (3-D x), conv2d (4-D x) and conv3d (5-D x): conv.comp, a 2-D conv as the 3-D one of
/// depth 1 and a 1-D conv as the 2-D one of height 1 (the same NCHW bytes).
void lower_conv(BlobBuilder& b, const Node& n, size_t spatial) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& ws = shape(g, arg(n, 1));
  const Dims& os = shape(g, out_id(n));
  const size_t rank = spatial + 2;
  if (xs.size() != rank || ws.size() != rank || os.size() != rank) {
    throw Unsupported(spatial == 1   ? "conv1d: batched 3-D x"
                      : spatial == 2 ? "conv2d: batched 4-D x"
                                     : "conv3d: batched 5-D x");
  }
  const std::vector<int64_t> stride = window_ints(g, arg(n, 3), spatial, "stride");
  const std::vector<int64_t> pad = window_ints(g, arg(n, 4), spatial, "padding");
  const std::vector<int64_t> dil = window_ints(g, arg(n, 5), spatial, "dilation");
  const int64_t groups = int_of(g, arg(n, 6));
  if (groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0 || ws[1] * groups != xs[1]) {
    throw Unsupported("conv groups");
  }
  // (depth, height, width) of each window quantity: a 2-D conv is the 3-D one of depth 1.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, pd[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  for (size_t i = 0, d = 3 - spatial; i < spatial; ++i, ++d) {
    in[d] = xs[2 + i], k[d] = ws[2 + i], out[d] = os[2 + i];
    st[d] = stride[i], pd[d] = pad[i], dl[d] = dil[i];
    if (st[d] < 1 || dl[d] < 1 || pd[d] < 0 ||
        (in[d] + 2 * pd[d] - dl[d] * (k[d] - 1) - 1) / st[d] + 1 != out[d]) {
      throw Unsupported("conv window");
    }
  }
  const bool bias = !is_none(g, arg(n, 2));
  const uint32_t x = b.input(arg(n, 0)), w = b.input(arg(n, 1));
  std::vector<uint32_t> inputs{x, w};
  if (bias) inputs.push_back(b.input(arg(n, 2)));
  b.node(NodeOp::Conv, inputs, b.output(out_id(n)),
         {param(xs[0], "N"), param(xs[1], "C"), param(in[1], "H"), param(in[2], "W"),
          param(ws[0], "O"), param(out[1], "OH"), param(out[2], "OW"), param(k[1], "KH"),
          param(k[2], "KW"), param(st[1], "stride"), param(st[2], "stride"), param(pd[1], "pad"),
          param(pd[2], "pad"), param(dl[1], "dilation"), param(dl[2], "dilation"),
          param(groups, "groups"), bias ? 1 : 0, 0, param(in[0], "D"), param(out[0], "OD"),
          param(k[0], "KD"), param(st[0], "stride"), param(pd[0], "pad"),
          param(dl[0], "dilation")});
}

/// conv_transpose2d (x [N, C, H, W], w [C, O/g, KH, KW], bias?, stride, padding,
/// output_padding, groups, dilation): conv_transpose.comp; the output padding is in OH / OW
/// (below the stride or the dilation, as PyTorch requires).
void lower_conv_transpose(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& ws = shape(g, arg(n, 1));
  const Dims& os = shape(g, out_id(n));
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4) {
    throw Unsupported("conv_transpose2d: batched 4-D x");
  }
  const std::vector<int64_t> stride = window_ints(g, arg(n, 3), 2, "stride");
  const std::vector<int64_t> pad = window_ints(g, arg(n, 4), 2, "padding");
  const std::vector<int64_t> out_pad = window_ints(g, arg(n, 5), 2, "output_padding");
  const int64_t groups = int_of(g, arg(n, 6));
  const std::vector<int64_t> dil = window_ints(g, arg(n, 7), 2, "dilation");
  const int64_t o = ws[1] * groups;
  if (groups < 1 || xs[1] % groups != 0 || ws[0] != xs[1] || os[1] != o || os[0] != xs[0]) {
    throw Unsupported("conv_transpose2d channels or groups");
  }
  for (size_t d = 0; d < 2; ++d) {
    if (stride[d] < 1 || dil[d] < 1 || pad[d] < 0 || out_pad[d] < 0 ||
        out_pad[d] >= std::max(stride[d], dil[d]) ||
        (xs[2 + d] - 1) * stride[d] - 2 * pad[d] + dil[d] * (ws[2 + d] - 1) + out_pad[d] + 1 !=
            os[2 + d]) {
      throw Unsupported("conv_transpose2d window");
    }
  }
  const bool bias = !is_none(g, arg(n, 2));
  std::vector<uint32_t> inputs{b.input(arg(n, 0)), b.input(arg(n, 1))};
  if (bias) inputs.push_back(b.input(arg(n, 2)));
  b.node(NodeOp::ConvTranspose, inputs, b.output(out_id(n)),
         {param(xs[0], "N"), param(xs[1], "C"), param(xs[2], "H"), param(xs[3], "W"),
          param(o, "O"), param(os[2], "OH"), param(os[3], "OW"), param(ws[2], "KH"),
          param(ws[3], "KW"), param(stride[0], "stride"), param(stride[1], "stride"),
          param(pad[0], "pad"), param(pad[1], "pad"), param(dil[0], "dilation"),
          param(dil[1], "dilation"), param(groups, "groups"), bias ? 1 : 0});
}

/// upsample_nearest2d (x, scale_h, scale_w) and upsample_bilinear2d (x, align_corners, scale_h,
/// scale_w) of [N, C, H, W]: upsample2d.comp with the portable kernels' source steps (1 / scale
/// for a positive scale, else in / out; (in - 1) / (out - 1) with align_corners).
void lower_upsample(BlobBuilder& b, const Node& n, bool bilinear) {
  const Graph& g = b.graph();
  if (n.args.size() != (bilinear ? 4u : 3u)) throw Unsupported("upsample: arguments");
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  if (xs.size() != 4 || os.size() != 4 || xs[0] != os[0] || xs[1] != os[1]) {
    throw Unsupported("upsample: x and out not [N, C, H, W] of one N and C");
  }
  if (xs[2] > (int64_t{1} << 24) || xs[3] > (int64_t{1} << 24)) {
    throw Unsupported("upsample: input over 2^24 rows or columns");
  }
  const bool align = bilinear && bool_of(g, arg(n, 1));
  float step[2];
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = xs[2 + d], out = os[2 + d];
    const int scale_id = arg(n, (bilinear ? 2 : 1) + d);
    const double scale = is_none(g, scale_id) ? 0.0 : num_of(g, scale_id);
    if (align) {
      step[d] = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    } else {
      step[d] = scale > 0.0 ? static_cast<float>(1.0 / scale)
                            : static_cast<float>(in) / static_cast<float>(out);
    }
    if (!(step[d] >= 0.0f && step[d] <= 3.0e38f)) throw Unsupported("upsample: scale");
  }
  b.node(NodeOp::Upsample2d, {b.input(arg(n, 0))}, b.output(out_id(n)),
         {param(xs[0] * xs[1], "planes"), param(xs[2], "H"), param(xs[3], "W"),
          param(os[2], "OH"), param(os[3], "OW"), bilinear ? 1 : 0, align ? 1 : 0},
         {step[0], step[1]});
}

void lower_pool(BlobBuilder& b, const Node& n, int mode) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  if ((xs.size() != 4 && xs.size() != 3) || os.size() != xs.size()) throw Unsupported("pool rank");
  const size_t r = xs.size();
  const int64_t nc = numel(xs) / (xs[r - 2] * xs[r - 1]);
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  bool include_pad = true;
  int64_t divisor = 0;
  if (mode != 2) {
    pair(g, arg(n, 1), k, nullptr);
    pair(g, arg(n, 2), s, k);
    pair(g, arg(n, 3), pad, nullptr);
    if (mode == 0) {
      pair(g, arg(n, 4), dil, nullptr);
    } else {
      include_pad = has_arg(n, 5) ? bool_of(g, arg(n, 5)) : true;
      if (has_arg(n, 6) && !is_none(g, arg(n, 6))) divisor = int_of(g, arg(n, 6));
      if (has_arg(n, 6) && !is_none(g, arg(n, 6)) && divisor == 0) throw Unsupported("divisor 0");
    }
    for (int i = 0; i < 2; ++i) {
      if (pad[i] * 2 > k[i]) throw Unsupported("pool padding above half the window");
    }
  } else {
    const std::vector<int64_t> o = ints_of(g, arg(n, 1));
    if (o.size() != 2 || o[0] != os[r - 2] || o[1] != os[r - 1]) throw Unsupported("adaptive output size");
  }
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Pool2d, {x}, b.output(out_id(n)),
         {param(nc, "NC"), param(xs[r - 2], "H"), param(xs[r - 1], "W"), param(os[r - 2], "OH"),
          param(os[r - 1], "OW"), param(k[0], "kernel"), param(k[1], "kernel"),
          param(s[0], "stride"), param(s[1], "stride"), param(pad[0], "pad"),
          param(pad[1], "pad"), param(dil[0], "dilation"), param(dil[1], "dilation"), mode,
          include_pad ? 1 : 0, param(divisor, "divisor")});
}

}  // namespace tern::compiler::vulkan_compile
