#include "backends/cpu/compile/region_lowering.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/cpu/compile/attention_attrs.h"
#include "backends/cpu/compile/attention_match.h"
#include "backends/cpu/compile/bottleneck_match.h"
#include "backends/cpu/compile/concat_shuffle_match.h"
#include "backends/cpu/compile/deconv_attrs.h"
#include "backends/cpu/compile/gather_map_plan.h"
#include "backends/cpu/compile/grid_sample_attrs.h"
#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/layout_plan.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/quant_lowering.h"
#include "backends/cpu/compile/strided_view.h"
#include "backends/cpu/compile/tanh_gelu_match.h"
#include "backends/cpu/compile/affine_index.h"
#include "backends/cpu/compile/recurrent_cell_match.h"
#include "backends/cpu/compile/grouped_matmul.h"
#include "backends/cpu/compile/index_rows.h"
#include "backends/cpu/compile/where_select.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "backends/cpu/weights/weight_recipe.h"

namespace tern::compiler::cpu_compile {
namespace {

using cpu::BlobHeader;
using cpu::BlobNode;
using cpu::BlobRecipe;
using cpu::BlobValue;
using cpu::NodeOp;
using cpu::RecipeOp;
using cpu::ValueKind;
using cpu::ValueLayout;

constexpr float kInf = std::numeric_limits<float>::infinity();

/// A recipe being written: its record with the tern value ids of its sources (-1: none);
/// add_derived() turns them into Source values.
struct Recipe {
  BlobRecipe r{};
  int src[cpu::kRecipeSources];
  explicit Recipe(RecipeOp op) {
    r.op = static_cast<uint32_t>(op);
    r.scale = 1.0;
    r.shift = 0.0;
    for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
      r.sources[i] = cpu::kNoValue;
      src[i] = -1;
    }
  }
};

/// A permutation of a 4-D source of tern sizes `dims` (params[0..3]) by `perm` (params[4..7]).
Recipe permute(const std::vector<int64_t>& dims, std::initializer_list<uint32_t> perm) {
  Recipe rc(RecipeOp::Permute);
  for (uint32_t i = 0; i < 4; ++i) rc.r.params[i] = static_cast<uint32_t>(dims[i]);
  uint32_t i = 4;
  for (uint32_t p : perm) rc.r.params[i++] = p;
  return rc;
}

class Lowering {
 public:
  Lowering(const Graph& g, const DelegateRegion& r) : g_(g), r_(r), plain_(plain_4d_values(g)) {
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
    for (const ConcatShuffleMatch& m : match_concat_shuffles(
             g_, r_, cpu::kMaxConcatInputs, [this](int vid) { return is_nhwc(vid); })) {
      for (int n : m.folded) folded_views_.insert(n);
      shuffle_folds_[m.cat] = m;
    }
    for (const TanhGeluMatch& m : match_tanh_gelus(g_, r_)) {
      for (size_t i = 0; i + 1 < m.nodes.size(); ++i) gelu_pieces_.insert(m.nodes[i]);
      tanh_gelus_[m.nodes.back()] = m;
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
    for (int n : r_.nodes) {  // comparisons: fused into the selects that read them
      const Node& node = g_.nodes[static_cast<size_t>(n)];
      if (select_compare_mode(node.op) != 0) fused_compares_.emplace(node.outputs.at(0), n);
    }
    for (int n : r_.nodes) {
      if (folded_views_.count(n) != 0) continue;  // a view folded into its linear or concat
      if (select_compare_mode(g_.nodes[static_cast<size_t>(n)].op) != 0) continue;
      if (gelu_pieces_.count(n) != 0) continue;   // lowered with the pattern's last node
      if (auto t = tanh_gelus_.find(n); t != tanh_gelus_.end()) {
        lower_tanh_gelu(t->second);
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
    return serialize();
  }

 private:
  uint32_t add_value(ValueKind kind, ValueLayout layout, const std::vector<uint64_t>& dims,
                     uint32_t arg, uint32_t dynamic_dim = cpu::kNoValue) {
    BlobValue v{};
    v.recipe = cpu::kNoValue;
    v.dynamic_mask = dynamic_dim == cpu::kNoValue ? 0u : 1u << dynamic_dim;
    v.kind = static_cast<uint32_t>(kind);
    v.layout = static_cast<uint32_t>(layout);
    v.rank = static_cast<uint32_t>(dims.size());
    v.arg = arg;
    for (size_t i = 0; i < dims.size(); ++i) v.dims[i] = dims[i];
    values_.push_back(v);
    return static_cast<uint32_t>(values_.size() - 1);
  }

  uint32_t add_constant(const std::vector<uint64_t>& dims, const std::vector<float>& data) {
    return add_constant_words(dims, data.data(), data.size());
  }

  /// A Constant of `count` 4-byte words (f32, or GatherMap's int32 offsets) copied as they are.
  uint32_t add_constant_words(const std::vector<uint64_t>& dims, const void* words,
                              size_t count) {
    const uint32_t id = add_value(ValueKind::Constant, ValueLayout::Plain, dims, cpu::kNoValue);
    size_t offset =
        (data_.size() + cpu::kDataAlignment - 1) / cpu::kDataAlignment * cpu::kDataAlignment;
    data_.resize(offset + count * 4, 0);
    if (count != 0) std::memcpy(data_.data() + offset, words, count * 4);
    values_[id].data_offset = offset;
    values_[id].data_bytes = count * 4;
    return id;
  }

  /// The Source value of tern constant `vid` (a region input), made once: its tern sizes,
  /// element type and exact bytes, flagged exclusive when no node outside the region reads it.
  uint32_t source(int vid) {
    auto it = sources_.find(vid);
    if (it != sources_.end()) return it->second;
    const Value& v = g_.values[static_cast<size_t>(vid)];
    const uint32_t id = add_value(ValueKind::Source, ValueLayout::Plain,
                                  std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()),
                                  input_arg_.at(vid));
    cpu::SourceType type = cpu::SourceType::F32;
    if (v.dtype == DType::NF4) type = cpu::SourceType::Nf4;
    if (v.dtype == DType::FP8E4M3) type = cpu::SourceType::Fp8E4M3;
    if (v.dtype == DType::FP8E5M2) type = cpu::SourceType::Fp8E5M2;
    const bool exclusive = region_uses_[vid] == uses_.at(vid) && listed_.count(vid) == 0 &&
                           std::find(g_.outputs.begin(), g_.outputs.end(), vid) == g_.outputs.end();
    values_[id].source = static_cast<uint32_t>(type) | (exclusive ? cpu::kSourceExclusive : 0u);
    values_[id].data_bytes = v.data.size();
    sources_.emplace(vid, id);
    return id;
  }

  /// Whether tern value `vid` can be a Source: a constant region input of rank 1..6 whose
  /// bytes are exactly its dtype's (f32, nf4, fp8).
  bool sourceable(int vid) const {
    if (vid < 0 || input_arg_.count(vid) == 0) return false;
    const Value& v = g_.values[static_cast<size_t>(vid)];
    if (!v.is_tensor() || !v.is_constant || v.sizes.empty() || v.sizes.size() > cpu::kMaxDims) {
      return false;
    }
    uint64_t n = 1;
    for (int64_t d : v.sizes) n *= static_cast<uint64_t>(d);
    switch (v.dtype) {
      case DType::F32:
        return v.data.size() == 4 * n;
      case DType::NF4:
        return v.data.size() == (n + 1) / 2;
      case DType::FP8E4M3:
      case DType::FP8E5M2:
        return v.data.size() == n;
      default:
        return false;
    }
  }

  /// The bytes of tern value `vid` as a recipe reads them (the graph's copy), with a quantized
  /// weight's scheme tensors.
  cpu::RecipeSource graph_source(int vid) const {
    cpu::RecipeSource s;
    const Value& v = g_.values[static_cast<size_t>(vid)];
    s.data = v.data.data();
    auto tensor = [&](int id) -> const void* {
      return id >= 0 ? g_.values[static_cast<size_t>(id)].data.data() : nullptr;
    };
    s.absmax = static_cast<const float*>(tensor(v.quant.absmax));
    s.dq_codes = static_cast<const uint8_t*>(tensor(v.quant.dq_codes));
    s.dq_absmax2 = static_cast<const float*>(tensor(v.quant.dq_absmax2));
    s.dq_table = static_cast<const float*>(tensor(v.quant.dq_table));
    s.dq_offset = v.quant.dq_offset;
    s.scale = static_cast<const float*>(tensor(v.quant.scale));
    return s;
  }

  /// A constant of XNNPACK dims `dims` made by `rc` from the program's constants: a Derived
  /// value (its bytes made at prepare from the delegate call's arguments), or, when it is at
  /// most kEmbedMaxBytes or a source cannot be an argument, an embedded Constant of the bytes
  /// the recipe makes here (the same code the runtime runs).
  uint32_t add_derived(const std::vector<uint64_t>& dims, Recipe rc) {
    uint64_t numel = 1;
    for (uint64_t d : dims) numel *= d;
    cpu::RecipeShape shape;
    const char* why = "";
    if (!cpu::recipe_shape(rc.r, numel, &shape, &why) || shape.out_floats != numel) {
      throw std::invalid_argument(std::string("cpu backend: internal error: recipe ") +
                                  cpu::recipe_op_name(rc.r.op) + ": " + why);
    }
    bool embed = numel * 4 <= cpu::kEmbedMaxBytes;
    for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
      if (rc.src[i] >= 0 && !sourceable(rc.src[i])) embed = true;
    }
    if (embed) {
      cpu::RecipeSource srcs[cpu::kRecipeSources];
      for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
        if (rc.src[i] >= 0) srcs[i] = graph_source(rc.src[i]);
      }
      std::vector<float> data(numel);
      if (rc.r.op == static_cast<uint32_t>(RecipeOp::Alias)) {
        std::memcpy(data.data(), srcs[0].data, numel * 4);
      } else {
        cpu::run_recipe(rc.r, shape, srcs, data.data());
      }
      return add_constant(dims, data);
    }
    for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
      if (rc.src[i] >= 0) rc.r.sources[i] = source(rc.src[i]);
    }
    const uint32_t id = add_value(ValueKind::Derived, ValueLayout::Plain, dims, cpu::kNoValue);
    values_[id].data_bytes = numel * 4;
    values_[id].recipe = static_cast<uint32_t>(recipes_.size());
    recipes_.push_back(rc.r);
    return id;
  }

