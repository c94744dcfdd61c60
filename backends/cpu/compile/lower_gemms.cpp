// Linear layers, batch matmuls, grouped (expert) products, quantized weights, recurrent cells,
// and the activations, clamps and hardsigmoids folded into their epilogues.
#include <algorithm>
#include <cstring>

#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

/// view -> linear -> view with each intermediate read only by the next (ConvNeXt's MLP over
/// a channels-last tensor: [1, H, W, C] -> [HW, C] -> linear -> [HW, N] -> [1, H, W, N]): the
/// linear reads the first view's input and makes the second view's output directly, both
/// plain and of the same row-major bytes, so the views cost no copy and an activation after
/// the second view can fold into the GEMM. Fills folded_views_ and linear_folds_.
void Lowering::match_view_linear_views() {
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

/// linear runs on tern's own GEMM: the weight (and bias) packed once here into the panel
/// layout the kernel streams, so the runtime reads it in place from the program.
void Lowering::lower_linear(const Node& node) {
  const Value& w = g_.values[static_cast<size_t>(node.args[1])];
  const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < xv.sizes.size(); ++d) rows *= xv.sizes[d];
  // Between two folded views (match_view_linear_views): from the first's input to the
  // second's output.
  auto fold = linear_folds_.find(static_cast<int>(&node - g_.nodes.data()));
  const int x = fold == linear_folds_.end() ? node.args[0] : fold->second.first;
  const int y = fold == linear_folds_.end() ? node.outputs[0] : fold->second.second;
  // A dynamic x (supports_dynamic_shapes) needs the GEMM that runs the actual row count.
  const bool dynamic = dynamic_dim_of(node.args[0]) != cpu::kNoValue;
  if (!dynamic && is_tiny_gemm(rows, w.sizes[0], w.sizes[1]) && xnn_fc_is_exact(w.sizes[1])) {
    lower_xnn_fc(node, x, y);
  } else {
    lower_packed_fc(node, w.sizes[0], w.sizes[1], x, y);
  }
}

/// A linear or embedding whose weight is NF4 / FP8 (quant_lowering.h): ops 23 / 24 read
/// the packed codes (re-laid out once here) with the program's scale parameters.
void Lowering::lower_quant(const Node& node, bool embedding) {
  const QuantBlobWeight qw = quant_blob_weight(g_, node.args[embedding ? 0 : 1]);
  uint32_t in = 0;
  if (embedding) {  // int64 indices: always a region input (check_quant_embedding)
    in = typed_input(node.args[1], ValueLayout::Int64Plain, "embedding indices");
  } else {
    in = activation(node.args[0]);
  }
  Recipe rc(RecipeOp::QuantWeight);
  for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) rc.r.params[i] = qw.params[i];
  rc.src[0] = node.args[embedding ? 0 : 1];
  std::vector<uint32_t> ins{in, add_derived({qw.floats}, rc)};  // [F] floats
  if (!embedding && !is_none(g_, node.args[2])) {
    const Value& bias = g_.values[static_cast<size_t>(node.args[2])];
    ins.push_back(constant_as(node.args[2], {static_cast<uint64_t>(bias.sizes[0])}));
  }
  BlobNode& n = add_node(embedding ? NodeOp::QuantizedEmbedding : NodeOp::QuantizedFullyConnected,
                         ins, output(node.outputs[0]));
  for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) n.params[i] = qw.params[i];
}

/// A product this small (e.g. a squeeze-excitation block's 1x1 convs on a 1x1 image) takes
/// less time than a stage boundary: it stays in the surrounding XNNPACK stage. Below 4 rows
/// the snapshot's fully-connected kernel (1x16 tiles, one accumulator chain over K) waits on
/// each FMA's latency: an LSTM's recurrent [1, 128] x [128, 512] took ~15 us there, ~3 on
/// tern's GEMM with the stage boundary (lstm_kws 4.1 -> 1.2 ms), so few rows stay only to
/// 2^15 multiply-adds.
bool Lowering::is_tiny_gemm(int64_t m, int64_t n, int64_t k) {
  return m * n * k <= (m < 4 ? (1 << 15) : (1 << 17));
}

