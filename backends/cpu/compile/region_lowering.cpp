#include "backends/cpu/compile/region_lowering.h"

#include <cstring>
#include <stdexcept>

#include "backends/cpu/compile/pad_fold.h"
#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

Lowering::Lowering(const Graph& g, const DelegateRegion& r, const CpuOptions& options)
    : g_(g), r_(r), options_(options), plain_(plain_4d_values(g)) {
  const uint32_t num_in = static_cast<uint32_t>(r.inputs.size());
  for (uint32_t i = 0; i < num_in; ++i) input_arg_.emplace(r.inputs[i], i);
  for (uint32_t j = 0; j < r.outputs.size(); ++j) output_arg_.emplace(r.outputs[j], num_in + j);
  for (size_t v = 0; v < g.values.size(); ++v) uses_[static_cast<int>(v)] = 0;
  // A read through a tensor list (a cat's parts) counts as a read of each element: a value
  // that a cat also reads is never fused away into the node that reads it directly.
  auto count_reads = [&g](const std::vector<int>& args, std::map<int, int>* uses) {
    for (int a : args) {
      if (a < 0) continue;
      ++(*uses)[a];
      for (int t : g.values[static_cast<size_t>(a)].tensors) ++(*uses)[t];
    }
  };
  for (const Node& n : g.nodes) count_reads(n.args, &uses_);
  for (int n : r.nodes) count_reads(g.nodes[static_cast<size_t>(n)].args, &region_uses_);
  for (const Value& v : g.values) {  // a constant in a tensor list is read outside our count
    for (int t : v.tensors) listed_.insert(t);
  }
}

std::vector<uint8_t> Lowering::run() {
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
  const std::function<bool(int)> nhwc = [this](int vid) { return is_nhwc(vid); };
  for (const ConcatShuffleMatch& m :
       match_concat_shuffles(g_, r_, cpu::kMaxConcatInputs, nhwc)) {
    for (int n : m.folded) folded_views_.insert(n);
    shuffle_folds_[m.cat] = m;
  }
  for (const GroupSumMatch& m : match_group_sums(g_, r_, nhwc)) {
    if (m.cat_node >= 0 && shuffle_folds_.count(m.cat_node) != 0) continue;
    if (m.mul_node >= 0) gelu_pieces_.insert(m.mul_node);
    if (m.cat_node >= 0) gelu_pieces_.insert(m.cat_node);
    group_sums_[m.sum_node] = m;
  }
  for (const ChannelMixMatch& m : match_channel_mixes(g_, r_, nhwc)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    channel_mixes_[m.nodes.back()] = m;
  }
  for (const TanhGeluMatch& m : match_tanh_gelus(g_, r_)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    tanh_gelus_[m.nodes.back()] = m;
  }
  for (const RmsNormMatch& m : match_rms_norms(g_, r_)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    rms_norms_[m.nodes.back()] = m;
  }
  for (const LstmCellMatch& m : match_lstm_cells(g_, r_)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    lstm_cells_[m.nodes.back()] = m;
  }
  for (const GruCellMatch& m : match_gru_cells(g_, r_)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    gru_cells_[m.nodes.back()] = m;
  }
  for (const AttentionMatch& m : match_attentions(g_, r_)) {
    for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
    attentions_[m.nodes.back()] = m;
  }
  for (const SoftmaxMixMatch& m : match_softmax_mixes(g_, r_)) {
    if (gelu_pieces_.count(m.softmax) != 0 || gelu_pieces_.count(m.conv) != 0 ||
        fused.count(m.conv) != 0 || attentions_.count(m.conv) != 0) {
      continue;
    }
    gelu_pieces_.insert(m.softmax);
    softmax_mixes_[m.conv] = m;
  }
  for (int n : r_.nodes) {  // comparisons: fused into the selects that read them
    const Node& node = g_.nodes[static_cast<size_t>(n)];
    if (select_compare_mode(node.op) != 0) fused_compares_.emplace(node.outputs.at(0), n);
  }
  for (int n : r_.nodes) {
    if (folded_views_.count(n) != 0) continue;  // a view folded into its linear or concat
    if (select_compare_mode(g_.nodes[static_cast<size_t>(n)].op) != 0) continue;
    if (gelu_pieces_.count(n) != 0) continue;  // lowered with the pattern's last node
    if (auto t = tanh_gelus_.find(n); t != tanh_gelus_.end()) {
      lower_tanh_gelu(t->second);
      continue;
    }
    if (auto gs = group_sums_.find(n); gs != group_sums_.end()) {
      lower_group_sum(gs->second);
      continue;
    }
    if (auto cm = channel_mixes_.find(n); cm != channel_mixes_.end()) {
      lower_channel_mix(cm->second);
      continue;
    }
    if (auto sm = softmax_mixes_.find(n); sm != softmax_mixes_.end()) {
      lower_softmax_mix(sm->second);
      continue;
    }
    if (auto rn = rms_norms_.find(n); rn != rms_norms_.end()) {
      lower_rms_norm_match(rn->second);
      continue;
    }
    if (auto l = lstm_cells_.find(n); l != lstm_cells_.end()) {
      lower_lstm_cell(l->second);
      continue;
    }
    if (auto gc = gru_cells_.find(n); gc != gru_cells_.end()) {
      lower_gru_cell(gc->second);
      continue;
    }
    if (auto a = attentions_.find(n); a != attentions_.end()) {
      lower_eager_attention(a->second);
      continue;
    }
    auto f = fused.find(n);
    if (f == fused.end()) {
      lower_node(g_.nodes[static_cast<size_t>(n)]);
    } else if (f->second->nodes.back() == n) {  // the chain runs where its last node was
      lower_bottleneck(*f->second);
    }
  }
  for (int out : r_.outputs) {  // an index map's output leaving the region: copied now
    if (ids_.count(out) == 0 && lazy_.count(out) != 0) materialize(out);
  }
  for (int out : r_.outputs) {
    if (ids_.count(out) == 0) {
      throw std::invalid_argument("cpu backend: region output value " + std::to_string(out) +
                                  " is not produced by the region");
    }
  }
  mark_dynamic_internals();
  return serialize();
}