  /// A constant holding tern constant `vid` as it is (in place at run time: an Alias), seen with
  /// XNNPACK dims `dims`, scaled as Affine when scale / shift say so.
  uint32_t constant_as(int vid, const std::vector<uint64_t>& dims, double scale = 1.0,
                       double shift = 0.0) {
    Recipe rc(scale == 1.0 && shift == 0.0 ? RecipeOp::Alias : RecipeOp::Affine);
    rc.r.scale = scale;
    rc.r.shift = shift;
    rc.src[0] = vid;
    return add_derived(dims, rc);
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
  /// The dim of tern value `vid` whose size varies per execution (kNoValue: static). Only the
  /// linears supports_dynamic_shapes takes touch one: a plain value, one dynamic dim before the
  /// last (blob_dynamic_checks.h).
  uint32_t dynamic_dim_of(int vid) const {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    uint32_t found = cpu::kNoValue;
    for (size_t d = 0; d < v.dim_symbols.size(); ++d) {
      if (v.dim_symbols[d] < 0) continue;
      if (found != cpu::kNoValue || d + 1 == v.sizes.size() || v.sizes.size() == 4) {
        throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                    " varies in more than one dim, in its last or is 4-D");
      }
      found = static_cast<uint32_t>(d);
    }
    return found;
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
    if (lazy_.count(vid) != 0) return materialize(vid);
    auto in = input_arg_.find(vid);
    if (in == input_arg_.end()) {
      throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                  " is read before the region makes it and is no region input");
    }
    const uint32_t id = add_value(ValueKind::ExternalInput, layout_of_value(vid), dims_of(vid),
                                  in->second, dynamic_dim_of(vid));
    ids_.emplace(vid, id);
    return id;
  }

  /// Region input `vid` of another element type than f32 (int64 embedding indices, a bool
  /// condition): an external input of `layout` and its tern dims, bound once.
  uint32_t typed_input(int vid, ValueLayout layout, const char* what) {
    auto it = ids_.find(vid);
    if (it != ids_.end()) return it->second;
    auto arg = input_arg_.find(vid);
    if (arg == input_arg_.end()) {
      throw std::invalid_argument(std::string("cpu backend: ") + what + ": no region input");
    }
    const Value& v = g_.values[static_cast<size_t>(vid)];
    const uint32_t id = add_value(ValueKind::ExternalInput, layout,
                                  std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()),
                                  arg->second);
    ids_.emplace(vid, id);
    return id;
  }

  /// Activation `vid` with the layout `plain` asks for: its own blob value when it has that
  /// layout (or is not 4-D), else a copy of it in the other order (StridedCopy NHWC <-> plain;
  /// made once per value and read by every node that wants it so). MobileViTV2's attention
  /// multiplies NHWC conv outputs by a softmax over the last dim (plain) and feeds the product
  /// to a conv.
  uint32_t activation_as(int vid, bool plain) {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
    if (s.size() != 4 || is_plain_4d(vid) == plain) return activation(vid);
    auto it = relaid_.find(vid);
    if (it != relaid_.end()) return it->second;
    const std::vector<int64_t> order = plain ? std::vector<int64_t>{s[0], s[1], s[2], s[3]}
                                             : std::vector<int64_t>{s[0], s[2], s[3], s[1]};
    const uint32_t id = internal(std::vector<uint64_t>(order.begin(), order.end()));
    emit_copy(view_of(vid), !plain, id);
    relaid_.emplace(vid, id);
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
                                  dims_of(vid), external ? out->second : cpu::kNoValue,
                                  dynamic_dim_of(vid));
    ids_.emplace(vid, id);
    return id;
  }

  /// A new internal value (an intermediate of a node lowered to several XNNPACK nodes).
  uint32_t internal(const std::vector<uint64_t>& dims) {
    return add_value(ValueKind::Internal, ValueLayout::Plain, dims, cpu::kNoValue);
  }

  /// A new View value of `dims`: internal value `base`'s elements from `offset` on, in place.
  uint32_t add_view(uint32_t base, uint64_t offset, const std::vector<uint64_t>& dims) {
    const uint32_t id = add_value(ValueKind::View, ValueLayout::Plain, dims, cpu::kNoValue);
    values_[id].view_base = base;
    values_[id].data_offset = offset;
    viewed_.insert(base);
    return id;
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
    if (!v.is_constant) return out_rank == 4 ? activation_as(vid, out_plain) : activation(vid);
    std::vector<int64_t> dims(out_rank - v.sizes.size(), 1);
    dims.insert(dims.end(), v.sizes.begin(), v.sizes.end());
    if (out_plain || out_rank != 4 || !layout_sensitive(dims)) {  // the same bytes
      const std::vector<uint64_t> d =
          out_plain ? std::vector<uint64_t>(dims.begin(), dims.end()) : xnn_dims(dims);
      return constant_as(vid, d, scale);
    }
    Recipe rc = permute(dims, {0, 2, 3, 1});  // NCHW -> NHWC
    rc.r.scale = scale;
    rc.src[0] = vid;
    return add_derived(xnn_dims(dims), rc);
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

  /// A convolution's operands as the emitters read them: blob values in and out (NHWC
  /// [N, H, W, C]), the tern weight and bias (-1: none) and the weight's OIHW sizes (a conv1d's
  /// [O, C, K] as [O, C, 1, K]: the same bytes) and the output's NCHW sizes.
  struct ConvCall {
    uint32_t x = 0;
    std::function<uint32_t()> y;  ///< makes the output value (after the weights' values)
    int weight = -1;
    int bias = -1;
    std::vector<int64_t> w;
    std::vector<int64_t> y_sizes;
    ConvAttrs a{};
  };

  void lower_conv(const Node& node) {
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
  void lower_conv1d(const Node& node) {
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
  uint32_t nlc_input(int vid) {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
    StridedView v;
    (void)reshaped(view_of(vid), {s[0], s[1], 1, s[2]}, &v);  // a dim of 1: always a view
    return channels_last_copy(v);
  }

  /// The blob value of 5-D x [N, C, D, H, W] in NDHWC order, [N, D, H, W, C]: x's own value
  /// when its view is already that (the result of a conv3d), else a StridedCopy.
  uint32_t ndhwc_input(int vid) { return channels_last_copy(view_of(vid)); }

  /// View `v` (tern dims [N, C, ...spatial], rank 4 or 5) in channels-last order: its base when
  /// the base holds exactly that, else a new internal value written by one copy.
  uint32_t channels_last_copy(const StridedView& v) {
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
  uint32_t channels_last_base(const StridedView& v, const std::vector<uint64_t>& dims) const {
    const CopyPlan p = copy_plan(v, true);
    const BlobValue& base = values_[v.base];
    return p.identity && base.rank == dims.size() &&
                   std::equal(dims.begin(), dims.end(), base.dims)
               ? v.base
               : cpu::kNoValue;
  }

  /// A new blob value [N, 1, L, C] for the 3-D result `vid` [N, C, L]: `vid` becomes its view
  /// (copied where a reader needs row-major bytes; a region output at the end).
  uint32_t nlc_output(int vid) {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
    const uint32_t id = internal({static_cast<uint64_t>(s[0]), 1, static_cast<uint64_t>(s[2]),
                                  static_cast<uint64_t>(s[1])});
    StridedView v;
    (void)reshaped(whole_value(id, {s[0], s[1], 1, s[2]}, true), s, &v);
    lazy_[vid] = v;
    channels_last_results_.insert(vid);
    return id;
  }

  /// A new blob value [N, D, H, W, C] for the 5-D result `vid` [N, C, D, H, W]: `vid` becomes
  /// its view (copied where a reader needs row-major bytes; a region output at the end).
  uint32_t ndhwc_output(int vid) {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
    const uint32_t id =
        internal({static_cast<uint64_t>(s[0]), static_cast<uint64_t>(s[2]),
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
  void lower_conv3d(const Node& node) {
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
  void lower_deconv(const Node& node) {
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
  void emit_conv(const ConvCall& c) {
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
        a.depthwise ? std::vector<uint64_t>{1, static_cast<uint64_t>(kh),
                                            static_cast<uint64_t>(kw), static_cast<uint64_t>(o)}
                    : std::vector<uint64_t>{static_cast<uint64_t>(o), static_cast<uint64_t>(kh),
                                            static_cast<uint64_t>(kw), static_cast<uint64_t>(cg)};
    const uint32_t f = add_derived(fdims, rc);
    uint32_t b = cpu::kNoValue;
    if (c.bias >= 0) b = constant_as(c.bias, {static_cast<uint64_t>(o)});
    BlobNode& n = add_node(
        a.depthwise ? NodeOp::DepthwiseConv2d : NodeOp::Conv2d,
        b == cpu::kNoValue ? std::vector<uint32_t>{x, f} : std::vector<uint32_t>{x, f, b},
        c.y());
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
  void read_through_view(uint32_t id, StridedView* v) const {
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
  uint32_t channels_repeated(uint32_t x, int64_t m) {
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
  void lower_quant(const Node& node, bool embedding) {
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
  static bool is_tiny_gemm(int64_t m, int64_t n, int64_t k) {
    return m * n * k <= (m < 4 ? (1 << 15) : (1 << 17));
  }

  /// Whether XNNPACK's fully-connected node computes a product of depth k correctly. The
  /// Debian snapshot (2022-02) picks K-by-4 "s4" GEMM kernels on some x86 hosts (AMD EPYC
  /// here) and, run on a pool of two or more threads, returns wrong columns past the first
  /// 16 when k is not a multiple of 4 (max error ~1 on unit inputs; its convolutions are
  /// unaffected). Such products run on tern's own GEMM instead.
  static bool xnn_fc_is_exact(int64_t k) { return k % 4 == 0; }

  /// linear as XNNPACK's fully-connected node (weight [out, in] and bias as they are).
  void lower_xnn_fc(const Node& node, int x_vid, int y_vid) {
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
  void lower_packed_fc(const Node& node, int64_t n, int64_t k, int x_vid = -1, int y_vid = -1) {
    const int xv = x_vid < 0 ? node.args[0] : x_vid;
    // A pointwise conv reads NHWC pixels (a copy of a plain x); a linear its x as it is.
    const uint32_t x = node.op == "tern::conv2d" ? activation_as(xv, false) : activation(xv);
    Recipe rc(RecipeOp::PackFc);
    rc.r.params[0] = static_cast<uint32_t>(n);
    rc.r.params[1] = static_cast<uint32_t>(k);
    rc.src[0] = node.args[1];
    rc.src[1] = is_none(g_, node.args[2]) ? -1 : node.args[2];
    const uint32_t f = add_derived(
        {cpu::packed_fc_floats(static_cast<uint64_t>(n), static_cast<uint64_t>(k))}, rc);
    BlobNode& fc =
        add_node(NodeOp::PackedFullyConnected, {x, f}, output(y_vid < 0 ? node.outputs[0] : y_vid));
    fc.params[0] = static_cast<uint32_t>(n);
    fc.params[1] = static_cast<uint32_t>(k);
  }


  /// An inverted bottleneck chain (bottleneck_match.h) as one PackedBottleneck node.
  void lower_bottleneck(const BottleneckMatch& m) {
    const Node& dw = g_.nodes[static_cast<size_t>(m.depthwise)];
    const ConvAttrs a = conv_attrs(g_, dw);
    const std::vector<int64_t>& wd = g_.values[static_cast<size_t>(dw.args[1])].sizes;
    const int64_t e = wd[0];
    const int64_t o = g_.values[static_cast<size_t>(m.output)].sizes[1];
    // A depth multiplier M > 1: the kernel reads x with each channel repeated M times.
    const int64_t c = m.multiplier > 1 ? e : g_.values[static_cast<size_t>(m.input)].sizes[1];
    const uint32_t x = m.multiplier > 1 ? channels_repeated(activation_as(m.input, false),
                                                            m.multiplier)
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
    if (m.residual >= 0) ins.push_back(activation(m.residual));
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

  /// Pads, window, strides and dilations of a conv or transposed conv (ConvAttrs, DeconvAttrs)
  /// at the ConvParam indices.
  template <typename Window>
  static void set_window_params(BlobNode& n, const Window& a, int64_t kh, int64_t kw) {
    n.params[cpu::kPadTop] = n.params[cpu::kPadBottom] = static_cast<uint32_t>(a.pad[0]);
    n.params[cpu::kPadLeft] = n.params[cpu::kPadRight] = static_cast<uint32_t>(a.pad[1]);
    n.params[cpu::kKernelH] = static_cast<uint32_t>(kh);
    n.params[cpu::kKernelW] = static_cast<uint32_t>(kw);
    n.params[cpu::kStrideH] = static_cast<uint32_t>(a.stride[0]);
    n.params[cpu::kStrideW] = static_cast<uint32_t>(a.stride[1]);
    n.params[cpu::kDilationH] = static_cast<uint32_t>(a.dilation[0]);
    n.params[cpu::kDilationW] = static_cast<uint32_t>(a.dilation[1]);
  }

  /// A dense or grouped conv (not depthwise) runs on tern's own NHWC convolution: each group's
  /// OIHW weight becomes its [O/G, KH*KW*C/G] matrix in (kh, kw, c) order, packed with its bias
  /// like a linear. Grouped convs with group widths of 4 to 16 (ResNeXt, RegNet) ran on
  /// XNNPACK's at 50-65 GFLOP/s; on tern's they gather C/G floats per tap into the GEMM's tiles.
  void lower_packed_conv(const ConvCall& cc) {
    const ConvAttrs& a = cc.a;
    const int64_t o = cc.w[0], c = cc.w[1], kh = cc.w[2], kw = cc.w[3];
    const int64_t groups = a.groups;  // c is a group's input channels
    if (wants_winograd(a, cc.w, cc.y_sizes)) {
      lower_winograd_conv(cc, o, c);
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

  /// The conv on tern's Winograd kernel: the OIHW weight transformed and packed at prepare.
  void lower_winograd_conv(const ConvCall& cc, int64_t o, int64_t c) {
    Recipe rc(RecipeOp::PackWinograd);
    rc.r.params[0] = static_cast<uint32_t>(o);
    rc.r.params[1] = static_cast<uint32_t>(c);
    rc.src[0] = cc.weight;
    rc.src[1] = cc.bias;
    const uint32_t f = add_derived(
        {cpu::winograd_packed_floats(static_cast<uint64_t>(o), static_cast<uint64_t>(c))}, rc);
    BlobNode& n = add_node(NodeOp::PackedWinogradConv2d, {cc.x, f}, cc.y());
    set_window_params(n, cc.a, 3, 3);
    n.params[cpu::kPackedInChannels] = static_cast<uint32_t>(c);
    n.params[cpu::kPackedOutChannels] = static_cast<uint32_t>(o);
  }

  /// Whether node `last` is tern's GEMM with an activation already folded in: nothing that the
  /// graph applies after it (a clamp, a residual, a hardsigmoid's scaling) may fold in then.
  static bool has_activation(const BlobNode& last) {
    return (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected) && last.params[2] != 0) ||
           (last.op == static_cast<uint32_t>(NodeOp::PackedConv2d) &&
            last.params[cpu::kPackedActivation] != 0) ||
           (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d) &&
            last.params[cpu::kConv3dActivation] != 0);
  }

  /// The blob value that tern value `in` names as the output of the node just lowered: its own
  /// value, or for a channels-last result not copied yet (a conv1d's or conv3d's) its view's
  /// base; kNoValue when `in` has neither.
  uint32_t made_value(int in) const {
    if (ids_.count(in) != 0) return ids_.at(in);
    if (channels_last_results_.count(in) != 0) return lazy_.at(in).base;
    return cpu::kNoValue;
  }

  /// Tern value `out` now names what `in` named (a node folded into the one that made `in`):
  /// the same view for a channels-last result, else the blob value retargeted.
  void rename_result(int in, int out) {
    if (ids_.count(in) == 0 && channels_last_results_.count(in) != 0) {
      lazy_[out] = lazy_.at(in);
      channels_last_results_.insert(out);
    } else {
      retarget_output(in, out);
    }
  }

  /// A hardswish or GELU whose input is made by the node just lowered, tern's GEMM (fc or 1x1
  /// conv) or direct conv (op 18; e.g. MobileNetV3's stem) with no activation yet, and read by
  /// nothing else becomes that node's epilogue activation, applied to each finished tile or row
  /// while it is in cache (after its clamp and residual, which the graph applies first). Returns
  /// false when it does not apply.
  bool fuse_activation_into_gemm(const Node& node, cpu::GemmActivation act) {
    return fuse_activation_into_gemm(node.args[0], node.outputs[0], act, 1);
  }
  /// The same for an activation of `in` into `out` that reads `in` `reads` times (a pattern of
  /// several nodes): nothing else may read `in`.
  /// A conv1d's result (nlc_output: a view of its NHWC value, not copied yet) fuses the same
  /// way, and `out` is then the same view.
  bool fuse_activation_into_gemm(int in, int out, cpu::GemmActivation act, int reads) {
    const uint32_t made = made_value(in);
    if (nodes_.empty() || made == cpu::kNoValue || uses_.at(in) != reads ||
        output_arg_.count(in) != 0 || shared(made)) {
      return false;
    }
    BlobNode& last = nodes_.back();
    uint32_t slot = 0;
    if (last.op == static_cast<uint32_t>(NodeOp::PackedFullyConnected)) {
      slot = 2;
    } else if (last.op == static_cast<uint32_t>(NodeOp::PackedConv2d)) {
      slot = cpu::kPackedActivation;
    } else if (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d)) {
      slot = cpu::kConv3dActivation;
    } else {
      return false;
    }
    if (last.output != made || has_activation(last)) return false;
    last.params[slot] = static_cast<uint32_t>(act);
    rename_result(in, out);
    return true;
  }

  /// GPT-2's tanh GELU written out (tanh_gelu_match.h): the epilogue of the GEMM that makes x
  /// when nothing else reads x, else tern's GELU node (op 20, tanh form).
  void lower_tanh_gelu(const TanhGeluMatch& m) {
    if (fuse_activation_into_gemm(m.x, m.y, cpu::GemmActivation::GeluTanh, m.x_reads)) return;
    const uint32_t x = activation(m.x);
    BlobNode& n = add_node(NodeOp::Gelu, {x}, output(m.y));
    n.params[0] = 1;
  }

  /// An LSTM cell written out (recurrent_cell_match.h): one LstmCell node (op 37) making [2, R, H],
  /// c' and h' View values of its two halves (copied into their own values where they leave
  /// the region).
  void lower_lstm_cell(const LstmCellMatch& m) {
    const uint64_t h = static_cast<uint64_t>(m.hidden);
    uint64_t rows = 0;
    std::vector<uint32_t> in{activation(m.gates)};
    in.push_back(cell_state(m.c, h, &rows));
    if (m.gates2 >= 0) in.push_back(activation(m.gates2));
    const uint32_t out = internal({2, rows, h});
    BlobNode& n = add_node(NodeOp::LstmCell, in, out);
    n.params[0] = static_cast<uint32_t>(h);
    for (const auto& [vid, offset] : {std::pair<int, uint64_t>{m.c_next, 0},
                                      std::pair<int, uint64_t>{m.h_next, rows * h}}) {
      const uint32_t id = add_view(out, offset, dims_of(vid));
      if (output_arg_.count(vid) != 0) {
        add_node(NodeOp::Reshape, {id}, output(vid));
      } else {
        ids_.emplace(vid, id);
      }
    }
  }

  /// A GRU cell written out (recurrent_cell_match.h): one GruCell node (op 40) making h'.
  void lower_gru_cell(const GruCellMatch& m) {
    const uint64_t h = static_cast<uint64_t>(m.hidden);
    uint64_t rows = 0;
    const uint32_t gi = activation(m.gi), gh = activation(m.gh);
    const uint32_t hp = cell_state(m.h, h, &rows);
    BlobNode& n = add_node(NodeOp::GruCell, {gi, gh, hp}, output(m.h_next));
    n.params[0] = static_cast<uint32_t>(h);
  }

  /// A recurrent cell's previous state `vid` (hidden size h): its blob value (a constant
  /// [rows, h] when it is one: the zero initial state), its rows into *rows.
  uint32_t cell_state(int vid, uint64_t h, uint64_t* rows) {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    uint64_t numel = 1;
    for (int64_t d : v.sizes) numel *= static_cast<uint64_t>(d);
    *rows = numel / h;
    return v.is_constant ? constant_as(vid, {*rows, h}) : activation(vid);
  }

  /// A relu/hardtanh/clamp whose input is made by the node just lowered, one of tern's GEMM
  /// nodes (fc or conv) or a fused bottleneck ending in its project (whose kernel clamps the
  /// project's output: ShuffleNet's branch ends conv 1x1 -> relu), and read by nothing else
  /// folds into that node's output bounds. Returns false when it does not apply.
  bool fuse_clamp_into_fc(const Node& node, float lo, float hi) {
    const int in = node.args[0];
    const uint32_t made = made_value(in);
    if (nodes_.empty() || made == cpu::kNoValue || uses_.at(in) != 1 ||
        output_arg_.count(in) != 0 || shared(made)) {
      return false;
    }
    BlobNode& last = nodes_.back();
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
  bool fold_hardsigmoid_into_recipes(BlobNode& last) {
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

  /// The blob value of tern value `from` (made by the last node) now stands for tern value
  /// `to` (a folded node's output): external when `to` leaves the region.
  void retarget_output(int from, int to) {
    const uint32_t id = ids_.at(from);
    if (viewed_.count(id) != 0 && output_arg_.count(to) != 0) {
      throw std::invalid_argument("cpu backend: internal error: a viewed value (" +
                                  std::to_string(id) + ") would become a region output");
    }
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
    if (last.op == static_cast<uint32_t>(NodeOp::PackedConv3d)) return fuse_residual_into_conv3d(node);
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
          (ids_.count(other) == 0 && input_arg_.count(other) == 0) ||  // must exist already
          is_plain_4d(other) != is_plain_4d(node.outputs[0])) {  // read in the output's order
        continue;
      }
      last.inputs[2] = activation(other);
      last.num_inputs = 3;
      retarget_output(conv_out, node.outputs[0]);
      return true;
    }
    return false;
  }

  /// add(conv3d_out, r) (either order, alpha 1) where conv3d_out is the NDHWC result of the
  /// conv3d just lowered (no clamp, residual or activation yet; read by nothing else) and r
  /// another conv3d's NDHWC result of the same shape, or any 5-D value already in that order
  /// (a region input is not: it would need a copy before the conv): r is the node's residual.
  bool fuse_residual_into_conv3d(const Node& node) {
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
          g_.values[static_cast<size_t>(conv_out)].sizes != out.sizes ||
          lazy_.count(other) == 0 || ids_.count(other) != 0) {
        continue;
      }
      const BlobValue& made = values_[last.output];
      const uint32_t r = channels_last_base(
          lazy_.at(other), std::vector<uint64_t>(made.dims, made.dims + made.rank));
      if (r == cpu::kNoValue || r == last.output || r == last.inputs[0]) continue;
      last.inputs[2] = r;
      last.num_inputs = 3;
      rename_result(conv_out, node.outputs[0]);
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
    if (node.op == "tern::maximum") op = NodeOp::Maximum;
    if (node.op == "tern::minimum") op = NodeOp::Minimum;
    add_node(op, {a, b}, output(node.outputs[0]));
  }

  /// where(cond, x, y) of a bool activation condition: tern's select (op 44). The condition is
  /// a region input (bool ops stay outside) bound as a BoolPlain value of its tern dims; x and
  /// y are read plain (a number or 0-D constant as one value); the output is plain
  /// (layout_plan: makes_plain).
  void lower_select(const Node& node) {
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
        const double s = v.kind == Value::Kind::Int ? static_cast<double>(v.int_value)
                                                    : v.double_value;
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

  /// index_select by a run-time int64 index (index_rows.h): tern's IndexRows (op 45) on x
  /// (plain; a constant read in place) and the index bound as an Int64Plain region input.
  void lower_index_rows(const Node& node) {
    const IndexRowsAttrs a = index_rows_attrs(g_, node);
    const Value& xv = g_.values[static_cast<size_t>(a.x)];
    const uint32_t x =
        xv.is_constant ? constant_as(a.x, std::vector<uint64_t>(xv.sizes.begin(), xv.sizes.end()))
                       : activation_as(a.x, /*plain=*/true);
    const uint32_t index = typed_input(a.index, ValueLayout::Int64Plain, "a run-time index");
    BlobNode& n = add_node(NodeOp::IndexRows, {x, index}, output(node.outputs[0]));
    n.params[0] = static_cast<uint32_t>(a.dim);
  }

  /// grouped_mm (grouped_matmul.h): tern's GroupedMatmul (op 46) on x (plain), the experts'
  /// matrices packed at prepare (recipe PackGroupedKn) and the ends bound as an Int32Plain /
  /// Int64Plain region input.
  void lower_grouped_matmul(const Node& node) {
    const GroupedMatmulAttrs a = grouped_matmul_attrs(g_, node);
    const uint32_t x = activation_as(a.x, /*plain=*/true);
    Recipe rc(RecipeOp::PackGroupedKn);
    rc.r.params[0] = static_cast<uint32_t>(a.groups);
    rc.r.params[1] = static_cast<uint32_t>(a.k);
    rc.r.params[2] = static_cast<uint32_t>(a.n);
    rc.src[0] = a.w;
    const uint64_t floats = static_cast<uint64_t>(a.groups) *
                            cpu::packed_fc_floats(static_cast<uint64_t>(a.n),
                                                  static_cast<uint64_t>(a.k));
    const uint32_t w = add_derived({floats}, rc);
    const uint32_t ends = typed_input(
        a.ends, a.int32_ends ? ValueLayout::Int32Plain : ValueLayout::Int64Plain,
        "a grouped product's ends");
    BlobNode& n = add_node(NodeOp::GroupedMatmul, {x, w, ends}, output(node.outputs[0]));
    n.params[0] = static_cast<uint32_t>(a.groups);
    n.params[1] = static_cast<uint32_t>(a.k);
    n.params[2] = static_cast<uint32_t>(a.n);
  }

  /// grouped_linear with NF4 / FP8 experts (grouped_matmul.h): tern's QuantizedGroupedMatmul
  /// (op 47) on x (plain), the [E N, K] weight re-laid out at prepare as op 23's (a QuantWeight
  /// recipe) and the ends as op 46's.
  void lower_quant_grouped(const Node& node) {
    const GroupedMatmulAttrs a = quant_grouped_attrs(g_, node);
    const QuantBlobWeight qw = quant_blob_weight(g_, a.w);
    const uint32_t x = activation_as(a.x, /*plain=*/true);
    Recipe rc(RecipeOp::QuantWeight);
    for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) rc.r.params[i] = qw.params[i];
    rc.src[0] = a.w;
    const uint32_t w = add_derived({qw.floats}, rc);
    const uint32_t ends = typed_input(
        a.ends, a.int32_ends ? ValueLayout::Int32Plain : ValueLayout::Int64Plain,
        "a grouped product's ends");
    BlobNode& n = add_node(NodeOp::QuantizedGroupedMatmul, {x, w, ends}, output(node.outputs[0]));
    for (uint32_t i = 0; i < cpu::kQuantParamCount; ++i) n.params[i] = qw.params[i];
    n.params[cpu::kQuantGroups] = static_cast<uint32_t>(a.groups);
  }

  /// Whether pow node `node` (checked by supports) has an exponent of 2, 3 or 0.5: products or
  /// a sqrt (small_pow_exponent's test).
  bool is_small_pow(const Node& node) const {
    const double v = number(g_, node.args[1], "exponent");
    return v == 2.0 || v == 3.0 || v == 0.5;
  }

  /// tril / triu of an activation: tern's select (op 44, mode 1) of x where a constant mask
  /// over the last two dims is > 0.5, else 0 (where_select.h: triangle_keep_mask).
  void lower_triangle(const Node& node) {
    int64_t rows = 0, cols = 0;
    const std::vector<float> mask = triangle_keep_mask(g_, node, &rows, &cols);
    const uint32_t keep = add_constant({static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)}, mask);
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
  void lower_where(const Node& node) {
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

  /// tern::cat along the last XNNPACK dim: Concat nodes of up to 3 inputs, chained (each
  /// partial result an internal value, first of the next node's inputs) for more, starting from
  /// an earlier cat of a prefix of the inputs when the region has one; a cat of one tensor is a
  /// copy (XNNPACK's reshape to the same dims).
  void lower_concat(const Node& node) {
    const std::vector<int> ins = concat_inputs(g_, node);
    const Value& ov = g_.values[static_cast<size_t>(node.outputs[0])];
    const size_t rank = ov.sizes.size();
    const bool nhwc = is_nhwc(node.outputs[0]);
    // The XNNPACK dims of a value of `sizes`: NHWC for an NHWC 4-D output.
    auto xdims = [&](const std::vector<int64_t>& sizes) {
      std::vector<uint64_t> d(sizes.begin(), sizes.end());
      if (nhwc) d = {d[0], d[2], d[3], d[1]};
      return d;
    };
    int64_t dim = int_value(g_, node.args[1], "dim");
    if (dim < 0) dim += static_cast<int64_t>(rank);
    const size_t cat_dim = static_cast<size_t>(dim);
    // Along another XNNPACK dim than the last: every part seen as [rows, numel / rows].
    static constexpr size_t kNhwcOf[4] = {0, 3, 1, 2};
    const size_t xdim = nhwc ? kNhwcOf[cat_dim] : cat_dim;
    uint64_t rows = 0;
    if (xdim + 1 != rank) {
      const std::vector<uint64_t> od = xdims(ov.sizes);
      rows = 1;
      for (size_t d = 0; d < xdim; ++d) rows *= od[d];
    }
    auto shuffle = shuffle_folds_.find(static_cast<int>(&node - g_.nodes.data()));
    if (shuffle != shuffle_folds_.end()) {  // each part: its channel range of every input
      const ConcatShuffleMatch& m = shuffle->second;
      const int64_t groups = static_cast<int64_t>(ins.size());
      for (size_t i = 0; i < m.outputs.size(); ++i) {
        const int64_t width = g_.values[static_cast<size_t>(m.outputs[i])].sizes[1];
        lower_row_concat(ins, m.outputs[i], 1, m.first_channel[i] / groups, width / groups);
      }
      return;
    }
    if (xdim + 1 == rank && ins.size() >= 2 && ins.size() <= cpu::kMaxConcatInputs) {
      for (int in : ins) {
        RowRead r;
        if (pending_row_read(in, &r)) {  // a slice read in place, not copied first
          lower_row_concat(ins, node.outputs[0], 0);
          lowered_cats_.push_back({ins, node.outputs[0], xdim, rows, nhwc});
          return;
        }
      }
    }
    uint32_t acc = cat_part(ins[0], node.outputs[0]);
    if (ins.size() == 1) {  // cat([x]) is a copy (DenseNet's first dense layer)
      add_node(NodeOp::Reshape, {acc}, output(node.outputs[0]));
      return;
    }
    std::vector<int64_t> acc_sizes = g_.values[static_cast<size_t>(ins[0])].sizes;
    size_t next = 1;
    // An earlier cat of a prefix of these inputs (DenseNet: layer k + 1 concatenates layer k's
    // inputs and one more) is the chain's start: one copy of the new parts, not a chain over
    // every input again.
    if (const LoweredCat* prefix = longest_cat_prefix(ins, xdim, rows, nhwc)) {
      acc = activation(prefix->output);
      acc_sizes = g_.values[static_cast<size_t>(prefix->output)].sizes;
      next = prefix->inputs.size();
    }
    while (next < ins.size()) {
      std::vector<uint32_t> inputs = {acc};
      std::vector<int64_t> sizes = acc_sizes;
      while (inputs.size() < cpu::kMaxConcatInputs && next < ins.size()) {
        inputs.push_back(cat_part(ins[next], node.outputs[0]));
        sizes[cat_dim] += g_.values[static_cast<size_t>(ins[next])].sizes[cat_dim];
        ++next;
      }
      const uint32_t out =
          next == ins.size() ? output(node.outputs[0]) : internal(xdims(sizes));
      add_node(NodeOp::Concat, inputs, out).params[0] = static_cast<uint32_t>(rows);
      acc = out;
      acc_sizes = sizes;
    }
    lowered_cats_.push_back({ins, node.outputs[0], xdim, rows, nhwc});
  }

  /// Part `vid` of a cat whose output is `out`: an activation, or a constant (a ViT's class
  /// token) laid out as the output is (binary_operand: NHWC 4-D parts permuted at prepare).
  uint32_t cat_part(int vid, int out) {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    if (!v.is_constant) return activation(vid);
    return binary_operand(vid, v.sizes.size(), 1.0, !is_nhwc(out));
  }

  /// A cat this region lowered: its inputs (graph values, in order), output and how it was cut.
  struct LoweredCat {
    std::vector<int> inputs;
    int output = -1;
    size_t xdim = 0;
    uint64_t rows = 0;
    bool nhwc = false;
  };

  /// The lowered cat of the most inputs (two or more) that are a proper prefix of `ins`, cut the
  /// same way; null when there is none.
  const LoweredCat* longest_cat_prefix(const std::vector<int>& ins, size_t xdim, uint64_t rows,
                                       bool nhwc) const {
    const LoweredCat* best = nullptr;
    for (const LoweredCat& c : lowered_cats_) {
      if (c.inputs.size() < 2 || c.inputs.size() >= ins.size()) continue;
      if (c.xdim != xdim || c.rows != rows || c.nhwc != nhwc) continue;
      if (!std::equal(c.inputs.begin(), c.inputs.end(), ins.begin())) continue;
      if (best == nullptr || c.inputs.size() > best->inputs.size()) best = &c;
    }
    return best;
  }

  /// Where a RowConcat (op 29) reads one input's rows: a blob value, the row stride and the
  /// offset of row 0 (row width: the input's last XNNPACK dim).
  struct RowRead {
    uint32_t base = 0;
    int64_t stride = 0;
    int64_t offset = 0;
  };

  /// Input `vid` of a concat along the last XNNPACK dim, when it is an index-map result not
  /// copied yet whose rows lie in its base at one stride (a channel slice of an NHWC tensor):
  /// where they lie. False otherwise (nothing emitted).
  bool pending_row_read(int vid, RowRead* r) {
    if (lazy_.count(vid) == 0 || ids_.count(vid) != 0) return false;
    const StridedView& v = lazy_.at(vid);
    const std::vector<uint64_t> d = dims_of(vid);
    const int64_t width = static_cast<int64_t>(d.back());
    const CopyPlan p = copy_plan(v, is_nhwc(vid));
    r->base = v.base;
    r->offset = p.offset;
    if (p.extent.size() == 1 && p.stride[0] == 1) {
      r->stride = width;  // rows one after another
    } else if (p.extent.size() == 2 && p.stride[1] == 1 && p.extent[1] == width) {
      r->stride = p.stride[0];
    } else {
      return false;
    }
    return r->offset <= (int64_t{1} << 30) && r->stride >= 0 && r->stride <= (int64_t{1} << 30);
  }

  /// Concat of `ins` along the last XNNPACK dim into tern value `out` as one RowConcat (op 29):
  /// pending slices read in place, other inputs as their blob values; `unit` 1 interleaves the
  /// inputs channel by channel (a channel shuffle folded in, concat_shuffle_match.h). With
  /// `width` > 0 only `width` floats of each input's rows are read, from float `skip` on (a
  /// split after the shuffle folded in too).
  void lower_row_concat(const std::vector<int>& ins, int out, uint32_t unit, int64_t skip = 0,
                        int64_t width = 0) {
    std::vector<uint32_t> bases;
    std::vector<RowRead> reads;
    std::vector<int64_t> widths;
    for (int in : ins) {
      RowRead r;
      const std::vector<uint64_t> d = dims_of(in);
      const int64_t row = static_cast<int64_t>(d.back());
      if (!pending_row_read(in, &r)) r = {cat_part(in, out), row, 0};
      r.offset += skip;
      widths.push_back(width > 0 ? width : row);
      bases.push_back(r.base);
      reads.push_back(r);
    }
    const std::vector<uint64_t> od = dims_of(out);
    uint64_t rows = 1;
    for (size_t i = 0; i + 1 < od.size(); ++i) rows *= od[i];
    BlobNode& n = add_node(NodeOp::RowConcat, bases, output(out));
    n.params[cpu::kRowConcatRows] = static_cast<uint32_t>(rows);
    n.params[cpu::kRowConcatUnit] = unit;
    for (size_t i = 0; i < ins.size(); ++i) {
      n.params[cpu::kRowConcatWidth + i] = static_cast<uint32_t>(widths[i]);
      n.params[cpu::kRowConcatStride + i] = static_cast<uint32_t>(reads[i].stride);
      n.params[cpu::kRowConcatOffset + i] = static_cast<uint32_t>(reads[i].offset);
    }
  }

  /// A standalone batch_norm (not after a conv, e.g. DenseNet's pre-activation one): a
  /// multiply-add by per-channel constants folded here. On an NHWC 4-D x one XNNPACK 1x1
  /// depthwise conv (filter [1, 1, 1, C], one pass over x: DenseNet's BN -> ReLU took 4.5 ms of
  /// 24 as a multiply and an add, 1.4 ms so); else XNNPACK multiply and add ([1, C] or [1, C, 1]
  /// for plain ones). A relu after it fuses into the last node's output range (XNNPACK).
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
    if (xv.sizes.size() == 4 && is_nhwc(node.args[0])) {
      // One pass: a 1x1 depthwise conv of filter [1, 1, 1, C] = scale and bias = shift (a
      // multiply-add per channel; a relu after it fuses into its output range).
      ConvAttrs unit{};
      unit.stride[0] = unit.stride[1] = 1;
      unit.dilation[0] = unit.dilation[1] = 1;
      unit.groups = static_cast<int64_t>(c);
      unit.depthwise = true;
      BlobNode& n = add_node(NodeOp::DepthwiseConv2d,
                             {x, add_constant(cdims, a.scale), add_constant({c}, a.shift)},
                             output(node.outputs[0]));
      set_window_params(n, unit, 1, 1);
      n.params[cpu::kGroups] = 1;                                  // depth multiplier
      n.params[cpu::kGroupInChannels] = static_cast<uint32_t>(c);  // input channels
      return;
    }
    const uint32_t scaled = internal(xnn_dims(xv.sizes));
    add_node(NodeOp::Multiply, {x, add_constant(cdims, a.scale)}, scaled);
    add_node(NodeOp::Add, {scaled, add_constant(cdims, a.shift)}, output(node.outputs[0]));
  }

  /// Whether permute `node` is a layout change only: (0, 2, 3, 1) of an NHWC tensor to a plain
  /// one, or (0, 3, 1, 2) of a plain one to an NHWC one (layout_plan.h).
  bool is_layout_permute(const Node& node) const {
    const int x = node.args[0], y = node.outputs[0];
    if (g_.values[static_cast<size_t>(x)].sizes.size() != 4) return false;
    const std::vector<int64_t> d = permute_dims(g_, node);
    return (is_nhwc(x) && !is_nhwc(y) && d == std::vector<int64_t>{0, 2, 3, 1}) ||
           (!is_nhwc(x) && is_nhwc(y) && d == std::vector<int64_t>{0, 3, 1, 2});
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

  /// Whether tern value `vid` is NHWC inside the delegate (a 4-D tensor that is not plain).
  bool is_nhwc(int vid) const {
    return g_.values[static_cast<size_t>(vid)].sizes.size() == 4 && !is_plain_4d(vid);
  }

  /// Tern value `vid` as a strided view: its pending index maps, or its blob value as it is.
  StridedView view_of(int vid) {
    auto it = lazy_.find(vid);
    if (it != lazy_.end() && ids_.count(vid) == 0) return it->second;
    const uint32_t id = activation(vid);
    StridedView v = whole_value(id, g_.values[static_cast<size_t>(vid)].sizes, is_nhwc(vid));
    read_through_view(id, &v);
    return v;
  }

  /// Writes view `v` into blob value `out` in the order `nhwc` says: a plain copy (XNNPACK's
  /// reshape) when it is the whole base in order, else tern's StridedCopy (op 27).
  void emit_copy(const StridedView& v, bool nhwc, uint32_t out) {
    const CopyPlan p = copy_plan(v, nhwc);
    if (p.identity) {
      add_node(NodeOp::Reshape, {v.base}, out);
      return;
    }
    if (p.extent.size() > cpu::kMaxDims || p.offset > (int64_t{1} << 30)) {
      throw std::invalid_argument("cpu backend: internal error: a copy of rank " +
                                  std::to_string(p.extent.size()) + " or offset " +
                                  std::to_string(p.offset));
    }
    BlobNode& n = add_node(NodeOp::StridedCopy, {v.base}, out);
    n.params[cpu::kCopyRank] = static_cast<uint32_t>(p.extent.size());
    for (size_t d = 0; d < p.extent.size(); ++d) {
      if (p.stride[d] > (int64_t{1} << 30) || p.stride[d] < -(int64_t{1} << 30)) {
        throw std::invalid_argument("cpu backend: a copy stride beyond 2^30");
      }
      n.params[cpu::kCopyExtent + d] = static_cast<uint32_t>(p.extent[d]);
      // Two's complement: a negative stride (a flip) reads backwards (since version 17).
      n.params[cpu::kCopyStride + d] =
          static_cast<uint32_t>(static_cast<int32_t>(p.stride[d]));
    }
    n.params[cpu::kCopyOffset] = static_cast<uint32_t>(p.offset);
  }

  /// The blob value of index-map result `vid`: a View value reading its base in place when
  /// the view is one contiguous run of an internal value and stays inside the region (a
  /// split's chunk, a step of an unrolled recurrent layer: no copy and no stage boundary),
  /// else copied from its view once.
  uint32_t materialize(int vid) {
    const StridedView v = lazy_.at(vid);
    const CopyPlan p = copy_plan(v, is_nhwc(vid));
    const bool contiguous = p.identity || p.extent.empty() ||
                            (p.extent.size() == 1 && p.stride[0] == 1);
    const BlobValue& base = values_[v.base];
    if (contiguous && p.offset >= 0 && output_arg_.count(vid) == 0 &&
        base.kind == static_cast<uint32_t>(ValueKind::Internal) && base.dynamic_mask == 0 &&
        dynamic_dim_of(vid) == cpu::kNoValue) {
      const uint32_t id = add_view(v.base, static_cast<uint64_t>(p.offset), dims_of(vid));
      ids_.emplace(vid, id);
      return id;
    }
    const uint32_t out = output(vid);
    emit_copy(v, is_nhwc(vid), out);
    return out;
  }

  /// transpose, permute, slice, select, expand, clone, split: nothing yet, each output a view
  /// of the input's (index_map_ops.h), copied where it is read.
  void lower_index_map(const Node& node) {
    const std::vector<StridedView> outs = apply_index_map(g_, node, view_of(node.args[0]));
    for (size_t i = 0; i < outs.size(); ++i) lazy_[node.outputs[i]] = outs[i];
  }

  /// index_select by an affine walk (affine_index.h): x's view with the selected dim replaced
  /// by the walk's dims (strides its steps times the dim's own), written row-major into the
  /// output by one copy (an unfold's windows: ConvBERT).
  void lower_index_select(const Node& node) {
    size_t dim = 0;
    const AffineIndex walk = index_select_walk(g_, node, &dim);
    StridedView v = view_of(node.args[0]);
    const int64_t stride = v.strides[dim];
    v.offset += walk.start * stride;
    v.sizes.erase(v.sizes.begin() + static_cast<std::ptrdiff_t>(dim));
    v.strides.erase(v.strides.begin() + static_cast<std::ptrdiff_t>(dim));
    for (size_t j = walk.sizes.size(); j-- > 0;) {
      v.sizes.insert(v.sizes.begin() + static_cast<std::ptrdiff_t>(dim), walk.sizes[j]);
      v.strides.insert(v.strides.begin() + static_cast<std::ptrdiff_t>(dim),
                       walk.steps[j] * stride);
    }
    emit_copy(v, false, output(node.outputs[0]));
  }

  /// gather / index_select by a constant index that is no affine walk: tern's GatherMap (op
  /// 42) reading x's bytes row-major through one folded block of int32 offsets
  /// (gather_map_plan.h: SEW-D's relative-position gathers).
  void lower_gather_map(const Node& node) {
    emit_gather_map(gather_map_plan(g_, node), activation(node.args[0]),
                    output(node.outputs[0]));
  }

  /// tern's GatherMap (op 42) of `plan` from blob value x to blob value y.
  void emit_gather_map(const GatherMapPlan& plan, uint32_t x, uint32_t y) {
    const uint32_t map =
        add_constant_words({static_cast<uint64_t>(plan.map.size())}, plan.map.data(),
                           plan.map.size());
    BlobNode& n = add_node(NodeOp::GatherMap, {x, map}, y);
    n.params[0] = static_cast<uint32_t>(plan.outer);
    n.params[1] = static_cast<uint32_t>(plan.step);
    n.params[2] = plan.run > 1 ? static_cast<uint32_t>(plan.run) : 0u;
  }

  /// grid_sample2d: tern's grid-sample node (op 43) over x in NHWC (a plain x copied into that
  /// order) and the grid's row-major (x, y) pairs (an NHWC grid copied back; a constant read in
  /// place), writing the NHWC output.
  void lower_grid_sample(const Node& node) {
    const GridSampleAttrs a = grid_sample_attrs(g_, node);
    const uint32_t x = activation_as(node.args[0], false);
    const Value& gv = g_.values[static_cast<size_t>(node.args[1])];
    const uint32_t grid =
        gv.is_constant ? activation_or_constant(node.args[1]) : activation_as(node.args[1], true);
    BlobNode& n = add_node(NodeOp::GridSample, {x, grid}, output(node.outputs[0]));
    n.params[0] = static_cast<uint32_t>(a.mode);
    n.params[1] = static_cast<uint32_t>(a.padding);
    n.params[2] = a.align_corners ? 1 : 0;
  }

  /// NHWC value `y`, a view of `v` that strides cannot express (ShuffleNet's channel shuffle:
  /// [N, C/2, 2, H, W] -> [N, C, H, W]), written by one copy straight in y's byte order: v's
  /// dims regrouped onto y's, the groups taken in N, H, W, C order. A row-major copy instead
  /// would put y in NCHW order, and every NHWC reader would transpose it again. False (nothing
  /// emitted) when v's dims do not regroup onto y's.
  bool copy_in_nhwc_order(const StridedView& v, int y) {
    StridedView split;
    std::vector<size_t> groups;
    if (!regrouped(v, g_.values[static_cast<size_t>(y)].sizes, &split, &groups)) return false;
    StridedView ordered = split;
    ordered.sizes.clear();
    ordered.strides.clear();
    for (size_t j : {0, 2, 3, 1}) {
      for (size_t d = groups[j]; d < groups[j + 1]; ++d) {
        ordered.sizes.push_back(split.sizes[d]);
        ordered.strides.push_back(split.strides[d]);
      }
    }
    emit_copy(ordered, false, output(y));
    return true;
  }

  /// A view: XNNPACK's reshape (a copy) when the bytes stay in order and the input is no view;
  /// else a view of the input's view (copied once where it is read), or of a row-major copy of
  /// the input when strides cannot express it.
  void lower_view(const Node& node) {
    const int x = node.args[0], y = node.outputs[0];
    const Value& xv = g_.values[static_cast<size_t>(x)];
    const Value& yv = g_.values[static_cast<size_t>(y)];
    const bool reorders = xv.sizes != yv.sizes && ((is_nhwc(x) && layout_sensitive(xv.sizes)) ||
                                                   (is_nhwc(y) && layout_sensitive(yv.sizes)));
    const bool pending = lazy_.count(x) != 0 && ids_.count(x) == 0;
    if (!reorders && !pending) {
      const uint32_t in = activation(x);
      if (!reshape_in_place(in, y)) add_node(NodeOp::Reshape, {in}, output(y));
      return;
    }
    StridedView out;
    if (!reshaped(view_of(x), yv.sizes, &out)) {
      if (is_nhwc(y) && copy_in_nhwc_order(view_of(x), y)) return;
      const uint32_t flat = internal(std::vector<uint64_t>(xv.sizes.begin(), xv.sizes.end()));
      emit_copy(view_of(x), false, flat);
      (void)reshaped(whole_value(flat, xv.sizes, false), yv.sizes, &out);  // row-major: always
    }
    lazy_[y] = out;
  }

  /// Tern value `y`, a reshape of blob value `in` in the same byte order, made a View of `in`'s
  /// bytes (no copy) when `in` is a view already or an internal value made by one of tern's
  /// kernels (in the workspace anyway: a view of it breaks no XNNPACK runtime) and `y` stays
  /// inside the region. False (nothing made) otherwise.
  bool reshape_in_place(uint32_t in, int y) {
    if (output_arg_.count(y) != 0 || dynamic_dim_of(y) != cpu::kNoValue) return false;
    const BlobValue& v = values_[in];
    uint32_t base = in;
    uint64_t offset = 0;
    if (v.kind == static_cast<uint32_t>(ValueKind::View)) {
      base = v.view_base;
      offset = v.data_offset;
    } else if (v.kind != static_cast<uint32_t>(ValueKind::Internal) || v.dynamic_mask != 0 ||
               !made_by_own_kernel(in)) {
      return false;
    }
    ids_.emplace(y, add_view(base, offset, dims_of(y)));
    return true;
  }

  /// Whether blob value `id` is the output of one of tern's own kernels (not XNNPACK's).
  bool made_by_own_kernel(uint32_t id) const {
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      if (it->output == id) return cpu::is_own_kernel_op(it->op);
    }
    return false;
  }

  /// softmax over a dim followed by dims of 1 only (ConvBERT's [N, K, 1] over dim 1; the
  /// compile half's check allows no other form but the last dim): XNNPACK's softmax over the
  /// last dim of x seen as [.., K] (a reshape, the same bytes), reshaped back. False when the
  /// softmax is over the last dim.
  bool softmax_over_inner_dim(const Node& node) {
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
    int64_t dim = int_value(g_, node.args[1], "dim");
    if (dim < 0) dim += static_cast<int64_t>(s.size());
    if (dim == static_cast<int64_t>(s.size()) - 1) return false;
    for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) {
      if (s[d] != 1) {
        lower_softmax_moved(node, static_cast<size_t>(dim));
        return true;
      }
    }
    const std::vector<uint64_t> folded(s.begin(), s.begin() + dim + 1);
    const uint32_t x = internal(folded);
    add_node(NodeOp::Reshape, {activation_as(node.args[0], /*plain=*/true)}, x);
    const uint32_t y = internal(folded);
    add_node(NodeOp::Softmax, {x}, y);
    add_node(NodeOp::Reshape, {y}, output(node.outputs[0]));
    return true;
  }

  /// softmax over dim `dim` of x followed by dims larger than 1 (ResNeSt's split attention:
  /// over the radix): x copied with `dim` swapped to last, XNNPACK's softmax over the last
  /// dim, the result copied back with the swap undone (in the output's layout).
  void lower_softmax_moved(const Node& node, size_t dim) {
    const int y = node.outputs[0];
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
    std::vector<int64_t> perm(s.size());
    for (size_t d = 0; d < s.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::swap(perm[dim], perm.back());  // its own inverse
    std::vector<int64_t> moved;
    for (int64_t p : perm) moved.push_back(s[static_cast<size_t>(p)]);
    const std::vector<uint64_t> dims(moved.begin(), moved.end());
    const uint32_t a = internal(dims);
    emit_copy(permuted(view_of(node.args[0]), perm), /*nhwc=*/false, a);
    const uint32_t b = internal(dims);
    add_node(NodeOp::Softmax, {a}, b);
    emit_copy(permuted(whole_value(b, moved, false), perm), is_nhwc(y), output(y));
  }

  /// upsample_nearest2d by integer factors kh, kw (YOLO's and U-Net's upsampling): x viewed as
  /// [N, C, H, 1, W, 1], broadcast to [N, C, H, kh, W, kw] (strides 0) and written in one
  /// StridedCopy in the output's NHWC order.
  void lower_nearest_upsample(const Node& node) {
    const NearestUpsample u = nearest_upsample(g_, node);
    const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
    if (u.factors.empty()) {  // no integer factor: a GatherMap of NHWC pixels
      std::vector<int64_t> pixels;  // each output pixel's source pixel, in pixels
      pixels.reserve(static_cast<size_t>(s[0]) * u.rows.size() * u.cols.size());
      for (int64_t b = 0; b < s[0]; ++b) {
        for (int64_t r : u.rows) {
          for (int64_t col : u.cols) pixels.push_back((b * s[2] + r) * s[3] + col);
        }
      }
      const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
      GatherMapPlan plan = fold_map(pixels, {ys[0], ys[2], ys[3]});
      const int64_t c = s[1];  // pixels to elements: each copies its C channels
      for (int32_t& m : plan.map) m = static_cast<int32_t>(m * c);
      plan.step *= c;
      plan.run *= c;
      emit_gather_map(plan, activation_as(node.args[0], /*plain=*/false), output(node.outputs[0]));
      return;
    }
    const std::vector<int64_t>& k = u.factors;
    StridedView v;
    (void)reshaped(view_of(node.args[0]), {s[0], s[1], s[2], 1, s[3], 1}, &v);  // dims of 1
    v = expanded(v, {s[0], s[1], s[2], k[0], s[3], k[1]});
    if (!copy_in_nhwc_order(v, node.outputs[0])) {
      throw std::invalid_argument("cpu backend: upsample_nearest2d: the broadcast view does not "
                                  "regroup onto the output");
    }
  }

  /// bmm / matmul of two activations, or of an activation and a constant: tern's BatchMatMul
  /// (op 26). A constant operand is read in place, row-major as the kernel reads it.
  void lower_batch_matmul(const Node& node) {
    add_node(NodeOp::BatchMatMul, {activation_or_constant(node.args[0]),
                                   activation_or_constant(node.args[1])},
             output(node.outputs[0]));
  }

  /// Activation `vid`, or constant `vid` read in place with its own dims (row-major).
  uint32_t activation_or_constant(int vid) {
    const Value& v = g_.values[static_cast<size_t>(vid)];
    if (!v.is_constant) return activation(vid);
    return constant_as(vid, std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()));
  }

  /// `d` without its dim r - 3 and dim r - 2 multiplied by `rows`.
  static std::vector<uint64_t> group_folded(std::vector<uint64_t> d, uint64_t rows) {
    const size_t r = d.size();
    d[r - 2] *= rows;
    d.erase(d.begin() + static_cast<std::ptrdiff_t>(r - 3));
    return d;
  }

  /// `x` without its dim r - 3 and dim r - 2 multiplied by `rows` (a grouped attention's
  /// operands folded: [.., G, L, E] -> [.., G * L, E] for q and [.., 1, S, E] -> [.., S, E]
  /// for k and v, the same bytes), through a Reshape node.
  uint32_t fold_group_dim(uint32_t x, uint64_t rows) {
    const std::vector<uint64_t> d(values_[x].dims, values_[x].dims + values_[x].rank);
    const uint32_t y = internal(group_folded(d, rows));
    add_node(NodeOp::Reshape, {x}, y);
    return y;
  }

  /// The mask of a grouped attention over scores [.., G, L, S] (broadcast from `a.bias_dims`)
  /// written out over the folded scores [.., G * L, S]: the leading dims and S keep their
  /// broadcast, the G * L rows are materialised.
  static void fold_group_bias(SdpaAttrs* a, int64_t l) {
    const size_t r = a->bias_dims.size();
    const std::vector<int64_t> bd = a->bias_dims;
    int64_t lead = 1;
    for (size_t i = 0; i + 3 < r; ++i) lead *= bd[i];
    const int64_t g = a->group, s = bd[r - 1];
    std::vector<float> folded;
    folded.reserve(static_cast<size_t>(lead * g * l * s));
    for (int64_t b = 0; b < lead; ++b) {
      for (int64_t gi = 0; gi < g; ++gi) {
        for (int64_t li = 0; li < l; ++li) {
          const int64_t row = (b * bd[r - 3] + (bd[r - 3] == 1 ? 0 : gi)) * bd[r - 2] +
                              (bd[r - 2] == 1 ? 0 : li);
          const float* src = a->bias.data() + row * s;
          folded.insert(folded.end(), src, src + s);
        }
      }
    }
    a->bias = std::move(folded);
    a->bias_dims.erase(a->bias_dims.begin() + static_cast<std::ptrdiff_t>(r - 3));
    a->bias_dims[r - 3] = g * l;
  }

  /// The additive mask `bias` over scores of `dims` (each dim 1 or the scores') with its last
  /// dim written out to the `keys` when it is 1 (the node reads every key of a mask row).
  static void expand_mask_keys(std::vector<float>* bias, std::vector<int64_t>* dims,
                               int64_t keys) {
    if (dims->back() != 1 || keys == 1) return;
    std::vector<float> out;
    out.reserve(bias->size() * static_cast<size_t>(keys));
    for (float x : *bias) out.insert(out.end(), static_cast<size_t>(keys), x);
    *bias = std::move(out);
    dims->back() = keys;
  }

  /// Whether the constant mask over [.., L, S] (all leading dims 1) is a causal one: 0 where
  /// j <= i, and at most -1e30 (-inf, or the f32 minimum Hugging Face writes) where j > i. Its
  /// masked scores' weights are then exactly 0 for finite scores, as when they are skipped.
  static bool is_causal_mask(const std::vector<float>& bias, const std::vector<int64_t>& dims) {
    const size_t r = dims.size();
    for (size_t d = 0; d + 2 < r; ++d) {
      if (dims[d] != 1) return false;
    }
    const int64_t l = dims[r - 2], s = dims[r - 1];
    if (l < 2 || s < 2) return false;
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        const float m = bias[static_cast<size_t>(i * s + j)];
        if (j <= i ? m != 0.0f : !(m <= -1e30f)) return false;
      }
    }
    return true;
  }

  /// tern's fused Attention node (op 32): q, k (transposed when `k_transposed`), v, and the
  /// mask (`mask`, a blob value of the scores' rank, or kNoValue) broadcast over `scores`.
  void add_attention(uint32_t q, uint32_t k, bool k_transposed, uint32_t v, uint32_t mask,
                     const std::vector<int64_t>& scores, double scale, int64_t causal_period,
                     bool empty_rows_nan, uint32_t out) {
    std::vector<uint32_t> in = {q, k, v};
    if (mask != cpu::kNoValue) in.push_back(mask);
    BlobNode& n = add_node(NodeOp::Attention, in, out);
    n.params[cpu::kAttentionFlags] = (k_transposed ? cpu::kAttentionKTransposed : 0u) |
                                     (empty_rows_nan ? cpu::kAttentionEmptyRowsNan : 0u);
    n.params[cpu::kAttentionCausal] = static_cast<uint32_t>(causal_period);
    if (mask != cpu::kNoValue) {
      const size_t batch_rank = scores.size() - 2;
      n.params[cpu::kAttentionMaskBatchRank] = static_cast<uint32_t>(batch_rank);
      for (size_t d = 0; d < batch_rank; ++d) {
        n.params[cpu::kAttentionMaskBatch + d] = static_cast<uint32_t>(scores[d]);
      }
    }
    n.fparams[0] = static_cast<float>(scale);
    n.fparams[1] = 0.0f;
  }

  /// scaled_dot_product_attention: tern's fused Attention node (op 32). Grouped query heads
  /// (q [.., G, L, E] against k, v [.., 1, S, E]) fold into the rows: one head per key/value
  /// head over its G * L query rows (causal rows by their index mod L), the output reshaped
  /// back.
  void lower_sdpa(const Node& node) {
    SdpaAttrs a = sdpa_attrs(g_, node);
    const Value& qv = g_.values[static_cast<size_t>(node.args[0])];
    std::vector<uint64_t> qdims(qv.sizes.begin(), qv.sizes.end());
    const int64_t l = qv.sizes[qv.sizes.size() - 2];
    uint32_t k = activation(node.args[1]);
    uint32_t v = activation(node.args[2]);
    const int64_t s = static_cast<int64_t>(values_[k].dims[values_[k].rank - 2]);
    uint32_t q = cpu::kNoValue;
    if (qv.is_constant) {  // read in place, its grouped heads' rows folded by its dims alone
      if (a.group != 0) qdims = group_folded(qdims, static_cast<uint64_t>(a.group));
      q = constant_as(node.args[0], qdims);
    } else {
      q = activation(node.args[0]);
    }
    if (a.group != 0) {
      if (!a.causal && !a.bias.empty()) fold_group_bias(&a, l);
      if (!qv.is_constant) q = fold_group_dim(q, static_cast<uint64_t>(a.group));
      k = fold_group_dim(k, 1);
      v = fold_group_dim(v, 1);
    }
    std::vector<int64_t> scores(values_[q].dims, values_[q].dims + values_[q].rank);
    scores.back() = s;
    uint32_t mask = cpu::kNoValue;
    if (a.mask_value >= 0) {  // an activation, given the scores' rank
      mask = activation(a.mask_value);
      const std::vector<uint64_t> dims(a.bias_dims.begin(), a.bias_dims.end());
      if (values_[mask].rank != dims.size()) {
        const uint32_t padded = internal(dims);
        add_node(NodeOp::Reshape, {mask}, padded);
        mask = padded;
      }
      if (a.group != 0) {  // [.., G, L, S] -> [.., G * L, S] or [.., 1, 1, S] -> [.., 1, S]
        mask = fold_group_dim(mask, dims[dims.size() - 3]);
      }
    } else if (!a.causal && !a.bias.empty()) {
      expand_mask_keys(&a.bias, &a.bias_dims, s);
      mask = add_constant(std::vector<uint64_t>(a.bias_dims.begin(), a.bias_dims.end()), a.bias);
    }
    if (a.group == 0) {
      add_attention(q, k, false, v, mask, scores, a.scale, a.causal ? l : 0, false,
                    output(node.outputs[0]));
      return;
    }
    std::vector<uint64_t> dims(values_[q].dims, values_[q].dims + values_[q].rank);
    dims.back() = values_[v].dims[values_[v].rank - 1];  // [.., G * L, Ev]
    const uint32_t o = internal(dims);
    add_attention(q, k, false, v, mask, scores, a.scale, a.causal ? l : 0, false, o);
    add_node(NodeOp::Reshape, {o}, output(node.outputs[0]));
  }

  /// k [.., S, E] row-major for `kt`, a bmm's right operand [.., E, S], when kt is a pending
  /// view (Whisper's and BERT's key.transpose(-1, -2) of the key heads): kt's transpose undone,
  /// read in place when that is the whole of a value in order, else copied in k's order (runs
  /// of E features, not a gather of single floats). kNoValue when kt is a value of its own.
  uint32_t untransposed_key(int kt) {
    auto it = lazy_.find(kt);
    if (it == lazy_.end() || ids_.count(kt) != 0) return cpu::kNoValue;
    const size_t r = it->second.sizes.size();
    std::vector<int64_t> perm(r);
    for (size_t d = 0; d < r; ++d) perm[d] = static_cast<int64_t>(d);
    std::swap(perm[r - 2], perm[r - 1]);
    const StridedView k = permuted(it->second, perm);
    const std::vector<uint64_t> dims(k.sizes.begin(), k.sizes.end());
    const BlobValue& base = values_[k.base];
    if (copy_plan(k, false).identity && base.rank >= 2 &&
        base.dims[base.rank - 1] == dims[r - 1] && base.dims[base.rank - 2] == dims[r - 2]) {
      return k.base;  // the same bytes, and the node reads the base's last two dims as [S, E]
    }
    const uint32_t out = internal(dims);
    emit_copy(k, false, out);
    return out;
  }

  /// Attention written out (attention_match.h): one fused Attention node. Its mask, a constant
  /// or an activation, is given the scores' rank; a constant causal mask becomes the node's
  /// causal limit.
  void lower_eager_attention(const AttentionMatch& m) {
    const uint32_t q = activation_or_constant(m.q);  // a constant q since version 20
    uint32_t k = untransposed_key(m.kt);
    const bool k_transposed = k == cpu::kNoValue;
    if (k_transposed) k = activation(m.kt);
    const uint32_t v = activation(m.v);
    const std::vector<int64_t>& scores = m.scores_dims;
    uint32_t mask = cpu::kNoValue;
    int64_t causal = 0;
    if (m.mask >= 0) {
      const Value& mv = g_.values[static_cast<size_t>(m.mask)];
      std::vector<uint64_t> dims(scores.size() - mv.sizes.size(), 1);
      dims.insert(dims.end(), mv.sizes.begin(), mv.sizes.end());
      if (mv.is_constant) {
        const std::vector<float> data = constant_floats(mv);
        const std::vector<int64_t> sdims(dims.begin(), dims.end());
        if (is_causal_mask(data, sdims)) {
          causal = scores[scores.size() - 2];
        } else {
          mask = add_constant(dims, data);
        }
      } else {
        mask = activation(m.mask);
        if (values_[mask].rank != dims.size()) {
          const uint32_t padded = internal(dims);
          add_node(NodeOp::Reshape, {mask}, padded);
          mask = padded;
        }
      }
    }
    add_attention(q, k, k_transposed, v, mask, scores, m.scale, causal, true, output(m.out));
  }

  /// A mean, sum or amax (ReductionAttrs): its reduced dims are one range of x's blob dims (NHWC or
  /// row-major, as check_layout allowed), so x is
  /// [outer, mid, inner] with mid reduced. Over the last dims (inner 1): XNNPACK's
  /// fully-connected node with a [1, mid] filter of 1/mid (1 for a sum). Else XNNPACK's global
  /// average pool of x seen as [outer, mid, 1, inner] (a reshape first unless x is 4-D and mid
  /// its dims 1 and 2: an NHWC spatial mean, GRN's sum over H, W of [N, H, W, C]), times mid
  /// for a sum. A reshape to the output's dims where they differ (same bytes).
  void lower_reduction(const Node& node) {
    const ReductionAttrs a = reduction_attrs(g_, node);
    const std::vector<uint64_t> bx = dims_of(node.args[0]);
    std::vector<bool> red = a.reduced;  // per blob dim
    if (is_nhwc(node.args[0])) {  // blob dims N, H, W, C (check_layout)
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
    const std::vector<uint64_t> out_dims = dims_of(node.outputs[0]);
    uint32_t result;
    std::vector<uint64_t> result_dims;
    if (a.max) {  // XNNPACK's max pooling over a window of the reduced extent (Hiera's amax)
      const uint32_t in = internal({outer, mid, 1, inner});
      add_node(NodeOp::Reshape, {x}, in);
      result_dims = {outer, 1, 1, inner};
      result = result_dims == out_dims ? output(node.outputs[0]) : internal(result_dims);
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
      result = result_dims == out_dims ? output(node.outputs[0]) : internal(result_dims);
      add_node(NodeOp::FullyConnected, {in, f}, result);
    } else {
      const bool direct = bx.size() == 4 && first == 1 && last == 2;
      const uint32_t in = direct ? x : internal({outer, mid, 1, inner});
      if (!direct) add_node(NodeOp::Reshape, {x}, in);
      result_dims = {outer, 1, 1, inner};
      const uint32_t final_id =
          result_dims == out_dims ? output(node.outputs[0]) : internal(result_dims);
      if (a.sum) {
        const uint32_t mean = internal(result_dims);
        add_node(NodeOp::GlobalAvgPool2d, {in}, mean);
        add_node(NodeOp::Multiply, {mean, add_constant({1}, {static_cast<float>(mid)})},
                 final_id);
      } else {
        add_node(NodeOp::GlobalAvgPool2d, {in}, final_id);
      }
      result = final_id;
    }
    if (result_dims != out_dims) add_node(NodeOp::Reshape, {result}, output(node.outputs[0]));
  }
  // (amax: max pooling over the window [mid, 1] of x seen as [outer, mid, 1, inner]; NaN
  // handling is XNNPACK's, where the portable kernel propagates NaN.)

  /// A norm's gamma and beta of C values: the weight or bias in place (an Alias); None: the
  /// attributes' ones / zeros, embedded.
  std::pair<uint32_t, uint32_t> norm_affine(const Node& node, const std::vector<float>& gamma,
                                            const std::vector<float>& beta) {
    const uint64_t c = gamma.size();
    const uint32_t g = is_none(g_, node.args[2]) ? add_constant({c}, gamma)
                                                 : constant_as(node.args[2], {c});
    const uint32_t b = is_none(g_, node.args[3]) ? add_constant({c}, beta)
                                                 : constant_as(node.args[3], {c});
    return {g, b};
  }

  /// layer_norm over the last dim: tern's own node (op 25).
  void lower_layer_norm(const Node& node) {
    const LayerNormAttrs a = layer_norm_attrs(g_, node);
    const uint32_t x = activation(node.args[0]);
    const auto [gamma, beta] = norm_affine(node, a.gamma, a.beta);
    BlobNode& n = add_node(NodeOp::LayerNorm, {x, gamma, beta}, output(node.outputs[0]));
    n.fparams[0] = a.eps;
    n.fparams[1] = 0.0f;
  }

  /// rms_norm over the last dim: op 25 in RMS mode (params[0] = 1; beta unused, zeros).
  void lower_rms_norm(const Node& node) {
    const LayerNormAttrs a = rms_norm_attrs(g_, node);
    const uint32_t x = activation(node.args[0]);
    const uint64_t c = a.gamma.size();
    const uint32_t gamma = is_none(g_, node.args[2]) ? add_constant({c}, a.gamma)
                                                     : constant_as(node.args[2], {c});
    BlobNode& n = add_node(NodeOp::LayerNorm, {x, gamma, add_constant({c}, a.beta)},
                           output(node.outputs[0]));
    n.params[0] = 1;
    n.fparams[0] = a.eps;
    n.fparams[1] = 0.0f;
  }

  /// group_norm of an NHWC activation: tern's own node (op 30) over its channels-last dims.
  /// A 3-D x [N, C, L] (wav2vec2's first feature layer) is read and written as NHWC
  /// [N, 1, L, C] (nlc_input / nlc_output), as a conv1d's.
  void lower_group_norm(const Node& node) {
    const GroupNormAttrs a = group_norm_attrs(g_, node);
    const bool three_d = g_.values[static_cast<size_t>(node.args[0])].sizes.size() == 3;
    const uint32_t x = three_d ? nlc_input(node.args[0]) : activation(node.args[0]);
    const auto [gamma, beta] = norm_affine(node, a.gamma, a.beta);
    const uint32_t y = three_d ? nlc_output(node.outputs[0]) : output(node.outputs[0]);
    BlobNode& n = add_node(NodeOp::GroupNorm, {x, gamma, beta}, y);
    n.params[0] = static_cast<uint32_t>(a.groups);
    n.fparams[0] = a.eps;
    n.fparams[1] = 0.0f;
  }

  void lower_pool(const Node& node, bool is_max) {
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

  void lower_pad(const Node& node) {
    const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
    const size_t rank = xv.sizes.size();
    std::vector<int64_t> pre, post;
    float value;
    bool reflect;
    pad_amounts(g_, node, rank, &pre, &post, &value, &reflect);
    if (reflect) {  // a GatherMap over x's bytes as they lie (TResNet's blur pool)
      std::vector<size_t> order(rank);
      for (size_t d = 0; d < rank; ++d) order[d] = d;
      if (is_nhwc(node.args[0])) order = {0, 2, 3, 1};
      emit_gather_map(reflect_pad_plan(xv.sizes, pre, post, order), activation(node.args[0]),
                      output(node.outputs[0]));
      return;
    }
    if (is_nhwc(node.args[0])) {  // tern dims N C H W -> XNNPACK dims N H W C
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
      BlobNode& n = add_node(planes ? NodeOp::ResizeBilinearToPlanes : NodeOp::ResizeBilinear,
                             {x}, output(node.outputs[0]));
      n.params[0] = static_cast<uint32_t>(ys[2]);
      n.params[1] = static_cast<uint32_t>(ys[3]);
      n.params[2] = align ? 1u : 0u;
    } else if (op == "tern::grouped_mm") {
      lower_grouped_matmul(node);
    } else if (op == "tern::grouped_linear") {
      lower_quant_grouped(node);
    } else if (is_runtime_index_rows(g_, node)) {
      lower_index_rows(node);
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
      BlobNode& n = add_node(NodeOp::UnaryMath, {activation(node.args[0])},
                             output(node.outputs[0]));
      n.params[0] = 11;  // UnaryMathFn::Pow (kernels/unary_math.h)
      std::memcpy(&n.params[1], &e, 4);
    } else if (op == "tern::pow" && small_pow_exponent(g_, node) == 0.5) {  // F.normalize's norm
      add_node(NodeOp::SquareRoot, {activation(node.args[0])}, output(node.outputs[0]));
    } else if (op == "tern::pow") {
      const uint32_t x = activation(node.args[0]);
      const double e = small_pow_exponent(g_, node);
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
    } else if (op == "tern::cumsum") {  // tern's running sum (op 39) along x's blob dim
      int64_t d = cumsum_dim(g_, node);
      if (is_nhwc(node.args[0])) d = std::vector<int64_t>{0, 3, 1, 2}[static_cast<size_t>(d)];
      BlobNode& n = add_node(NodeOp::Cumsum, {activation(node.args[0])}, output(node.outputs[0]));
      n.params[0] = static_cast<uint32_t>(d);
    } else if (is_unary_math_op(op)) {  // tern's unary math (op 38)
      const UnaryMathAttrs a = unary_math_attrs(g_, node);
      BlobNode& n = add_node(NodeOp::UnaryMath, {activation(node.args[0])},
                             output(node.outputs[0]));
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

  const Graph& g_;
  const DelegateRegion& r_;
  std::map<int, uint32_t> input_arg_;
  std::map<int, uint32_t> output_arg_;
  std::map<int, uint32_t> ids_;  ///< tern value id -> blob value index
  std::map<int, int> uses_;      ///< tern value id -> how many node arguments read it
  std::map<int, int> region_uses_;  ///< tern value id -> how many region node arguments read it
  std::set<int> listed_;            ///< tern values that are an element of a tensor list
  std::map<int, uint32_t> sources_;  ///< tern constant -> its Source blob value
  std::vector<bool> plain_;      ///< tern value id -> a channels-last 4-D tensor (layout_plan.h)
  std::set<uint32_t> aliased_;   ///< blob values standing for several tern values (permutes)
  std::set<uint32_t> viewed_;    ///< blob values some View value reads
  std::map<int, StridedView> lazy_;
  /// 3-D values made by a conv1d or group norm in NHWC order (nlc_output) and 5-D ones made by
  /// a conv3d in NDHWC order (ndhwc_output): views of their blob values, not copied yet.
  std::set<int> channels_last_results_;
  /// 4-D activations copied into the other layout for a reader that needs it (activation_as).
  std::map<int, uint32_t> relaid_;
  /// channels_repeated's copies: (x, m) -> the repeated value.
  std::map<std::pair<uint32_t, int64_t>, uint32_t> repeated_;
  std::set<int> folded_views_;   ///< view nodes folded into a linear or a concat (no blob node)
  std::map<int, int> fused_compares_;  ///< a comparison's bool output -> the region node (fused
                                       ///< into each select reading it: no blob node)
  std::set<int> gelu_pieces_;    ///< a matched pattern's nodes but its last (no blob node)
  std::map<int, TanhGeluMatch> tanh_gelus_;  ///< its last node -> the pattern
  std::map<int, LstmCellMatch> lstm_cells_;  ///< its last node -> the pattern
  std::map<int, GruCellMatch> gru_cells_;    ///< its last node -> the pattern
  std::map<int, AttentionMatch> attentions_;  ///< its second bmm -> the pattern
  std::map<int, ConcatShuffleMatch> shuffle_folds_;  ///< cat node -> its channel shuffle
  std::map<int, std::pair<int, int>> linear_folds_;  ///< linear node -> (x, output) values
  std::vector<LoweredCat> lowered_cats_;  ///< the cats lowered so far (a later cat may extend one)
  std::vector<BlobValue> values_;
  std::vector<BlobNode> nodes_;
  std::vector<BlobRecipe> recipes_;
  std::vector<uint8_t> data_;
};

}  // namespace

std::vector<uint8_t> lower_region(const Graph& graph, const DelegateRegion& region) {
  return Lowering(graph, region).run();
}

}  // namespace tern::compiler::cpu_compile