/// linear as XNNPACK's fully-connected node (weight [out, in] and bias as they are).
void Lowering::lower_xnn_fc(const Node& node, int x_vid, int y_vid) {
  const Value& w = g_.values[static_cast<size_t>(node.args[1])];
  const uint32_t x = activation(x_vid);
  const uint32_t f = constant_as(
      node.args[1], {static_cast<uint64_t>(w.sizes[0]), static_cast<uint64_t>(w.sizes[1])});
  std::vector<uint32_t> ins{x, f};
  if (!is_none(g_, node.args[2])) {
    ins.push_back(constant_as(node.args[2], {static_cast<uint64_t>(w.sizes[0])}));
  }
  add_node(NodeOp::FullyConnected, ins, output(y_vid));
}

/// Node args 0, 1, 2 are x, a constant weight of n x k floats (row-major) and an optional
/// bias; the output is x with its last (XNNPACK) dim k replaced by n.
/// x_vid / y_vid: the tern values read and made (-1: the node's x and output).
void Lowering::lower_packed_fc(const Node& node, int64_t n, int64_t k, int x_vid, int y_vid) {
  const int xv = x_vid < 0 ? node.args[0] : x_vid;
  // A pointwise conv reads NHWC pixels (a copy of a plain x); a linear its x as it is.
  const uint32_t x = node.op == "tern::conv2d" ? activation_as(xv, false) : activation(xv);
  Recipe rc(RecipeOp::PackFc);
  rc.r.params[0] = static_cast<uint32_t>(n);
  rc.r.params[1] = static_cast<uint32_t>(k);
  rc.src[0] = node.args[1];
  rc.src[1] = is_none(g_, node.args[2]) ? -1 : node.args[2];
  const uint32_t f =
      add_derived({cpu::packed_fc_floats(static_cast<uint64_t>(n), static_cast<uint64_t>(k))}, rc);
  BlobNode& fc =
      add_node(NodeOp::PackedFullyConnected, {x, f}, output(y_vid < 0 ? node.outputs[0] : y_vid));
  fc.params[0] = static_cast<uint32_t>(n);
  fc.params[1] = static_cast<uint32_t>(k);
}

/// Whether node `last` is tern's GEMM with an activation already folded in: nothing that the
/// graph applies after it (a clamp, a residual, a hardsigmoid's scaling) may fold in then.
bool Lowering::has_activation(const BlobNode& last) {
  return (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected) &&
          (last.params[2] != 0 || last.params[cpu::kFcEpilogueFlags] != 0)) ||
         ((last.op == static_cast<uint32_t>(NodeOp::PackedConv2d) ||
           last.op == static_cast<uint32_t>(NodeOp::PackedWinogradConv2d)) &&
          last.params[cpu::kPackedActivation] != 0) ||
         (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d) &&
          last.params[cpu::kConv3dActivation] != 0);
}

/// A hardswish or GELU whose input is made by an earlier node, tern's GEMM (fc or 1x1
/// conv) or direct conv (op 18; e.g. MobileNetV3's stem) with no activation yet, and read by
/// nothing else becomes that node's epilogue activation, applied to each finished tile or row
/// while it is in cache (after its clamp and residual, which the graph applies first). Returns
/// false when it does not apply.
bool Lowering::fuse_activation_into_gemm(const Node& node, cpu::GemmActivation act) {
  return fuse_activation_into_gemm(node.args[0], node.outputs[0], act, 1);
}