void Lowering::lower_node(const Node& node) {
  const std::string& op = node.op;
  if (op == kFoldedPadOp) {
    return;  // a zero pad folded into the convs that read it (pad_fold.h)
  } else if (op == "tern::conv2d") {
    lower_conv(node);
  } else if (op == "tern::conv1d") {
    lower_conv1d(node);
  } else if (op == "tern::conv3d") {
    lower_conv3d(node);
  } else if (op == "tern::conv_transpose2d") {
    lower_deconv(node);
  } else if (op == "tern::upsample_nearest2d") {
    lower_nearest_upsample(node);
  } else if (op == "tern::upsample_bilinear2d") {  // XNNPACK's bilinear resize (op 31)
    // A method's output read by nothing else (plain: layout_plan.h) is written as the
    // channels' planes by tern's resize (op 34), so it leaves the delegate as it is.
    const bool align = bilinear_upsample_align_corners(g_, node);
    const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
    const uint32_t x = activation(node.args[0]);
    const bool planes = is_plain_4d(node.outputs[0]);  // C <= 4096: layout_plan.cpp
    BlobNode& n = add_node(planes ? NodeOp::ResizeBilinearToPlanes : NodeOp::ResizeBilinear, {x},
                           output(node.outputs[0]));
    n.params[0] = static_cast<uint32_t>(ys[2]);
    n.params[1] = static_cast<uint32_t>(ys[3]);
    n.params[2] = align ? 1u : 0u;
  } else if (op == "tern::grouped_mm") {
    lower_grouped_matmul(node);
  } else if (op == "tern::grouped_linear") {
    lower_quant_grouped(node);
  } else if (is_runtime_index_rows(g_, node)) {
    lower_index_rows(node);
  } else if (is_f32_embedding(g_, node)) {
    lower_f32_embedding(node);
  } else if ((op == "tern::linear" && is_quantized_value(g_, node.args[1])) ||
             op == "tern::embedding") {
    lower_quant(node, op == "tern::embedding");
  } else if (op == "tern::linear") {
    lower_linear(node);
  } else if (op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div" ||
             op == "tern::maximum" || op == "tern::minimum") {
    lower_binary(node);
  } else if (op == "tern::tril" || op == "tern::triu") {
    lower_triangle(node);
  } else if (op == "tern::where") {
    if (is_where_of_activation_condition(g_, node)) {
      lower_select(node);
    } else {
      lower_where(node);
    }
  } else if (op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp") {
    float lo, hi;
    clamp_bounds(g_, node, &lo, &hi);
    if (fuse_clamp_into_fc(node, lo, hi)) return;
    const uint32_t x = activation(node.args[0]);
    BlobNode& n = add_node(NodeOp::Clamp, {x}, output(node.outputs[0]));
    n.fparams[0] = lo;
    n.fparams[1] = hi;
  } else if (op == "tern::leaky_relu") {  // max(x, slope·x) (min above a slope of 1)
    const float slope = leaky_relu_slope(g_, node);
    // The epilogue of the GEMM or conv making x (DarkNet's conv + batch norm + leaky ReLU),
    // for a slope the blob's parameter holds (0..2).
    if (slope <= 2.0f && fuse_activation_into_gemm(node.args[0], node.outputs[0],
                                                   cpu::GemmActivation::LeakyRelu, 1, slope)) {
      return;
    }
    const uint32_t x = activation(node.args[0]);
    const uint32_t scaled = internal(dims_of(node.args[0]));
    add_node(NodeOp::Multiply, {x, add_constant({1}, {slope})}, scaled);
    add_node(slope <= 1.0f ? NodeOp::Maximum : NodeOp::Minimum, {x, scaled},
             output(node.outputs[0]));
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
  } else if (is_reduction_op(op)) {
    lower_reduction(node);
  } else if (op == "tern::pow" && !is_small_pow(node)) {  // op 38's pow (x^e, libm's)
    const float e = pow_math_exponent(g_, node);
    BlobNode& n = add_node(NodeOp::UnaryMath, {activation(node.args[0])}, output(node.outputs[0]));
    n.params[0] = 11;  // UnaryMathFn::Pow (kernels/unary_math.h)
    std::memcpy(&n.params[1], &e, 4);
  } else if (op == "tern::pow" && small_pow_exponent(g_, node) == 0.5) {  // F.normalize's norm
    add_node(NodeOp::SquareRoot, {activation(node.args[0])}, output(node.outputs[0]));
  } else if (op == "tern::pow") {
    const double e = small_pow_exponent(g_, node);
    if (e == 2 && fuse_activation_into_gemm(node.args[0], node.outputs[0],
                                            cpu::GemmActivation::Square, 1)) {
      return;  // the square of tern's GEMM or conv output: its epilogue (StarReLU's relu(x)²)
    }
    const uint32_t x = activation(node.args[0]);
    const uint32_t sq = e == 2 ? output(node.outputs[0]) : internal(dims_of(node.args[0]));
    add_node(NodeOp::Multiply, {x, x}, sq);
    if (e == 3) add_node(NodeOp::Multiply, {sq, x}, output(node.outputs[0]));
  } else if (op == "tern::sqrt") {  // correctly rounded, as the portable kernel's
    add_node(NodeOp::SquareRoot, {activation(node.args[0])}, output(node.outputs[0]));
  } else if (op == "tern::abs") {  // max(x, -x): exact
    const uint32_t x = activation(node.args[0]);
    const uint32_t negated = internal(dims_of(node.args[0]));
    add_node(NodeOp::Multiply, {x, add_constant({1}, {-1.0f})}, negated);
    add_node(NodeOp::Maximum, {x, negated}, output(node.outputs[0]));
  } else if (op == "tern::rsqrt") {  // 1 / sqrt(x), each correctly rounded as the portable
    const uint32_t x = activation(node.args[0]);
    const uint32_t root = internal(dims_of(node.args[0]));
    add_node(NodeOp::SquareRoot, {x}, root);
    add_node(NodeOp::Divide, {add_constant({1}, {1.0f}), root}, output(node.outputs[0]));
  } else if (op == "tern::reciprocal") {  // 1 / x, correctly rounded as the portable kernel's
    add_node(NodeOp::Divide, {add_constant({1}, {1.0f}), activation(node.args[0])},
             output(node.outputs[0]));
  } else if (op == "tern::cumsum") {  // tern's running sum (op 39) along x's blob dim
    int64_t d = cumsum_dim(g_, node);
    if (is_nhwc(node.args[0])) d = std::vector<int64_t>{0, 3, 1, 2}[static_cast<size_t>(d)];
    BlobNode& n = add_node(NodeOp::Cumsum, {activation(node.args[0])}, output(node.outputs[0]));
    n.params[0] = static_cast<uint32_t>(d);
  } else if (is_unary_math_op(op)) {  // tern's unary math (op 38)
    const UnaryMathAttrs a = unary_math_attrs(g_, node);
    BlobNode& n = add_node(NodeOp::UnaryMath, {activation(node.args[0])}, output(node.outputs[0]));
    n.params[0] = a.fn;
    if (a.fn == 2) {
      std::memcpy(&n.params[1], &a.beta, 4);
      std::memcpy(&n.params[2], &a.threshold, 4);
    }
  } else if (op == "tern::neg") {  // -x (rotary embeddings' rotate_half): x * -1, exact
    add_node(NodeOp::Multiply, {activation(node.args[0]), add_constant({1}, {-1.0f})},
             output(node.outputs[0]));
  } else if (op == "tern::tanh") {  // 2 * sigmoid(2x) - 1
    const std::vector<uint64_t> dims = dims_of(node.args[0]);
    const uint32_t x = activation(node.args[0]);
    const uint32_t two = add_constant({1}, {2.0f});
    const uint32_t doubled = internal(dims), s = internal(dims), s2 = internal(dims);
    add_node(NodeOp::Multiply, {x, two}, doubled);
    add_node(NodeOp::Sigmoid, {doubled}, s);
    add_node(NodeOp::Multiply, {s, two}, s2);
    add_node(NodeOp::Subtract, {s2, add_constant({1}, {1.0f})}, output(node.outputs[0]));
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
  } else if (op == "tern::softmax" && softmax_over_inner_dim(node)) {
    return;
  } else if (op == "tern::hardswish" || op == "tern::sigmoid" || op == "tern::softmax") {
    const NodeOp nop = op == "tern::hardswish" ? NodeOp::Hardswish
                       : op == "tern::sigmoid" ? NodeOp::Sigmoid
                                               : NodeOp::Softmax;
    // A softmax reads row-major data (a copy of an NHWC x: layout_plan.cpp).
    const uint32_t x = op == "tern::softmax" ? activation_as(node.args[0], /*plain=*/true)
                                             : activation(node.args[0]);
    add_node(nop, {x}, output(node.outputs[0]));
  } else if (op == "tern::gelu") {  // into the GEMM before it, else its own kernel
    const bool tanh_form = gelu_tanh_form(g_, node);
    if (fuse_activation_into_gemm(
            node, tanh_form ? cpu::GemmActivation::GeluTanh : cpu::GemmActivation::GeluErf)) {
      return;
    }
    const uint32_t x = activation(node.args[0]);
    BlobNode& n = add_node(NodeOp::Gelu, {x}, output(node.outputs[0]));
    n.params[0] = tanh_form ? 1 : 0;
  } else if (op == "tern::cat") {
    lower_concat(node);
  } else if (op == "tern::batch_norm") {
    lower_batch_norm(node);
  } else if (op == "tern::permute" && is_layout_permute(node)) {
    lower_permute(node);
  } else if (op == "tern::index_select" && is_affine_index_select(g_, node)) {
    lower_index_select(node);
  } else if (is_gather_map_op(op)) {
    lower_gather_map(node);
  } else if (op == "tern::grid_sample2d") {
    lower_grid_sample(node);
  } else if (is_index_map_op(op)) {
    lower_index_map(node);
  } else if (op == "tern::bmm" || op == "tern::matmul") {
    lower_batch_matmul(node);
  } else if (op == "tern::scaled_dot_product_attention") {
    lower_sdpa(node);
  } else if (op == "tern::layer_norm") {
    lower_layer_norm(node);
  } else if (op == "tern::rms_norm") {
    lower_rms_norm(node);
  } else if (op == "tern::group_norm") {
    lower_group_norm(node);
  } else if (op == "tern::max_pool2d" || op == "tern::avg_pool2d") {
    lower_pool(node, op == "tern::max_pool2d");
  } else if (op == "tern::adaptive_avg_pool2d") {
    const uint32_t x = activation_as(node.args[0], /*plain=*/false);
    add_node(NodeOp::GlobalAvgPool2d, {x}, output(node.outputs[0]));
  } else if (is_cpu_view_op(op)) {
    lower_view(node);
  } else if (op == "tern::pad") {
    lower_pad(node);
  } else {
    throw std::invalid_argument("cpu backend: no lowering for " + op);
  }
}

