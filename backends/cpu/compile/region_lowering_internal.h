// The cpu backend's lowering of one delegate region to a cpu blob: the Lowering class shared by
// the files that lower each family of nodes (internal to backends/cpu/compile; the entry point is
// lower_region() in region_lowering.h). Each group of member functions below is defined in the
// file its comment names.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/compile/affine_index.h"
#include "backends/cpu/compile/attention_attrs.h"
#include "backends/cpu/compile/attention_match.h"
#include "backends/cpu/compile/bottleneck_match.h"
#include "backends/cpu/compile/channel_mix_match.h"
#include "backends/cpu/compile/concat_tree.h"
#include "backends/cpu/compile/concat_shuffle_match.h"
#include "backends/cpu/compile/cpu_options.h"
#include "backends/cpu/compile/deconv_attrs.h"
#include "backends/cpu/compile/dynamic_rows.h"
#include "backends/cpu/compile/gather_map_plan.h"
#include "backends/cpu/compile/grid_sample_attrs.h"
#include "backends/cpu/compile/group_sum_match.h"
#include "backends/cpu/compile/grouped_matmul.h"
#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/index_rows.h"
#include "backends/cpu/compile/layout_plan.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/quant_lowering.h"
#include "backends/cpu/compile/recurrent_cell_match.h"
#include "backends/cpu/compile/rms_norm_match.h"
#include "backends/cpu/compile/softmax_mix_match.h"
#include "backends/cpu/compile/strided_view.h"
#include "backends/cpu/compile/tanh_gelu_match.h"
#include "backends/cpu/compile/where_select.h"
#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile::lowering {

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
inline Recipe permute(const std::vector<int64_t>& dims, std::initializer_list<uint32_t> perm) {
  Recipe rc(RecipeOp::Permute);
  for (uint32_t i = 0; i < 4; ++i) rc.r.params[i] = static_cast<uint32_t>(dims[i]);
  uint32_t i = 4;
  for (uint32_t p : perm) rc.r.params[i++] = p;
  return rc;
}

class Lowering {
 public:
  Lowering(const Graph& g, const DelegateRegion& r, const CpuOptions& options);
  std::vector<uint8_t> run();

 private:
  /// Whether blob value `id` stands for more than one tern value (a permute's no-op alias):
  /// nothing may fold into the node that makes it, which would change what the others read.
  bool shared(uint32_t id) const { return aliased_.count(id) != 0; }
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
  /// The blob value of 5-D x [N, C, D, H, W] in NDHWC order, [N, D, H, W, C]: x's own value
  /// when its view is already that (the result of a conv3d), else a StridedCopy.
  uint32_t ndhwc_input(int vid) { return channels_last_copy(view_of(vid)); }
  /// Whether XNNPACK's fully-connected node computes a product of depth k correctly. The
  /// Debian snapshot (2022-02) picks K-by-4 "s4" GEMM kernels on some x86 hosts (AMD EPYC
  /// here) and, run on a pool of two or more threads, returns wrong columns past the first
  /// 16 when k is not a multiple of 4 (max error ~1 on unit inputs; its convolutions are
  /// unaffected). Such products run on tern's own GEMM instead.
  static bool xnn_fc_is_exact(int64_t k) { return k % 4 == 0; }
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
  /// A conv's: its bottom / right padding may differ (a zero pad folded in, pad_fold.h).
  static void set_window_params(BlobNode& n, const ConvAttrs& a, int64_t kh, int64_t kw) {
    set_window_params<ConvAttrs>(n, a, kh, kw);
    n.params[cpu::kPadBottom] = static_cast<uint32_t>(a.pad_end[0]);
    n.params[cpu::kPadRight] = static_cast<uint32_t>(a.pad_end[1]);
  }
  static constexpr int64_t kWinogradMinTiles = 32;    ///< of 2x2, for F(2x2, 3x3)
  static constexpr int64_t kWinogradF4MinTiles = 49;  ///< of 4x4, for F(4x4, 3x3)
  /// A cat this region lowered: its inputs (graph values, in order), output and how it was cut.
  struct LoweredCat {
    std::vector<int> inputs;
    int output = -1;
    size_t xdim = 0;
    uint64_t rows = 0;
    bool nhwc = false;
  };
  /// Where a RowConcat (op 29) reads one input's rows: a blob value, the row stride and the
  /// offset of row 0 (row width: the input's last XNNPACK dim).
  struct RowRead {
    uint32_t base = 0;
    int64_t stride = 0;
    int64_t offset = 0;
  };