/// The same for an activation of `in` into `out` that reads `in` `reads` times (a pattern of
/// several nodes): nothing else may read `in`.
/// A conv1d's result (nlc_output: a view of its NHWC value, not copied yet) fuses the same
/// way, and `out` is then the same view.
bool Lowering::fuse_activation_into_gemm(int in, int out, cpu::GemmActivation act, int reads,
                                         float alpha) {
  const uint32_t made = made_value(in);
  if (nodes_.empty() || made == cpu::kNoValue || uses_.at(in) != reads ||
      output_arg_.count(in) != 0 || shared(made) || maker_of(made) == nullptr) {
    return false;
  }
  // Not necessarily the last node lowered: nothing but this activation reads its output (a
  // SwiGLU's silu(gate(x)) after up(x) is lowered, like fuse_clamp_into_fc's relu).
  BlobNode& last = *maker_of(made);
  uint32_t slot = 0, alpha_slot = 0;
  if (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
    slot = 2;
    alpha_slot = cpu::kFcActivationAlpha;
  } else if (last.op == static_cast<uint32_t>(NodeOp::PackedConv2d) ||
             last.op == static_cast<uint32_t>(NodeOp::PackedWinogradConv2d)) {
    slot = cpu::kPackedActivation;
    alpha_slot = cpu::kPackedActivationAlpha;
  } else if (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d) &&
             act != cpu::GemmActivation::LeakyRelu) {  // no slot for a slope
    slot = cpu::kConv3dActivation;
  } else {
    return false;
  }
  if (last.output != made || has_activation(last)) return false;
  last.params[slot] = static_cast<uint32_t>(act);
  if (act == cpu::GemmActivation::LeakyRelu) {
    std::memcpy(&last.params[alpha_slot], &alpha, 4);  // the caller checked: 0 <= alpha <= 2
  }
  rename_result(in, out);
  return true;
}

/// GPT-2's tanh GELU written out (tanh_gelu_match.h): the epilogue of the GEMM that makes x
/// when nothing else reads x, else tern's GELU node (op 20, tanh form).
void Lowering::lower_tanh_gelu(const TanhGeluMatch& m) {
  if (fuse_activation_into_gemm(m.x, m.y, cpu::GemmActivation::GeluTanh, m.x_reads)) return;
  const uint32_t x = activation(m.x);
  BlobNode& n = add_node(NodeOp::Gelu, {x}, output(m.y));
  n.params[0] = 1;
}

/// An LSTM cell written out (recurrent_cell_match.h): one LstmCell node (op 37) making [2, R, H],
/// c' and h' View values of its two halves (copied into their own values where they leave
/// the region).
void Lowering::lower_lstm_cell(const LstmCellMatch& m) {
  const uint64_t h = static_cast<uint64_t>(m.hidden);
  uint64_t rows = 0;
  std::vector<uint32_t> in{activation(m.gates)};
  in.push_back(cell_state(m.c, h, &rows));
  if (m.gates2 >= 0) in.push_back(activation(m.gates2));
  const uint32_t out = internal({2, rows, h});
  BlobNode& n = add_node(NodeOp::LstmCell, in, out);
  n.params[0] = static_cast<uint32_t>(h);
  for (const auto& [vid, offset] :
       {std::pair<int, uint64_t>{m.c_next, 0}, std::pair<int, uint64_t>{m.h_next, rows * h}}) {
    const uint32_t id = add_view(out, offset, dims_of(vid));
    if (output_arg_.count(vid) != 0) {
      add_node(NodeOp::Reshape, {id}, output(vid));
    } else {
      ids_.emplace(vid, id);
    }
  }
}

/// A GRU cell written out (recurrent_cell_match.h): one GruCell node (op 40) making h'.
void Lowering::lower_gru_cell(const GruCellMatch& m) {
  const uint64_t h = static_cast<uint64_t>(m.hidden);
  uint64_t rows = 0;
  const uint32_t gi = activation(m.gi), gh = activation(m.gh);
  const uint32_t hp = cell_state(m.h, h, &rows);
  BlobNode& n = add_node(NodeOp::GruCell, {gi, gh, hp}, output(m.h_next));
  n.params[0] = static_cast<uint32_t>(h);
}

/// A recurrent cell's previous state `vid` (hidden size h): its blob value (a constant
/// [rows, h] when it is one: the zero initial state), its rows into *rows.
uint32_t Lowering::cell_state(int vid, uint64_t h, uint64_t* rows) {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  uint64_t numel = 1;
  for (int64_t d : v.sizes) numel *= static_cast<uint64_t>(d);
  *rows = numel / h;
  return v.is_constant ? constant_as(vid, {*rows, h}) : activation(vid);
}

/// The node lowered last that makes blob value `id`, or null.
BlobNode* Lowering::maker_of(uint32_t id) {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if (it->output == id) return &*it;
  }
  return nullptr;
}

