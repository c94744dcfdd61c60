#include "backends/cpu/compile/region_lowering.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "backends/cpu/compile/bottleneck_match.h"
#include "backends/cpu/compile/layout_plan.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/quant_lowering.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"

namespace tern::compiler::cpu_compile {
namespace {

using cpu::BlobHeader;
using cpu::BlobNode;
using cpu::BlobValue;
using cpu::NodeOp;
using cpu::ValueKind;
using cpu::ValueLayout;

constexpr float kInf = std::numeric_limits<float>::infinity();

/// NCHW -> NHWC transpose of a row-major [n, c, h, w] block.
std::vector<float> to_nhwc(const std::vector<float>& src, const std::vector<int64_t>& d) {
  const int64_t n = d[0], c = d[1], hw = d[2] * d[3];
  std::vector<float> dst(src.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) dst[(i * hw + p) * c + ch] = src[(i * c + ch) * hw + p];
    }
  }
  return dst;
}

class Lowering {
 public:
  Lowering(const Graph& g, const DelegateRegion& r) : g_(g), r_(r), plain_(plain_4d_values(g)) {
    const uint32_t num_in = static_cast<uint32_t>(r.inputs.size());
    for (uint32_t i = 0; i < num_in; ++i) input_arg_.emplace(r.inputs[i], i);
    for (uint32_t j = 0; j < r.outputs.size(); ++j) output_arg_.emplace(r.outputs[j], num_in + j);
    for (size_t v = 0; v < g.values.size(); ++v) uses_[static_cast<int>(v)] = 0;
    for (const Node& n : g.nodes) {
      for (int a : n.args) {
        if (a >= 0) ++uses_[a];
      }
    }
  }

  std::vector<uint8_t> run() {
    if (r_.outputs.empty()) {
      throw std::invalid_argument(
          "cpu backend: the region has no outputs (nothing reads what "
          "it makes)");
    }
    const std::vector<BottleneckMatch> chains = match_bottlenecks(g_, r_);
    std::map<int, const BottleneckMatch*> fused;  // node -> its chain
    for (const BottleneckMatch& m : chains) {
      for (int n : m.nodes) fused.emplace(n, &m);
    }
    match_view_linear_views();
    for (int n : r_.nodes) {
      if (folded_views_.count(n) != 0) continue;  // a view folded into its linear
      auto f = fused.find(n);
      if (f == fused.end()) {
        lower_node(g_.nodes[static_cast<size_t>(n)]);
      } else if (f->second->nodes.back() == n) {  // the chain runs where its last node was
        lower_bottleneck(*f->second);
      }
    }
    for (int out : r_.outputs) {
      if (ids_.count(out) == 0) {
        throw std::invalid_argument("cpu backend: region output value " + std::to_string(out) +
                                    " is not produced by the region");
      }
    }
    return serialize();
  }

 private:
  uint32_t add_value(ValueKind kind, ValueLayout layout, const std::vector<uint64_t>& dims,
                     uint32_t arg) {
    BlobValue v{};
    v.kind = static_cast<uint32_t>(kind);
    v.layout = static_cast<uint32_t>(layout);
    v.rank = static_cast<uint32_t>(dims.size());
    v.arg = arg;
    for (size_t i = 0; i < dims.size(); ++i) v.dims[i] = dims[i];
    values_.push_back(v);
    return static_cast<uint32_t>(values_.size() - 1);
  }

  uint32_t add_constant(const std::vector<uint64_t>& dims, const std::vector<float>& data) {
    const uint32_t id = add_value(ValueKind::Constant, ValueLayout::Plain, dims, cpu::kNoValue);
    size_t offset =
        (data_.size() + cpu::kDataAlignment - 1) / cpu::kDataAlignment * cpu::kDataAlignment;
    data_.resize(offset + data.size() * sizeof(float), 0);
    if (!data.empty()) std::memcpy(data_.data() + offset, data.data(), data.size() * 4);
    values_[id].data_offset = offset;
    values_[id].data_bytes = data.size() * sizeof(float);
    return id;
  }

  static ValueLayout layout_of(const std::vector<int64_t>& sizes) {
    return sizes.size() == 4 ? ValueLayout::Nhwc : ValueLayout::Plain;
  }

  /// Whether tern value `vid` is a 4-D tensor kept channels-last (plain) in the delegate
  /// (layout_plan.h); every other 4-D tensor is NHWC.
  bool is_plain_4d(int vid) const {
    return vid >= 0 && static_cast<size_t>(vid) < plain_.size() && plain_[static_cast<size_t>(vid)];
  }
  /// The edge layout of tern value `vid`.
  ValueLayout layout_of_value(int vid) const {
    return is_plain_4d(vid) ? ValueLayout::Plain
                            : layout_of(g_.values[static_cast<size_t>(vid)].sizes);
  }
  /// The XNNPACK dims of tern value `vid`: NHWC for a 4-D tensor unless it is plain.
  std::vector<uint64_t> dims_of(int vid) const {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
    return is_plain_4d(vid) ? std::vector<uint64_t>(s.begin(), s.end()) : xnn_dims(s);
  }