  // region_lowering.cpp: dispatch of each node to its lowering, and the blob's bytes
  void lower_node(const Node& node);
  std::vector<uint8_t> serialize() const;

  // lowering_values.cpp: blob values (constants, activations, outputs, views) and nodes
  uint32_t add_value(ValueKind kind, ValueLayout layout, const std::vector<uint64_t>& dims,
                     uint32_t arg, uint32_t dynamic_dim = cpu::kNoValue);
  uint32_t add_constant(const std::vector<uint64_t>& dims, const std::vector<float>& data);
  uint32_t add_constant_words(const std::vector<uint64_t>& dims, const void* words, size_t count);
  uint32_t source(int vid);
  bool sourceable(int vid) const;
  cpu::RecipeSource graph_source(int vid) const;
  uint32_t add_derived(const std::vector<uint64_t>& dims, Recipe rc);
  uint32_t constant_as(int vid, const std::vector<uint64_t>& dims, double scale = 1.0,
                       double shift = 0.0);
  static ValueLayout layout_of(const std::vector<int64_t>& sizes);
  bool is_plain_4d(int vid) const;
  ValueLayout layout_of_value(int vid) const;
  uint32_t dynamic_dim_of(int vid) const;
  std::vector<uint64_t> dims_of(int vid) const;
  uint32_t activation(int vid);
  uint32_t typed_input(int vid, ValueLayout layout, const char* what);
  uint32_t activation_as(int vid, bool plain);
  uint32_t output(int vid);
  uint32_t internal(const std::vector<uint64_t>& dims);
  /// Gives each internal value a node makes from a dynamic input that input's dynamic mask
  /// (dynamic_rows.h: every node on dynamic values is a rows map; an intermediate of a node
  /// lowered to several, such as silu's sigmoid, varies with it). Run once, after lowering.
  void mark_dynamic_internals();
  uint32_t add_view(uint32_t base, uint64_t offset, const std::vector<uint64_t>& dims);
  uint32_t binary_operand(int vid, size_t out_rank, double scale, bool out_plain = false);
  BlobNode& add_node(NodeOp op, std::vector<uint32_t> inputs, uint32_t out);
  uint32_t made_value(int in) const;
  void rename_result(int in, int out);
  float* constant_data(uint32_t id);
  void retarget_output(int from, int to);
  bool made_by_own_kernel(uint32_t id) const;
  uint32_t activation_or_constant(int vid);

  // lower_convs.cpp: convolutions and the residual adds folded into them
  static bool is_pointwise(const ConvAttrs& a, const std::vector<int64_t>& w);
  void lower_conv(const Node& node);
  void lower_conv1d(const Node& node);
  uint32_t nlc_input(int vid);
  uint32_t channels_last_copy(const StridedView& v);
  uint32_t channels_last_base(const StridedView& v, const std::vector<uint64_t>& dims) const;
  uint32_t nlc_output(int vid);
  uint32_t ndhwc_output(int vid);
  void lower_conv3d(const Node& node);
  void lower_deconv(const Node& node);
  void emit_conv(const ConvCall& c);
  void read_through_view(uint32_t id, StridedView* v) const;
  uint32_t channels_repeated(uint32_t x, int64_t m);
  void lower_bottleneck(const BottleneckMatch& m);
  void lower_packed_conv(const ConvCall& cc);
  /// The Winograd tile (2 or 4 outputs a side) a conv takes, or 0: none (a direct conv).
  int winograd_tile(const ConvAttrs& a, const std::vector<int64_t>& w,
                    const std::vector<int64_t>& y) const;
  void lower_winograd_conv(const ConvCall& cc, int64_t o, int64_t c, int tile);
  bool is_epilogue_operand(const BlobNode& last, int made, int other, int out) const;
  bool fuse_residual_into_conv(const Node& node, double alpha);
  bool fuse_residual_into_conv3d(const Node& node);