/// A relu/hardtanh/clamp whose input is made by one of tern's GEMM nodes (fc or conv) or a
/// fused bottleneck ending in its project (whose kernel clamps the project's output:
/// ShuffleNet's branch ends conv 1x1 -> relu), and read by nothing else, folds into that
/// node's output bounds. The node need not be the last one lowered: nothing since has read
/// its output (StarNet's relu6(f1(x)) · f2(x) clamps f1's after f2 is lowered). Returns false
/// when it does not apply.
bool Lowering::fuse_clamp_into_fc(const Node& node, float lo, float hi) {
  const int in = node.args[0];
  const uint32_t made = made_value(in);
  if (nodes_.empty() || made == cpu::kNoValue || uses_.at(in) != 1 || output_arg_.count(in) != 0 ||
      shared(made) || maker_of(made) == nullptr) {
    return false;
  }
  BlobNode& last = *maker_of(made);
  const bool projecting_bottleneck =
      last.op == static_cast<uint32_t>(NodeOp::PackedBottleneck) &&
      (last.params[cpu::kBottleneckFlags] & cpu::kBottleneckHasProject) != 0;
  if ((last.op != static_cast<uint32_t>(NodeOp::PackedFullyConnected) &&
       last.op != static_cast<uint32_t>(NodeOp::PackedConv2d) &&
       last.op != static_cast<uint32_t>(NodeOp::PackedWinogradConv2d) &&
       last.op != static_cast<uint32_t>(NodeOp::PackedConv3d) && !projecting_bottleneck) ||
      last.output != made || has_activation(last)) {
    return false;
  }
  last.fparams[0] = std::max(last.fparams[0], lo);
  last.fparams[1] = std::min(last.fparams[1], hi);
  rename_result(in, node.outputs[0]);
  return true;
}