  /// view -> linear -> view with each intermediate read only by the next (ConvNeXt's MLP over
  /// a channels-last tensor: [1, H, W, C] -> [HW, C] -> linear -> [HW, N] -> [1, H, W, N]): the
  /// linear reads the first view's input and makes the second view's output directly, both
  /// plain and of the same row-major bytes, so the views cost no copy and an activation after
  /// the second view can fold into the GEMM. Fills folded_views_ and linear_folds_.
  void match_view_linear_views() {
    std::map<int, int> producer;  // value -> region node
    for (int n : r_.nodes) {
      for (int o : g_.nodes[static_cast<size_t>(n)].outputs) producer[o] = n;
    }
    std::map<int, int> reader;  // value read by exactly one node (uses_ == 1) -> that node
    for (int n : r_.nodes) {
      for (int a : g_.nodes[static_cast<size_t>(n)].args) reader[a] = n;
    }
    auto plain_dims = [&](int vid) {  // row-major dims, or empty when NHWC 4-D
      if (g_.values[static_cast<size_t>(vid)].sizes.size() == 4 && !is_plain_4d(vid)) {
        return std::vector<int64_t>{};
      }
      return g_.values[static_cast<size_t>(vid)].sizes;
    };
    for (int n : r_.nodes) {
      const Node& lin = g_.nodes[static_cast<size_t>(n)];
      if (lin.op != "tern::linear" || lin.outputs.size() != 1 || lin.args.size() != 3 ||
          is_quantized_value(g_, lin.args[1])) {
        continue;
      }
      const int x = lin.args[0], y = lin.outputs[0];
      auto pv = producer.find(x);
      auto rv = reader.find(y);
      if (pv == producer.end() || rv == reader.end()) continue;
      const Node& v1 = g_.nodes[static_cast<size_t>(pv->second)];
      const Node& v2 = g_.nodes[static_cast<size_t>(rv->second)];
      if (!is_cpu_view_op(v1.op) || !is_cpu_view_op(v2.op) || v2.args.empty() || v2.args[0] != y ||
          uses_.at(x) != 1 || uses_.at(y) != 1 || output_arg_.count(x) != 0 ||
          output_arg_.count(y) != 0) {
        continue;
      }
      const int a = v1.args[0], z = v2.outputs.at(0);
      const std::vector<int64_t> ad = plain_dims(a), zd = plain_dims(z);
      if (ad.empty() || zd.empty() || ad.size() != zd.size()) continue;
      std::vector<int64_t> expect = ad;
      expect.back() = g_.values[static_cast<size_t>(y)].sizes.back();
      if (ad.back() != g_.values[static_cast<size_t>(x)].sizes.back() || zd != expect) continue;
      folded_views_.insert(pv->second);
      folded_views_.insert(rv->second);
      linear_folds_[n] = {a, z};
    }
  }

  /// Whether blob value `id` stands for more than one tern value (a permute's no-op alias):
  /// nothing may fold into the node that makes it, which would change what the others read.
  bool shared(uint32_t id) const { return aliased_.count(id) != 0; }