  // lower_gemms.cpp: linear layers, matmuls, expert products, recurrent cells, GEMM epilogues
  void match_view_linear_views();
  void lower_linear(const Node& node);
  void lower_quant(const Node& node, bool embedding);
  static bool is_tiny_gemm(int64_t m, int64_t n, int64_t k);
  void lower_xnn_fc(const Node& node, int x_vid, int y_vid);
  void lower_packed_fc(const Node& node, int64_t n, int64_t k, int x_vid = -1, int y_vid = -1);
  static bool has_activation(const BlobNode& last);
  bool fuse_activation_into_gemm(const Node& node, cpu::GemmActivation act);
  bool fuse_activation_into_gemm(int in, int out, cpu::GemmActivation act, int reads,
                                 float alpha = 0.0f);
  void lower_tanh_gelu(const TanhGeluMatch& m);
  void lower_rms_norm_match(const RmsNormMatch& m);
  void lower_group_sum(const GroupSumMatch& m);
  void lower_channel_mix(const ChannelMixMatch& m);
  void lower_softmax_mix(const SoftmaxMixMatch& m);
  void lower_lstm_cell(const LstmCellMatch& m);
  void lower_gru_cell(const GruCellMatch& m);
  uint32_t cell_state(int vid, uint64_t h, uint64_t* rows);
  BlobNode* maker_of(uint32_t id);
  bool fuse_clamp_into_fc(const Node& node, float lo, float hi);
  bool fuse_multiplier_into_gemm(const Node& node);
  bool fuse_batch_norm_into_epilogue(const Node& node, const BatchNormAffine& a);
  bool fuse_hardsigmoid_into_producer(const Node& node);
  bool fold_hardsigmoid_into_recipes(BlobNode& last);
  void lower_grouped_matmul(const Node& node);
  void lower_quant_grouped(const Node& node);
  void lower_batch_matmul(const Node& node);

  // lower_copies.cpp: concatenations, permutes, views, copies, gathers, upsampling, pads
  void lower_index_rows(const Node& node);
  void lower_f32_embedding(const Node& node);
  void lower_concat(const Node& node);
  uint32_t cat_part(int vid, int out);
  uint32_t emit_concat_tree(const ConcatTree& t, size_t id, const std::vector<int>& ins, int out,
                            size_t cat_dim, uint64_t rows,
                            const std::function<std::vector<uint64_t>(const std::vector<int64_t>&)>& xdims);
  const LoweredCat* longest_cat_prefix(const std::vector<int>& ins, size_t xdim, uint64_t rows,
                                       bool nhwc) const;
  bool pending_row_read(int vid, RowRead* r);
  void lower_row_concat(const std::vector<int>& ins, int out, uint32_t unit, int64_t skip = 0,
                        int64_t width = 0);
  bool is_layout_permute(const Node& node) const;
  void lower_permute(const Node& node);
  bool is_nhwc(int vid) const;
  StridedView view_of(int vid);
  void emit_copy(const StridedView& v, bool nhwc, uint32_t out);
  uint32_t materialize(int vid);
  void lower_index_map(const Node& node);
  void lower_index_select(const Node& node);
  void lower_gather_map(const Node& node);
  void emit_gather_map(const GatherMapPlan& plan, uint32_t x, uint32_t y);
  void lower_grid_sample(const Node& node);
  bool copy_in_nhwc_order(const StridedView& v, int y);
  void lower_view(const Node& node);
  bool reshape_in_place(uint32_t in, int y);
  void lower_nearest_upsample(const Node& node);
  void lower_pad(const Node& node);

  // lower_attention.cpp: softmax and fused attention
  bool softmax_over_inner_dim(const Node& node);
  void lower_softmax_moved(const Node& node, size_t dim);
  static std::vector<uint64_t> group_folded(std::vector<uint64_t> d, uint64_t rows);
  uint32_t fold_group_dim(uint32_t x, uint64_t rows);
  static void fold_group_bias(SdpaAttrs* a, int64_t l);
  static void expand_mask_keys(std::vector<float>* bias, std::vector<int64_t>* dims, int64_t keys);
  static bool is_causal_mask(const std::vector<float>& bias, const std::vector<int64_t>& dims);
  void add_attention(uint32_t q, uint32_t k, bool k_transposed, uint32_t v, uint32_t mask,
                     const std::vector<int64_t>& scores, double scale, int64_t causal_period,
                     bool empty_rows_nan, uint32_t out);
  void lower_sdpa(const Node& node);
  uint32_t untransposed_key(int kt);
  void lower_eager_attention(const AttentionMatch& m);
  uint32_t transposed_copy(int x);
  uint32_t in_place_or_copy(const StridedView& x);