std::vector<uint8_t> Lowering::serialize() const {
  BlobHeader h{};
  std::memcpy(h.magic, cpu::kBlobMagic, 4);
  h.version = cpu::kBlobVersion;
  h.header_size = sizeof(BlobHeader);
  h.num_args = static_cast<uint32_t>(r_.inputs.size() + r_.outputs.size());
  h.num_values = static_cast<uint32_t>(values_.size());
  h.num_nodes = static_cast<uint32_t>(nodes_.size());
  h.value_record_size = sizeof(BlobValue);
  h.node_record_size = sizeof(BlobNode);
  h.num_recipes = static_cast<uint32_t>(recipes_.size());
  h.recipe_record_size = sizeof(BlobRecipe);
  const size_t tables = sizeof(BlobHeader) + values_.size() * sizeof(BlobValue) +
                        nodes_.size() * sizeof(BlobNode) + recipes_.size() * sizeof(BlobRecipe);
  h.data_offset = (tables + cpu::kDataAlignment - 1) / cpu::kDataAlignment * cpu::kDataAlignment;
  h.data_size = data_.size() + cpu::kDataTailPadding;
  std::vector<uint8_t> blob(h.data_offset + h.data_size, 0);
  uint8_t* p = blob.data();
  std::memcpy(p, &h, sizeof(h));
  p += sizeof(h);
  if (!values_.empty()) std::memcpy(p, values_.data(), values_.size() * sizeof(BlobValue));
  p += values_.size() * sizeof(BlobValue);
  if (!nodes_.empty()) std::memcpy(p, nodes_.data(), nodes_.size() * sizeof(BlobNode));
  p += nodes_.size() * sizeof(BlobNode);
  if (!recipes_.empty()) std::memcpy(p, recipes_.data(), recipes_.size() * sizeof(BlobRecipe));
  if (!data_.empty()) std::memcpy(blob.data() + h.data_offset, data_.data(), data_.size());
  return blob;
}

}  // namespace tern::compiler::cpu_compile::lowering

namespace tern::compiler::cpu_compile {

std::vector<uint8_t> lower_region(const Graph& graph, const DelegateRegion& region,
                                  const CpuOptions& options) {
  Graph folded;  // zero pads folded into the convs that read them (constants shared)
  if (fold_zero_pads(graph, region, &folded)) {
    return lowering::Lowering(folded, region, options).run();
  }
  return lowering::Lowering(graph, region, options).run();
}

}  // namespace tern::compiler::cpu_compile