  /// The blob value of activation `vid`: made earlier in the region, or a region input.
  uint32_t activation(int vid) {
    auto it = ids_.find(vid);
    if (it != ids_.end()) return it->second;
    auto in = input_arg_.find(vid);
    if (in == input_arg_.end()) {
      throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                  " is read before the region makes it and is no region input");
    }
    const uint32_t id =
        add_value(ValueKind::ExternalInput, layout_of_value(vid), dims_of(vid), in->second);
    ids_.emplace(vid, id);
    return id;
  }

  /// Defines the blob value node output `vid` (external when it leaves the region).
  uint32_t output(int vid) {
    if (ids_.count(vid) != 0) {
      throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                  " is produced twice");
    }
    auto out = output_arg_.find(vid);
    const bool external = out != output_arg_.end();
    // Layout only tells the runtime how to convert at the edge: internal values are Plain.
    const uint32_t id = add_value(external ? ValueKind::ExternalOutput : ValueKind::Internal,
                                  external ? layout_of_value(vid) : ValueLayout::Plain,
                                  dims_of(vid), external ? out->second : cpu::kNoValue);
    ids_.emplace(vid, id);
    return id;
  }

  /// A new internal value (an intermediate of a node lowered to several XNNPACK nodes).
  uint32_t internal(const std::vector<uint64_t>& dims) {
    return add_value(ValueKind::Internal, ValueLayout::Plain, dims, cpu::kNoValue);
  }

  /// Operand `vid` of a binary op whose output has rank `out_rank`, scaled by `scale`
  /// (constants and scalars only).
  uint32_t binary_operand(int vid, size_t out_rank, double scale, bool out_plain = false) {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Double) {
      const double s =
          v.kind == Value::Kind::Int ? static_cast<double>(v.int_value) : v.double_value;
      return add_constant({1}, {static_cast<float>(s * scale)});
    }
    if (!v.is_constant) return activation(vid);
    std::vector<float> data = constant_floats(v);
    if (scale != 1.0) {
      for (float& f : data) f = static_cast<float>(f * scale);
    }
    std::vector<int64_t> dims(out_rank - v.sizes.size(), 1);
    dims.insert(dims.end(), v.sizes.begin(), v.sizes.end());
    if (out_plain) return add_constant(std::vector<uint64_t>(dims.begin(), dims.end()), data);
    if (out_rank == 4) data = to_nhwc(data, dims);
    return add_constant(xnn_dims(dims), data);
  }

  BlobNode& add_node(NodeOp op, std::vector<uint32_t> inputs, uint32_t out) {
    BlobNode n{};
    n.op = static_cast<uint32_t>(op);
    n.num_inputs = static_cast<uint32_t>(inputs.size());
    for (uint32_t i = 0; i < cpu::kMaxNodeInputs; ++i) {
      n.inputs[i] = i < inputs.size() ? inputs[i] : cpu::kNoValue;
    }
    n.output = out;
    n.fparams[0] = -kInf;
    n.fparams[1] = kInf;
    nodes_.push_back(n);
    return nodes_.back();
  }

  /// A pointwise conv (1x1, stride 1, no padding, one group) of an NHWC tensor is a
  /// fully-connected layer over its pixels: x [N, H, W, C] -> [N, H, W, O] with weight [O, C].
  static bool is_pointwise(const ConvAttrs& a, const std::vector<int64_t>& w) {
    return !a.depthwise && a.groups == 1 && w[2] == 1 && w[3] == 1 && a.stride[0] == 1 &&
           a.stride[1] == 1 && a.pad[0] == 0 && a.pad[1] == 0;
  }

  void lower_conv(const Node& node) {
    const ConvAttrs a = conv_attrs(g_, node);
    const Value& w = g_.values[static_cast<size_t>(node.args[1])];
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
    const int64_t pixels = xv.sizes[0] * xv.sizes[2] * xv.sizes[3];
    if (is_pointwise(a, w.sizes) && !is_tiny_gemm(pixels, w.sizes[0], w.sizes[1])) {
      lower_packed_fc(node, w.sizes[0], w.sizes[1]);
      return;
    }
    if (!a.depthwise && a.groups == 1 && !is_pointwise(a, w.sizes)) {
      lower_packed_conv(node, a);
      return;
    }
    const int64_t o = w.sizes[0], cg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
    const std::vector<float> src = constant_floats(w);
    std::vector<float> filt(src.size());
    std::vector<uint64_t> fdims;
    if (a.depthwise) {  // [O, 1, KH, KW] -> [1, KH, KW, O]
      for (int64_t oc = 0; oc < o; ++oc) {
        for (int64_t p = 0; p < kh * kw; ++p) filt[p * o + oc] = src[oc * kh * kw + p];
      }
      fdims = {1, static_cast<uint64_t>(kh), static_cast<uint64_t>(kw), static_cast<uint64_t>(o)};
    } else {  // OIHW -> OHWI
      for (int64_t oc = 0; oc < o; ++oc) {
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t p = 0; p < kh * kw; ++p) {
            filt[(oc * kh * kw + p) * cg + c] = src[(oc * cg + c) * kh * kw + p];
          }
        }
      }
      fdims = {static_cast<uint64_t>(o), static_cast<uint64_t>(kh), static_cast<uint64_t>(kw),
               static_cast<uint64_t>(cg)};
    }
    const uint32_t x = activation(node.args[0]);
    const uint32_t f = add_constant(fdims, filt);
    uint32_t b = cpu::kNoValue;
    if (!is_none(g_, node.args[2])) {
      b = add_constant({static_cast<uint64_t>(o)},
                       constant_floats(g_.values[static_cast<size_t>(node.args[2])]));
    }
    const uint32_t out = output(node.outputs[0]);
    BlobNode& n = add_node(
        a.depthwise ? NodeOp::DepthwiseConv2d : NodeOp::Conv2d,
        b == cpu::kNoValue ? std::vector<uint32_t>{x, f} : std::vector<uint32_t>{x, f, b}, out);
    set_window_params(n, a, kh, kw);
    if (a.depthwise) {
      n.params[cpu::kGroups] = static_cast<uint32_t>(o / a.groups);       // depth multiplier
      n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(a.groups);  // input channels
    } else {
      n.params[cpu::kGroups] = static_cast<uint32_t>(a.groups);
      n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(cg);
      n.params[cpu::kGroupOutChannels] = static_cast<uint32_t>(o / a.groups);
    }
  }

  /// linear runs on tern's own GEMM: the weight (and bias) packed once here into the panel
  /// layout the kernel streams, so the runtime reads it in place from the program.
  void lower_linear(const Node& node) {
    const Value& w = g_.values[static_cast<size_t>(node.args[1])];
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < xv.sizes.size(); ++d) rows *= xv.sizes[d];
    // Between two folded views (match_view_linear_views): from the first's input to the
    // second's output.
    auto fold = linear_folds_.find(static_cast<int>(&node - g_.nodes.data()));
    const int x = fold == linear_folds_.end() ? node.args[0] : fold->second.first;
    const int y = fold == linear_folds_.end() ? node.outputs[0] : fold->second.second;
    if (is_tiny_gemm(rows, w.sizes[0], w.sizes[1])) {
      lower_xnn_fc(node, x, y);
    } else {
      lower_packed_fc(node, w.sizes[0], w.sizes[1], x, y);
    }
  }

  /// A linear or embedding whose weight is NF4 / FP8 (quant_lowering.h): ops 23 / 24 read
  /// the packed codes (re-laid out once here) with the program's scale parameters.
  void lower_quant(const Node& node, bool embedding) {
    const QuantBlobWeight qw = quant_blob_weight(g_, node.args[embedding ? 0 : 1]);
    uint32_t in = 0;
    if (embedding) {  // int64 indices: always a region input (check_quant_embedding)
      const int vid = node.args[1];
      auto arg = input_arg_.find(vid);
      if (arg == input_arg_.end()) {
        throw std::invalid_argument("cpu backend: embedding indices are no region input");
      }
      auto it = ids_.find(vid);
      const Value& v = g_.values[static_cast<size_t>(vid)];
      in = it != ids_.end() ? it->second
                            : add_value(ValueKind::ExternalInput, ValueLayout::Int64Plain,
                                        std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()),
                                        arg->second);
      ids_.emplace(vid, in);
    } else {
      in = activation(node.args[0]);
    }
    std::vector<uint32_t> ins{in, add_constant({qw.floats.size()}, qw.floats)};
    if (!embedding && !is_none(g_, node.args[2])) {
      const std::vector<float> bias = constant_floats(g_.values[static_cast<size_t>(node.args[2])]);
      ins.push_back(add_constant({bias.size()}, bias));
    }
    BlobNode& n = add_node(embedding ? NodeOp::QuantizedEmbedding : NodeOp::QuantizedFullyConnected,
                           ins, output(node.outputs[0]));
    for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) n.params[i] = qw.params[i];
  }

  /// A product this small (e.g. a squeeze-excitation block's 1x1 convs on a 1x1 image) takes
  /// less time than a stage boundary: it stays in the surrounding XNNPACK stage.
  static bool is_tiny_gemm(int64_t m, int64_t n, int64_t k) { return m * n * k <= (1 << 17); }

  /// linear as XNNPACK's fully-connected node (weight [out, in] and bias as they are).
  void lower_xnn_fc(const Node& node, int x_vid, int y_vid) {
    const Value& w = g_.values[static_cast<size_t>(node.args[1])];
    const uint32_t x = activation(x_vid);
    const uint32_t f = add_constant(
        {static_cast<uint64_t>(w.sizes[0]), static_cast<uint64_t>(w.sizes[1])}, constant_floats(w));
    std::vector<uint32_t> ins{x, f};
    if (!is_none(g_, node.args[2])) {
      ins.push_back(add_constant({static_cast<uint64_t>(w.sizes[0])},
                                 constant_floats(g_.values[static_cast<size_t>(node.args[2])])));
    }
    add_node(NodeOp::FullyConnected, ins, output(y_vid));
  }

  /// Node args 0, 1, 2 are x, a constant weight of n x k floats (row-major) and an optional
  /// bias; the output is x with its last (XNNPACK) dim k replaced by n.
  /// x_vid / y_vid: the tern values read and made (-1: the node's x and output).
  void lower_packed_fc(const Node& node, int64_t n, int64_t k, int x_vid = -1, int y_vid = -1) {
    const uint32_t x = activation(x_vid < 0 ? node.args[0] : x_vid);
    const uint32_t f = add_packed_weight(
        constant_floats(g_.values[static_cast<size_t>(node.args[1])]), n, k, node.args[2]);
    BlobNode& fc =
        add_node(NodeOp::PackedFullyConnected, {x, f}, output(y_vid < 0 ? node.outputs[0] : y_vid));
    fc.params[0] = static_cast<uint32_t>(n);
    fc.params[1] = static_cast<uint32_t>(k);
  }

  /// The constant of a row-major weight matrix [n, k] and the bias of node argument
  /// `bias_arg` (None: zeros) packed for tern's GEMM (cpu_blob_format.h packed_fc_floats).
  uint32_t add_packed_weight(const std::vector<float>& matrix, int64_t n, int64_t k, int bias_arg) {
    std::vector<float> bias;
    if (!is_none(g_, bias_arg)) bias = constant_floats(g_.values[static_cast<size_t>(bias_arg)]);
    std::vector<float> packed(static_cast<size_t>(
        cpu::packed_fc_floats(static_cast<uint64_t>(n), static_cast<uint64_t>(k))));
    cpu::pack_fc_weight(matrix.data(), bias.empty() ? nullptr : bias.data(), n, k, packed.data());
    return add_constant({static_cast<uint64_t>(packed.size())}, packed);
  }

  /// An inverted bottleneck chain (bottleneck_match.h) as one PackedBottleneck node.
  void lower_bottleneck(const BottleneckMatch& m) {
    const Node& dw = g_.nodes[static_cast<size_t>(m.depthwise)];
    const ConvAttrs a = conv_attrs(g_, dw);
    const std::vector<int64_t>& wd = g_.values[static_cast<size_t>(dw.args[1])].sizes;
    const int64_t c = g_.values[static_cast<size_t>(m.input)].sizes[1];
    const int64_t e = wd[0];
    const int64_t o = g_.values[static_cast<size_t>(m.output)].sizes[1];
    const uint32_t x = activation(m.input);
    const std::vector<float> packed = pack_bottleneck_weights(g_, m);
    const uint32_t f = add_constant({static_cast<uint64_t>(packed.size())}, packed);
    std::vector<uint32_t> ins{x, f};
    if (m.residual >= 0) ins.push_back(activation(m.residual));
    BlobNode& n = add_node(NodeOp::PackedBottleneck, ins, output(m.output));
    set_window_params(n, a, wd[2], wd[3]);
    n.params[cpu::kBottleneckInChannels] = static_cast<uint32_t>(c);
    n.params[cpu::kBottleneckExpandedChannels] = static_cast<uint32_t>(e);
    n.params[cpu::kBottleneckOutChannels] = static_cast<uint32_t>(o);
    const bool se = m.se_squeeze >= 0;
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

  /// Pads, window, strides and dilations of a conv at the ConvParam indices.
  static void set_window_params(BlobNode& n, const ConvAttrs& a, int64_t kh, int64_t kw) {
    n.params[cpu::kPadTop] = n.params[cpu::kPadBottom] = static_cast<uint32_t>(a.pad[0]);
    n.params[cpu::kPadLeft] = n.params[cpu::kPadRight] = static_cast<uint32_t>(a.pad[1]);
    n.params[cpu::kKernelH] = static_cast<uint32_t>(kh);
    n.params[cpu::kKernelW] = static_cast<uint32_t>(kw);
    n.params[cpu::kStrideH] = static_cast<uint32_t>(a.stride[0]);
    n.params[cpu::kStrideW] = static_cast<uint32_t>(a.stride[1]);
    n.params[cpu::kDilationH] = static_cast<uint32_t>(a.dilation[0]);
    n.params[cpu::kDilationW] = static_cast<uint32_t>(a.dilation[1]);
  }

  /// A dense conv (one group) runs on tern's own NHWC convolution: the OIHW weight becomes
  /// the [O, KH*KW*C] matrix in (kh, kw, c) order, packed with its bias like a linear.
  void lower_packed_conv(const Node& node, const ConvAttrs& a) {
    const Value& w = g_.values[static_cast<size_t>(node.args[1])];
    const int64_t o = w.sizes[0], c = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
    const std::vector<float> src = constant_floats(w);
    const Value& y = g_.values[static_cast<size_t>(node.outputs[0])];
    if (wants_winograd(a, w.sizes, y.sizes)) {
      lower_winograd_conv(node, a, src, o, c);
      return;
    }
    const int64_t k = kh * kw * c;
    std::vector<float> matrix(src.size());
    for (int64_t oc = 0; oc < o; ++oc) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t p = 0; p < kh * kw; ++p) {
          matrix[static_cast<size_t>(oc * k + p * c + ch)] =
              src[static_cast<size_t>((oc * c + ch) * kh * kw + p)];
        }
      }
    }
    const uint32_t x = activation(node.args[0]);
    const uint32_t f = add_packed_weight(matrix, o, k, node.args[2]);
    BlobNode& n = add_node(NodeOp::PackedConv2d, {x, f}, output(node.outputs[0]));
    set_window_params(n, a, kh, kw);
    n.params[cpu::kPackedInChannels] = static_cast<uint32_t>(c);
    n.params[cpu::kPackedOutChannels] = static_cast<uint32_t>(o);
  }

  /// A 3x3 stride-1 conv (one group, dilation 1) runs on tern's Winograd F(2x2,3x3) kernel when
  /// its output has enough 2x2 tiles for the transformed weight (16/9 of the direct one) to be
  /// reused: measured against tern's direct conv on ResNet-18's layers
  /// (backends/cpu/kernels/README.md): 2.0-2.2x at 56x56, 28x28 and 14x14 (49 tiles), 1.0-1.2x
  /// at 7x7 (16 tiles, bound by reading the 16 MiB transformed weight).
  static bool wants_winograd(const ConvAttrs& a, const std::vector<int64_t>& w,
                             const std::vector<int64_t>& y) {
    if (a.depthwise || a.groups != 1 || w[2] != 3 || w[3] != 3 || a.stride[0] != 1 ||
        a.stride[1] != 1 || a.dilation[0] != 1 || a.dilation[1] != 1) {
      return false;
    }
    const int64_t tiles = y[0] * ((y[2] + 1) / 2) * ((y[3] + 1) / 2);
    return tiles >= kWinogradMinTiles && w[1] >= 16 && w[0] >= 16;
  }
  static constexpr int64_t kWinogradMinTiles = 32;

  /// The conv on tern's Winograd kernel: the OIHW weight transformed and packed once here.
  void lower_winograd_conv(const Node& node, const ConvAttrs& a, const std::vector<float>& w,
                           int64_t o, int64_t c) {
    std::vector<float> bias;
    if (!is_none(g_, node.args[2])) {
      bias = constant_floats(g_.values[static_cast<size_t>(node.args[2])]);
    }
    std::vector<float> packed(static_cast<size_t>(
        cpu::winograd_packed_floats(static_cast<uint64_t>(o), static_cast<uint64_t>(c))));
    cpu::pack_winograd_weight(w.data(), bias.empty() ? nullptr : bias.data(), o, c,
                              packed.data());
    const uint32_t x = activation(node.args[0]);
    const uint32_t f = add_constant({static_cast<uint64_t>(packed.size())}, packed);
    BlobNode& n = add_node(NodeOp::PackedWinogradConv2d, {x, f}, output(node.outputs[0]));
    set_window_params(n, a, 3, 3);
    n.params[cpu::kPackedInChannels] = static_cast<uint32_t>(c);
    n.params[cpu::kPackedOutChannels] = static_cast<uint32_t>(o);
  }

  /// Whether node `last` is tern's GEMM with an activation already folded in: nothing that the
  /// graph applies after it (a clamp, a residual, a hardsigmoid's scaling) may fold in then.
  static bool has_activation(const BlobNode& last) {
    return (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected) && last.params[2] != 0) ||
           (last.op == static_cast<uint32_t>(NodeOp::PackedConv2d) &&
            last.params[cpu::kPackedActivation] != 0);
  }

  /// A hardswish or GELU whose input is made by the node just lowered, tern's GEMM (fc or 1x1
  /// conv) or direct conv (op 18; e.g. MobileNetV3's stem) with no activation yet, and read by
  /// nothing else becomes that node's epilogue activation, applied to each finished tile or row
  /// while it is in cache (after its clamp and residual, which the graph applies first). Returns
  /// false when it does not apply.
  bool fuse_activation_into_gemm(const Node& node, cpu::GemmActivation act) {
    const int in = node.args[0];
    if (nodes_.empty() || ids_.count(in) == 0 || uses_.at(in) != 1 || output_arg_.count(in) != 0 ||
        shared(ids_.at(in))) {
      return false;
    }
    BlobNode& last = nodes_.back();
    const bool fc = last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected);
    if ((!fc && last.op != static_cast<uint32_t>(NodeOp::PackedConv2d)) ||
        last.output != ids_.at(in) || has_activation(last)) {
      return false;
    }
    last.params[fc ? 2u : static_cast<uint32_t>(cpu::kPackedActivation)] = static_cast<uint32_t>(act);
    retarget_output(in, node.outputs[0]);
    return true;
  }

  /// A relu/hardtanh/clamp whose input is made by the node just lowered, one of tern's GEMM
  /// nodes (fc or conv), and read by nothing else folds into that node's output bounds.
  /// Returns false when it does not apply.
  bool fuse_clamp_into_fc(const Node& node, float lo, float hi) {
    const int in = node.args[0];
    if (nodes_.empty() || ids_.count(in) == 0 || uses_.at(in) != 1 || output_arg_.count(in) != 0 ||
        shared(ids_.at(in))) {
      return false;
    }
    BlobNode& last = nodes_.back();
    if ((last.op != static_cast<uint32_t>(NodeOp::PackedFullyConnected) &&
         last.op != static_cast<uint32_t>(NodeOp::PackedConv2d) &&
         last.op != static_cast<uint32_t>(NodeOp::PackedWinogradConv2d)) ||
        last.output != ids_.at(in) || has_activation(last)) {
      return false;
    }
    last.fparams[0] = std::max(last.fparams[0], lo);
    last.fparams[1] = std::min(last.fparams[1], hi);
    retarget_output(in, node.outputs[0]);
    return true;
  }

  /// The floats of constant blob value `id`, in place in the data section.
  float* constant_data(uint32_t id) {
    return reinterpret_cast<float*>(data_.data() + values_[id].data_offset);
  }

  /// hardsigmoid(y) = clamp(y / 6 + 1/2, 0, 1). When y is made by the node just lowered, a
  /// conv or fully-connected layer (XNNPACK's or tern's, no clamp or residual yet) whose output
  /// nothing else reads, its weights and bias are scaled by 1/6 here, 1/2 added to the bias and
  /// the clamp fused: one node instead of three more passes (squeeze-excitation blocks end this
  /// way). Returns false when it does not apply.
  bool fuse_hardsigmoid_into_producer(const Node& node) {
    const int in = node.args[0];
    if (nodes_.empty() || ids_.count(in) == 0 || uses_.at(in) != 1 || output_arg_.count(in) != 0 ||
        shared(ids_.at(in))) {
      return false;
    }
    BlobNode& last = nodes_.back();
    if (last.output != ids_.at(in) || last.fparams[0] != -kInf || last.fparams[1] != kInf ||
        has_activation(last)) {
      return false;
    }
    const NodeOp op = static_cast<NodeOp>(last.op);
    const double sixth = 1.0 / 6.0;
    auto scale = [&](float* f, uint64_t count) {
      for (uint64_t i = 0; i < count; ++i) f[i] = static_cast<float>(f[i] * sixth);
    };
    if (op == NodeOp::PackedFullyConnected || op == NodeOp::PackedConv2d) {
      if (last.num_inputs != 2) return false;  // a residual is not scaled with the product
      const uint64_t n = op == NodeOp::PackedFullyConnected ? last.params[0]
                                                            : last.params[cpu::kPackedOutChannels];
      const uint64_t count = values_[last.inputs[1]].data_bytes / sizeof(float);
      const uint64_t k = count / ((n + 15) / 16 * 16) - 1;  // panels of [bias 16][k rows x 16]
      float* packed = constant_data(last.inputs[1]);
      scale(packed, count);
      for (uint64_t col = 0; col < n; ++col) packed[(col / 16) * 16 * (k + 1) + col % 16] += 0.5f;
    } else if (op == NodeOp::Conv2d || op == NodeOp::DepthwiseConv2d ||
               op == NodeOp::FullyConnected) {
      const BlobValue& f = values_[last.inputs[1]];
      const uint64_t n = op == NodeOp::DepthwiseConv2d ? f.dims[3] : f.dims[0];
      scale(constant_data(last.inputs[1]), f.data_bytes / sizeof(float));
      if (last.num_inputs < 3) {
        last.inputs[2] = add_constant({n}, std::vector<float>(n, 0.5f));
        last.num_inputs = 3;
      } else {
        float* b = constant_data(last.inputs[2]);
        for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<float>(b[i] * sixth + 0.5);
      }
    } else {
      return false;
    }
    last.fparams[0] = 0.0f;
    last.fparams[1] = 1.0f;
    retarget_output(in, node.outputs[0]);
    return true;
  }

  /// The blob value of tern value `from` (made by the last node) now stands for tern value
  /// `to` (a folded node's output): external when `to` leaves the region.
  void retarget_output(int from, int to) {
    const uint32_t id = ids_.at(from);
    ids_.erase(from);
    ids_.emplace(to, id);
    auto ext = output_arg_.find(to);
    if (ext != output_arg_.end()) {
      values_[id].kind = static_cast<uint32_t>(ValueKind::ExternalOutput);
      values_[id].layout = static_cast<uint32_t>(layout_of_value(to));
      values_[id].arg = ext->second;
    }
  }

  /// add(conv_out, r) (either order, alpha 1) where conv_out is made by the node just lowered,
  /// one of tern's convs or GEMMs with no clamp or residual yet, and read by nothing else, and
  /// r is an activation of the output's shape: r becomes the node's residual input (ResNet's
  /// basic block, MobileNetV2's inverted residual). Returns false when it does not apply.
  bool fuse_residual_into_conv(const Node& node, double alpha) {
    if (node.op != "tern::add" || alpha != 1.0 || nodes_.empty()) return false;
    BlobNode& last = nodes_.back();
    if ((last.op != static_cast<uint32_t>(NodeOp::PackedConv2d) &&
         last.op != static_cast<uint32_t>(NodeOp::PackedWinogradConv2d) &&
         last.op != static_cast<uint32_t>(NodeOp::PackedFullyConnected)) ||
        last.num_inputs != 2 || has_activation(last) ||
        last.fparams[0] != -kInf || last.fparams[1] != kInf) {
      return false;
    }
    const Value& out = g_.values[static_cast<size_t>(node.outputs[0])];
    for (int i = 0; i < 2; ++i) {
      const int conv_out = node.args[static_cast<size_t>(i)];
      const int other = node.args[static_cast<size_t>(1 - i)];
      const Value& ov = g_.values[static_cast<size_t>(other)];
      if (ids_.count(conv_out) == 0 || ids_.at(conv_out) != last.output ||
          shared(last.output) ||
          uses_.at(conv_out) != 1 || output_arg_.count(conv_out) != 0 || conv_out == other ||
          g_.values[static_cast<size_t>(conv_out)].sizes != out.sizes ||  // no broadcasting
          ov.kind != Value::Kind::Tensor || ov.is_constant || ov.sizes != out.sizes ||
          (ids_.count(other) == 0 && input_arg_.count(other) == 0)) {  // must exist already
        continue;
      }
      last.inputs[2] = activation(other);
      last.num_inputs = 3;
      retarget_output(conv_out, node.outputs[0]);
      return true;
    }
    return false;
  }

  void lower_binary(const Node& node) {
    const double alpha = binary_alpha(g_, node);
    if (fuse_residual_into_conv(node, alpha)) return;
    const size_t r = g_.values[static_cast<size_t>(node.outputs[0])].sizes.size();
    const bool plain = is_plain_4d(node.outputs[0]);
    const uint32_t a = binary_operand(node.args[0], r, 1.0, plain);
    const uint32_t b = binary_operand(node.args[1], r, alpha, plain);
    NodeOp op = NodeOp::Add;
    if (node.op == "tern::sub") op = NodeOp::Subtract;
    if (node.op == "tern::mul") op = NodeOp::Multiply;
    if (node.op == "tern::div") op = NodeOp::Divide;
    add_node(op, {a, b}, output(node.outputs[0]));
  }

  /// tern::cat along the last XNNPACK dim: Concat nodes of up to 3 inputs, chained (each
  /// partial result an internal value, first of the next node's inputs) for more; a cat of
  /// one tensor is a copy (XNNPACK's reshape to the same dims).
  void lower_concat(const Node& node) {
    const std::vector<int> ins = concat_inputs(g_, node);
    const Value& ov = g_.values[static_cast<size_t>(node.outputs[0])];
    const size_t rank = ov.sizes.size();
    // The XNNPACK dims of a value of `sizes`: NHWC for 4-D.
    auto xdims = [&](const std::vector<int64_t>& sizes) {
      std::vector<uint64_t> d(sizes.begin(), sizes.end());
      if (rank == 4) d = {d[0], d[2], d[3], d[1]};
      return d;
    };
    const size_t cat_dim = rank == 4 ? 1 : rank - 1;
    uint32_t acc = activation(ins[0]);
    if (ins.size() == 1) {  // cat([x]) is a copy (DenseNet's first dense layer)
      add_node(NodeOp::Reshape, {acc}, output(node.outputs[0]));
      return;
    }
    std::vector<int64_t> acc_sizes = g_.values[static_cast<size_t>(ins[0])].sizes;
    size_t next = 1;
    while (next < ins.size()) {
      std::vector<uint32_t> inputs = {acc};
      std::vector<int64_t> sizes = acc_sizes;
      while (inputs.size() < cpu::kMaxNodeInputs && next < ins.size()) {
        inputs.push_back(activation(ins[next]));
        sizes[cat_dim] += g_.values[static_cast<size_t>(ins[next])].sizes[cat_dim];
        ++next;
      }
      const uint32_t out =
          next == ins.size() ? output(node.outputs[0]) : internal(xdims(sizes));
      add_node(NodeOp::Concat, inputs, out);
      acc = out;
      acc_sizes = sizes;
    }
  }

  /// A standalone batch_norm (not after a conv, e.g. DenseNet's pre-activation one): XNNPACK
  /// multiply and add by per-channel constants folded here ([1, 1, 1, C] for an NHWC 4-D x,
  /// [1, C] or [1, C, 1] for plain ones); a relu after it fuses into the add (XNNPACK).
  void lower_batch_norm(const Node& node) {
    const BatchNormAffine a = batch_norm_affine(g_, node);
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
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

  /// permute(0, 2, 3, 1) of an NHWC tensor or (0, 3, 1, 2) of a channels-last one: the same
  /// bytes in the delegate (layout_plan.h), so the output is the input's blob value (an alias,
  /// shared()), or a copy when it leaves the region (its blob value must be its own).
  void lower_permute(const Node& node) {
    const uint32_t x = activation(node.args[0]);
    const int y = node.outputs[0];
    if (output_arg_.count(y) == 0) {
      ids_.emplace(y, x);
      aliased_.insert(x);
      return;
    }
    add_node(NodeOp::Reshape, {x}, output(y));
  }

  /// layer_norm over the last dim: tern's own node (op 25).
  void lower_layer_norm(const Node& node) {
    const LayerNormAttrs a = layer_norm_attrs(g_, node);
    const uint64_t c = a.gamma.size();
    const uint32_t x = activation(node.args[0]);
    const uint32_t gamma = add_constant({c}, a.gamma);
    const uint32_t beta = add_constant({c}, a.beta);
    BlobNode& n = add_node(NodeOp::LayerNorm, {x, gamma, beta}, output(node.outputs[0]));
    n.fparams[0] = a.eps;
    n.fparams[1] = 0.0f;
  }

  void lower_pool(const Node& node, bool is_max) {
    PoolAttrs a = pool_attrs(g_, node, is_max);
    uint32_t x = activation(node.args[0]);
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

  void lower_pad(const Node& node) {
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
    const size_t rank = xv.sizes.size();
    std::vector<int64_t> pre, post;
    float value;
    pad_amounts(g_, node, rank, &pre, &post, &value);
    if (rank == 4) {  // tern dims N C H W -> XNNPACK dims N H W C
      pre = {pre[0], pre[2], pre[3], pre[1]};
      post = {post[0], post[2], post[3], post[1]};
    }
    const uint32_t x = activation(node.args[0]);
    BlobNode& n = add_node(NodeOp::ConstantPad, {x}, output(node.outputs[0]));
    for (size_t d = 0; d < rank; ++d) {
      n.params[d] = static_cast<uint32_t>(pre[d]);
      n.params[cpu::kMaxDims + d] = static_cast<uint32_t>(post[d]);
    }
    n.fparams[0] = value;
    n.fparams[1] = 0.0f;
  }

  void lower_node(const Node& node) {
    const std::string& op = node.op;
    if (op == "tern::conv2d") {
      lower_conv(node);
    } else if ((op == "tern::linear" && is_quantized_value(g_, node.args[1])) ||
               op == "tern::embedding") {
      lower_quant(node, op == "tern::embedding");
    } else if (op == "tern::linear") {
      lower_linear(node);
    } else if (op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div") {
      lower_binary(node);
    } else if (op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp") {
      float lo, hi;
      clamp_bounds(g_, node, &lo, &hi);
      if (fuse_clamp_into_fc(node, lo, hi)) return;
      const uint32_t x = activation(node.args[0]);
      BlobNode& n = add_node(NodeOp::Clamp, {x}, output(node.outputs[0]));
      n.fparams[0] = lo;
      n.fparams[1] = hi;
    } else if (op == "tern::hardsigmoid") {
      if (fuse_hardsigmoid_into_producer(node)) return;
      // min(max(x + 3, 0), 6) / 6, as the portable kernel computes it; XNNPACK fuses the clamp
      // into the add.
      const std::vector<uint64_t> dims = dims_of(node.args[0]);
      const uint32_t x = activation(node.args[0]);
      const uint32_t shifted = internal(dims);
      add_node(NodeOp::Add, {x, add_constant({1}, {3.0f})}, shifted);
      const uint32_t clamped = internal(dims);
      BlobNode& c = add_node(NodeOp::Clamp, {shifted}, clamped);
      c.fparams[0] = 0.0f;
      c.fparams[1] = 6.0f;
      add_node(NodeOp::Divide, {clamped, add_constant({1}, {6.0f})}, output(node.outputs[0]));
    } else if (op == "tern::mean") {
      const bool keepdim = global_mean_keepdim(g_, node);
      const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
      const uint32_t x = activation(node.args[0]);
      if (keepdim) {
        add_node(NodeOp::GlobalAvgPool2d, {x}, output(node.outputs[0]));
      } else {  // [N, 1, 1, C] then reshape to [N, C] (same bytes)
        const uint32_t pooled = internal(
            {static_cast<uint64_t>(xv.sizes[0]), 1, 1, static_cast<uint64_t>(xv.sizes[1])});
        add_node(NodeOp::GlobalAvgPool2d, {x}, pooled);
        add_node(NodeOp::Reshape, {pooled}, output(node.outputs[0]));
      }
    } else if (op == "tern::hardswish" &&
               fuse_activation_into_gemm(node, cpu::GemmActivation::Hardswish)) {
      return;
    } else if (op == "tern::sigmoid" &&
               fuse_activation_into_gemm(node, cpu::GemmActivation::Sigmoid)) {
      return;
    } else if (op == "tern::silu") {  // into the GEMM before it, else sigmoid and multiply
      if (fuse_activation_into_gemm(node, cpu::GemmActivation::Silu)) return;
      const uint32_t x = activation(node.args[0]);
      const uint32_t s = internal(dims_of(node.args[0]));
      add_node(NodeOp::Sigmoid, {x}, s);
      add_node(NodeOp::Multiply, {x, s}, output(node.outputs[0]));
    } else if (op == "tern::hardswish" || op == "tern::sigmoid" || op == "tern::softmax") {
      const NodeOp nop = op == "tern::hardswish" ? NodeOp::Hardswish
                         : op == "tern::sigmoid" ? NodeOp::Sigmoid
                                                 : NodeOp::Softmax;
      const uint32_t x = activation(node.args[0]);
      add_node(nop, {x}, output(node.outputs[0]));
    } else if (op == "tern::gelu") {  // into the GEMM before it, else its own kernel
      const bool tanh_form = gelu_tanh_form(g_, node);
      if (fuse_activation_into_gemm(node, tanh_form ? cpu::GemmActivation::GeluTanh
                                                    : cpu::GemmActivation::GeluErf)) {
        return;
      }
      const uint32_t x = activation(node.args[0]);
      BlobNode& n = add_node(NodeOp::Gelu, {x}, output(node.outputs[0]));
      n.params[0] = tanh_form ? 1 : 0;
    } else if (op == "tern::cat") {
      lower_concat(node);
    } else if (op == "tern::batch_norm") {
      lower_batch_norm(node);
    } else if (op == "tern::permute") {
      lower_permute(node);
    } else if (op == "tern::layer_norm") {
      lower_layer_norm(node);
    } else if (op == "tern::max_pool2d" || op == "tern::avg_pool2d") {
      lower_pool(node, op == "tern::max_pool2d");
    } else if (op == "tern::adaptive_avg_pool2d") {
      const uint32_t x = activation(node.args[0]);
      add_node(NodeOp::GlobalAvgPool2d, {x}, output(node.outputs[0]));
    } else if (is_cpu_view_op(op)) {
      const uint32_t x = activation(node.args[0]);
      add_node(NodeOp::Reshape, {x}, output(node.outputs[0]));
    } else if (op == "tern::pad") {
      lower_pad(node);
    } else {
      throw std::invalid_argument("cpu backend: no lowering for " + op);
    }
  }

  std::vector<uint8_t> serialize() const {
    BlobHeader h{};
    std::memcpy(h.magic, cpu::kBlobMagic, 4);
    h.version = cpu::kBlobVersion;
    h.header_size = sizeof(BlobHeader);
    h.num_args = static_cast<uint32_t>(r_.inputs.size() + r_.outputs.size());
    h.num_values = static_cast<uint32_t>(values_.size());
    h.num_nodes = static_cast<uint32_t>(nodes_.size());
    h.value_record_size = sizeof(BlobValue);
    h.node_record_size = sizeof(BlobNode);
    const size_t tables =
        sizeof(BlobHeader) + values_.size() * sizeof(BlobValue) + nodes_.size() * sizeof(BlobNode);
    h.data_offset = (tables + cpu::kDataAlignment - 1) / cpu::kDataAlignment * cpu::kDataAlignment;
    h.data_size = data_.size() + cpu::kDataTailPadding;
    std::vector<uint8_t> blob(h.data_offset + h.data_size, 0);
    uint8_t* p = blob.data();
    std::memcpy(p, &h, sizeof(h));
    p += sizeof(h);
    if (!values_.empty()) std::memcpy(p, values_.data(), values_.size() * sizeof(BlobValue));
    p += values_.size() * sizeof(BlobValue);
    if (!nodes_.empty()) std::memcpy(p, nodes_.data(), nodes_.size() * sizeof(BlobNode));
    if (!data_.empty()) std::memcpy(blob.data() + h.data_offset, data_.data(), data_.size());
    return blob;
  }

  const Graph& g_;
  const DelegateRegion& r_;
  std::map<int, uint32_t> input_arg_;
  std::map<int, uint32_t> output_arg_;
  std::map<int, uint32_t> ids_;  ///< tern value id -> blob value index
  std::map<int, int> uses_;      ///< tern value id -> how many node arguments read it
  std::vector<bool> plain_;      ///< tern value id -> a channels-last 4-D tensor (layout_plan.h)
  std::set<uint32_t> aliased_;   ///< blob values standing for several tern values (permutes)
  std::set<int> folded_views_;   ///< view nodes folded into a linear (no blob node)
  std::map<int, std::pair<int, int>> linear_folds_;  ///< linear node -> (x, output) values
  std::vector<BlobValue> values_;
  std::vector<BlobNode> nodes_;
  std::vector<uint8_t> data_;
};

}  // namespace

std::vector<uint8_t> lower_region(const Graph& graph, const DelegateRegion& region) {
  return Lowering(graph, region).run();
}

}  // namespace tern::compiler::cpu_compile