/// hardsigmoid(y) = clamp(y / 6 + 1/2, 0, 1). When y is made by the node just lowered, a
/// conv or fully-connected layer (XNNPACK's or tern's, no clamp or residual yet) whose output
/// nothing else reads, its weights and bias are scaled by 1/6 here, 1/2 added to the bias and
/// the clamp fused: one node instead of three more passes (squeeze-excitation blocks end this
/// way). Returns false when it does not apply.
bool Lowering::fuse_hardsigmoid_into_producer(const Node& node) {
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
  const bool packed_op = op == NodeOp::PackedFullyConnected || op == NodeOp::PackedConv2d;
  if (!packed_op && op != NodeOp::Conv2d && op != NodeOp::DepthwiseConv2d &&
      op != NodeOp::FullyConnected) {
    return false;
  }
  if (packed_op && last.num_inputs != 2) return false;  // a residual is not scaled with it
  if (values_[last.inputs[1]].kind == static_cast<uint32_t>(ValueKind::Derived)) {
    // Made at prepare: the recipes fold it in (PackFc / PackConv's flag; Permute, Alias or
    // Affine scaled), and the bias the same way.
    if (!fold_hardsigmoid_into_recipes(last)) return false;
  } else if (op == NodeOp::PackedFullyConnected ||
             (op == NodeOp::PackedConv2d && last.params[cpu::kPackedGroups] <= 1)) {
    const uint64_t n =
        op == NodeOp::PackedFullyConnected ? last.params[0] : last.params[cpu::kPackedOutChannels];
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
    } else if (values_[last.inputs[2]].kind == static_cast<uint32_t>(ValueKind::Derived)) {
      BlobRecipe& r = recipes_[values_[last.inputs[2]].recipe];  // Alias of the bias
      r.op = static_cast<uint32_t>(RecipeOp::Affine);
      r.scale = sixth;
      r.shift = 0.5;
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

/// fuse_hardsigmoid_into_producer's folding for a node whose weight is a Derived value:
/// tern's GEMM/conv set their recipe's kRecipeFoldHardsigmoid (weights, bias and padding / 6,
/// 1/2 added to the bias slots); XNNPACK's conv / depthwise / fc scale their filter's recipe
/// by 1/6 and their bias's by 1/6 plus 1/2 (or gain a bias of 1/2s). False when the recipe
/// cannot take it.
bool Lowering::fold_hardsigmoid_into_recipes(BlobNode& last) {
  const NodeOp op = static_cast<NodeOp>(last.op);
  BlobRecipe& w = recipes_[values_[last.inputs[1]].recipe];
  const double sixth = 1.0 / 6.0;
  if (op == NodeOp::PackedFullyConnected || op == NodeOp::PackedConv2d) {
    if (w.op != static_cast<uint32_t>(RecipeOp::PackFc) &&
        w.op != static_cast<uint32_t>(RecipeOp::PackConv)) {
      return false;
    }
    w.flags |= cpu::kRecipeFoldHardsigmoid;
    return true;
  }
  if (op != NodeOp::Conv2d && op != NodeOp::DepthwiseConv2d && op != NodeOp::FullyConnected) {
    return false;
  }
  if (w.op == static_cast<uint32_t>(RecipeOp::Alias)) {
    w.op = static_cast<uint32_t>(RecipeOp::Affine);
  }
  w.scale *= sixth;
  const BlobValue& f = values_[last.inputs[1]];
  const uint64_t n = op == NodeOp::DepthwiseConv2d ? f.dims[3] : f.dims[0];
  if (last.num_inputs < 3) {
    last.inputs[2] = add_constant({n}, std::vector<float>(n, 0.5f));
    last.num_inputs = 3;
  } else if (values_[last.inputs[2]].kind == static_cast<uint32_t>(ValueKind::Derived)) {
    BlobRecipe& b = recipes_[values_[last.inputs[2]].recipe];  // an Alias of the bias
    b.op = static_cast<uint32_t>(RecipeOp::Affine);
    b.scale = sixth;
    b.shift = 0.5;
  } else {
    float* b = constant_data(last.inputs[2]);
    for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<float>(b[i] * sixth + 0.5);
  }
  return true;
}

/// grouped_mm (grouped_matmul.h): tern's GroupedMatmul (op 46) on x (plain), the experts'
/// matrices packed at prepare (recipe PackGroupedKn) and the ends bound as an Int32Plain /
/// Int64Plain region input.
void Lowering::lower_grouped_matmul(const Node& node) {
  const GroupedMatmulAttrs a = grouped_matmul_attrs(g_, node);
  const uint32_t x = activation_as(a.x, /*plain=*/true);
  Recipe rc(RecipeOp::PackGroupedKn);
  rc.r.params[0] = static_cast<uint32_t>(a.groups);
  rc.r.params[1] = static_cast<uint32_t>(a.k);
  rc.r.params[2] = static_cast<uint32_t>(a.n);
  rc.src[0] = a.w;
  const uint64_t floats =
      static_cast<uint64_t>(a.groups) *
      cpu::packed_fc_floats(static_cast<uint64_t>(a.n), static_cast<uint64_t>(a.k));
  const uint32_t w = add_derived({floats}, rc);
  const uint32_t ends =
      typed_input(a.ends, a.int32_ends ? ValueLayout::Int32Plain : ValueLayout::Int64Plain,
                  "a grouped product's ends");
  BlobNode& n = add_node(NodeOp::GroupedMatmul, {x, w, ends}, output(node.outputs[0]));
  n.params[0] = static_cast<uint32_t>(a.groups);
  n.params[1] = static_cast<uint32_t>(a.k);
  n.params[2] = static_cast<uint32_t>(a.n);
}

/// grouped_linear with NF4 / FP8 experts (grouped_matmul.h): tern's QuantizedGroupedMatmul
/// (op 47) on x (plain), the [E N, K] weight re-laid out at prepare as op 23's (a QuantWeight
/// recipe) and the ends as op 46's.
void Lowering::lower_quant_grouped(const Node& node) {
  const GroupedMatmulAttrs a = quant_grouped_attrs(g_, node);
  const QuantBlobWeight qw = quant_blob_weight(g_, a.w);
  const uint32_t x = activation_as(a.x, /*plain=*/true);
  Recipe rc(RecipeOp::QuantWeight);
  for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) rc.r.params[i] = qw.params[i];
  rc.src[0] = a.w;
  const uint32_t w = add_derived({qw.floats}, rc);
  const uint32_t ends =
      typed_input(a.ends, a.int32_ends ? ValueLayout::Int32Plain : ValueLayout::Int64Plain,
                  "a grouped product's ends");
  BlobNode& n = add_node(NodeOp::QuantizedGroupedMatmul, {x, w, ends}, output(node.outputs[0]));
  for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) n.params[i] = qw.params[i];
  n.params[cpu::kQuantGroups] = static_cast<uint32_t>(a.groups);
}