  // lower_elementwise.cpp: binaries, selects, reductions, norms, pools
  void lower_binary(const Node& node);
  void lower_select(const Node& node);
  bool is_small_pow(const Node& node) const;
  void lower_triangle(const Node& node);
  void lower_where(const Node& node);
  void lower_batch_norm(const Node& node);
  bool lower_channel_affine_binary(const Node& node, double alpha);
  void channel_affine(const Node& node, int x, const BatchNormAffine& a);
  void lower_reduction(const Node& node);
  std::pair<uint32_t, uint32_t> norm_affine(const Node& node, const std::vector<float>& gamma,
                                            const std::vector<float>& beta);
  void lower_layer_norm(const Node& node);
  void lower_rms_norm(const Node& node);
  void lower_group_norm(const Node& node);
  void lower_pool(const Node& node, bool is_max);

  const Graph& g_;
  const DelegateRegion& r_;
  const CpuOptions options_;
  std::map<int, uint32_t> input_arg_;
  std::map<int, uint32_t> output_arg_;
  std::map<int, uint32_t> ids_;      ///< tern value id -> blob value index
  std::map<int, int> uses_;          ///< tern value id -> how many node arguments read it
  std::map<int, int> region_uses_;   ///< tern value id -> how many region node arguments read it
  std::set<int> listed_;             ///< tern values that are an element of a tensor list
  std::map<int, uint32_t> sources_;  ///< tern constant -> its Source blob value
  std::vector<bool> plain_;     ///< tern value id -> a channels-last 4-D tensor (layout_plan.h)
  std::set<uint32_t> aliased_;  ///< blob values standing for several tern values (permutes)
  std::set<uint32_t> viewed_;   ///< blob values some View value reads
  std::set<uint32_t> channel_affines_;  ///< outputs of channel_affine's 1x1 depthwise nodes
  std::map<int, StridedView> lazy_;
  /// 3-D values made by a conv1d or group norm in NHWC order (nlc_output) and 5-D ones made by
  /// a conv3d in NDHWC order (ndhwc_output): views of their blob values, not copied yet.
  std::set<int> channels_last_results_;
  /// 4-D activations copied into the other layout for a reader that needs it (activation_as).
  std::map<int, uint32_t> relaid_;
  /// channels_repeated's copies: (x, m) -> the repeated value.
  std::map<std::pair<uint32_t, int64_t>, uint32_t> repeated_;
  std::set<int> folded_views_;  ///< view nodes folded into a linear or a concat (no blob node)
  std::map<int, int> fused_compares_;  ///< a comparison's bool output -> the region node (fused
                                       ///< into each select reading it: no blob node)
  std::set<int> gelu_pieces_;          ///< a matched pattern's nodes but its last (no blob node)
  std::map<int, TanhGeluMatch> tanh_gelus_;          ///< its last node -> the pattern
  std::map<int, RmsNormMatch> rms_norms_;            ///< its last node -> the pattern
  std::map<int, GroupSumMatch> group_sums_;          ///< its sum node -> the pattern
  std::map<int, ChannelMixMatch> channel_mixes_;     ///< its last permute -> the pattern
  std::map<int, SoftmaxMixMatch> softmax_mixes_;     ///< its conv -> the pair
  std::map<int, LstmCellMatch> lstm_cells_;          ///< its last node -> the pattern
  std::map<int, GruCellMatch> gru_cells_;            ///< its last node -> the pattern
  std::map<int, AttentionMatch> attentions_;         ///< its second bmm -> the pattern
  std::map<int, ConcatShuffleMatch> shuffle_folds_;  ///< cat node -> its channel shuffle
  std::map<int, std::pair<int, int>> linear_folds_;  ///< linear node -> (x, output) values
  std::vector<LoweredCat> lowered_cats_;  ///< the cats lowered so far (a later cat may extend one)
  std::vector<BlobValue> values_;
  std::vector<BlobNode> nodes_;
  std::vector<BlobRecipe> recipes_;
  std::vector<uint8_t> data_;
};

}  // namespace tern::compiler::cpu_compile::lowering