/// bmm / matmul of two activations, or of an activation and a constant: tern's BatchMatMul
/// (op 26). A constant operand is read in place, row-major as the kernel reads it.
void Lowering::lower_batch_matmul(const Node& node) {
  add_node(NodeOp::BatchMatMul,
           {activation_or_constant(node.args[0]), activation_or_constant(node.args[1])},
           output(node.outputs[0]));
}

/// mul(g, m) (either order) where g is made by the node just lowered, tern's fully-connected
/// GEMM (a linear or a 1x1 conv) with no multiplier yet, and read by nothing else, and m an
/// activation of the output's shape already made (or a region input) in the output's order: m
/// becomes the GEMM's multiplier, applied to each finished tile after its clamp and
/// activation (StarNet's relu6(f1(x)) · f2(x), a SwiGLU MLP's silu(gate(x)) · up(x): no pass
/// of its own over the product). Returns false when it does not apply.
bool Lowering::fuse_multiplier_into_gemm(const Node& node) {
  if (node.op != "tern::mul" || nodes_.empty()) return false;
  BlobNode& last = nodes_.back();
  if (last.op != static_cast<uint32_t>(NodeOp::PackedFullyConnected) ||
      last.params[cpu::kFcEpilogueFlags] != 0 || last.num_inputs > 3) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    const int gemm_out = node.args[static_cast<size_t>(i)];
    const int other = node.args[static_cast<size_t>(1 - i)];
    if (!is_epilogue_operand(last, gemm_out, other, node.outputs[0])) continue;
    const uint32_t m = activation(other);
    if (m == last.output) continue;
    last.inputs[last.num_inputs++] = m;
    last.params[cpu::kFcEpilogueFlags] = cpu::kFcMultiplier;
    retarget_output(gemm_out, node.outputs[0]);
    return true;
  }
  return false;
}

/// A batch norm after an activation (ConvMixer's conv → ReLU → batch norm: it does not fold
/// into the weights) whose input, channels last (2-D [rows, C] or NHWC), is made by tern's GEMM
/// (op 17, no multiplier or affine yet) or by a fused bottleneck without a project (op 21, no
/// residual or affine yet) and read by nothing else: its scale and shift become that node's
/// post-activation affine, a constant [2, C] (blob version 28). Returns false when it does not
/// apply.
bool Lowering::fuse_batch_norm_into_epilogue(const Node& node, const BatchNormAffine& a) {
  const int in = node.args[0];
  const uint32_t made = made_value(in);
  if (nodes_.empty() || made == cpu::kNoValue || ids_.count(in) == 0 || uses_.at(in) != 1 ||
      output_arg_.count(in) != 0 || shared(made) || maker_of(made) == nullptr) {
    return false;
  }
  const size_t rank = g_.values[static_cast<size_t>(in)].sizes.size();
  if (rank != 2 && !(rank == 4 && is_nhwc(in))) return false;
  BlobNode& last = *maker_of(made);  // add_constant below adds a value, no node
  const uint64_t c = a.scale.size();
  if (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
    if (last.params[cpu::kFcEpilogueFlags] != 0 || last.num_inputs > 3 || last.params[0] != c) {
      return false;
    }
  } else if (last.op == static_cast<uint32_t>(NodeOp::PackedBottleneck)) {
    const uint32_t flags = last.params[cpu::kBottleneckFlags];
    if ((flags & (cpu::kBottleneckHasProject | cpu::kBottleneckHasPostAffine)) != 0 ||
        last.num_inputs != 2 || last.params[cpu::kBottleneckOutChannels] != c) {
      return false;
    }
  } else {
    return false;
  }
  std::vector<float> affine(a.scale);
  affine.insert(affine.end(), a.shift.begin(), a.shift.end());
  last.inputs[last.num_inputs++] = add_constant({2, c}, affine);
  if (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
    last.params[cpu::kFcEpilogueFlags] = cpu::kFcPostAffine;
  } else {
    last.params[cpu::kBottleneckFlags] |= cpu::kBottleneckHasPostAffine;
  }
  rename_result(in, node.outputs[0]);
  return true;
}

/// A linear map along an inner dim (channel_mix_match.h): tern's ChannelMix node (op 49) on
/// x's row-major bytes, the matrix and the bias as they are.
void Lowering::lower_channel_mix(const ChannelMixMatch& m) {
  const std::vector<int64_t>& w = g_.values[static_cast<size_t>(m.weight)].sizes;
  const uint64_t j = static_cast<uint64_t>(w[0]), k = static_cast<uint64_t>(w[1]);
  std::vector<uint32_t> ins = {activation(m.x), constant_as(m.weight, {j, k})};
  if (m.bias >= 0) ins.push_back(constant_as(m.bias, {j}));
  BlobNode& n = add_node(NodeOp::ChannelMix, ins, output(m.y));
  n.params[0] = static_cast<uint32_t>(m.dim);
  n.params[1] = static_cast<uint32_t>(j);
}

/// A softmax over the channels of x [N, K, H, W] read only by a 1x1 conv (softmax_mix_match.h):
/// one ChannelMix node with its softmax flag on x's bytes seen as [N·H, K, W], a View of the
/// value x is a strided view of — when x's dims lie so there (bins K·W apart, W contiguous)
/// in a value made by tern's own kernels, and the conv's output [N, J, H, W] has those bytes
/// in its layout (J = 1 and not an NHWC region output, or a row-major one with N·H = 1).
/// Otherwise the softmax and the conv lower as they are.
void Lowering::lower_softmax_mix(const SoftmaxMixMatch& m) {
  const Node& sm = g_.nodes[static_cast<size_t>(m.softmax)];
  const Node& cv = g_.nodes[static_cast<size_t>(m.conv)];
  const int x = sm.args[0], y = cv.outputs[0];
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(x)].sizes;
  const int64_t n = s[0], k = s[1], h = s[2], w = s[3];
  const int64_t j = g_.values[static_cast<size_t>(m.weight)].sizes[0];
  const bool y_rows = j == 1 ? output_arg_.count(y) == 0 || !is_nhwc(y) : !is_nhwc(y) && n * h == 1;
  uint32_t base = cpu::kNoValue;
  int64_t offset = 0;
  if (y_rows && dynamic_dim_of(x) == cpu::kNoValue && dynamic_dim_of(y) == cpu::kNoValue) {
    const StridedView v = view_of(x);
    const std::vector<int64_t>& st = v.strides;
    const bool fits = (w == 1 || st[3] == 1) && (k == 1 || st[1] == w) &&
                      (h == 1 || st[2] == k * w) && (n == 1 || st[0] == h * k * w) &&
                      v.offset >= 0 &&
                      static_cast<uint64_t>(v.offset + n * h * k * w) <= v.base_numel;
    const BlobValue& b = values_[v.base];
    if (fits && b.kind == static_cast<uint32_t>(ValueKind::View)) {
      base = b.view_base;
      offset = static_cast<int64_t>(b.data_offset) + v.offset;
    } else if (fits && b.kind == static_cast<uint32_t>(ValueKind::Internal) &&
               b.dynamic_mask == 0 && made_by_own_kernel(v.base)) {
      base = v.base;
      offset = v.offset;
    }
  }
  if (base == cpu::kNoValue) {
    lower_node(sm);
    lower_node(cv);
    return;
  }
  const std::vector<uint64_t> rows = {static_cast<uint64_t>(n * h), static_cast<uint64_t>(k),
                                      static_cast<uint64_t>(w)};
  std::vector<uint32_t> ins = {add_view(base, static_cast<uint64_t>(offset), rows),
                               constant_as(m.weight, {static_cast<uint64_t>(j), static_cast<uint64_t>(k)})};
  if (m.bias >= 0) ins.push_back(constant_as(m.bias, {static_cast<uint64_t>(j)}));
  BlobNode& node = add_node(NodeOp::ChannelMix, ins, output(y));
  node.params[0] = 1;
  node.params[1] = static_cast<uint32_t>(j);
  node.params[2] = 1;
}

}  // namespace tern::compiler::cpu_compile::lowering
