// Reading and checking a node's operands and attributes for the cpu backend (internal to
// backends/cpu/compile). Every function throws Unsupported with a reason on anything the
// backend does not take.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

/// Why a node cannot be delegated.
class Unsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Most dims XNNPACK takes.
constexpr size_t kMaxRank = 6;

/// Value `id` (Unsupported when out of range).
const Value& value_at(const Graph& g, int id);
/// Argument `index` of `node` (Unsupported naming `what` when missing).
int arg(const Node& node, size_t index, const char* what);
/// The one output of `node`: an f32 tensor, rank 1..6, not constant/state, not an input.
const Value& single_output(const Graph& g, const Node& node);
/// Value `id` as an f32 tensor of rank 1..6 with no zero dim.
const Value& f32_tensor(const Graph& g, int id, const char* what);
/// Value `id` as an f32 tensor that is not a constant (an activation).
const Value& activation_tensor(const Graph& g, int id, const char* what);
/// Value `id` as an f32 constant tensor of rank `rank`.
const Value& constant_tensor(const Graph& g, int id, const char* what, size_t rank);
/// Value `id` when its value is known at compile time (Unsupported for a method input).
const Value& static_value(const Graph& g, int id, const char* what);
/// An Int or Double value as a double.
double number(const Graph& g, int id, const char* what);
/// Whether value `id` is a scalar known at compile time (an Int or Double value, or a
/// one-element f32 constant tensor), into *out; false (nothing thrown) otherwise.
bool scalar_constant(const Graph& g, int id, double* out);
int64_t int_value(const Graph& g, int id, const char* what);
bool bool_value(const Graph& g, int id, const char* what);
bool is_none(const Graph& g, int id);
/// Whether some node of `g` makes value `id` (else it is a method input or a constant).
bool made_by_a_node(const Graph& g, int id);
/// An Int or an IntList of 1 or 2 values (one repeats) into out[2]; an empty list gives
/// `empty_default` (Unsupported when null); each value must be >= min_value.
void spatial(const Graph& g, int id, const char* what, const int64_t* empty_default,
             int64_t min_value, int64_t out[2]);

/// The f32 data of a constant tensor.
std::vector<float> constant_floats(const Value& v);

/// Whether NHWC and NCHW bytes differ for these dims (rank 4 with C > 1 and H*W > 1).
bool layout_sensitive(const std::vector<int64_t>& dims);
/// XNNPACK dims of a tern tensor: rank 4 goes NHWC, others stay.
std::vector<uint64_t> xnn_dims(const std::vector<int64_t>& dims);
/// "[1, 3, 224, 224]".
std::string shape_str(const std::vector<int64_t>& dims);

/// Output size of a sliding window (floor mode); -1 when the window does not fit.
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation);

struct ConvAttrs {
  int64_t stride[2];
  int64_t pad[2];      ///< top, left
  int64_t pad_end[2];  ///< bottom, right: pad's unless a zero pad was folded in (pad_fold.h)
  int64_t dilation[2];
  int64_t groups;
  bool depthwise;  ///< groups == C > 1 and one input channel per group
};
/// Checks a tern::conv2d node (shapes included) and reads its attributes.
ConvAttrs conv_attrs(const Graph& g, const Node& node);
/// A conv3d's window: per spatial dim (depth, height, width) stride, symmetric padding and
/// dilation, and the groups.
struct Conv3dAttrs {
  int64_t stride[3];
  int64_t pad[3];
  int64_t dilation[3];
  int64_t groups;
};
/// Checks a tern::conv3d node (x [N, C, D, H, W] an activation, weight [O, C / groups, KD, KH,
/// KW] and bias constants; shapes included) and reads its attributes.
Conv3dAttrs conv3d_attrs(const Graph& g, const Node& node);
/// upsample_nearest2d(x [N, C, H, W], scale_h, scale_w) -> [N, C, OH, OW]: the source row of
/// each output row ({rows, cols}) by the portable index rule (runtime/kernels/portable/
/// upsample_nearest2d.cpp), and the integer factors {kh, kw} when every output row and column
/// o maps to o / k (empty otherwise: GhostNetV2's 3x3 gate to 7x7, a map gather). Throws
/// Unsupported for malformed nodes and for a map gather beyond 2^24 output elements.
struct NearestUpsample {
  std::vector<int64_t> rows, cols;
  std::vector<int64_t> factors;
};
NearestUpsample nearest_upsample(const Graph& g, const Node& node);

/// upsample_bilinear2d(x [N, C, H, W], align_corners, scale_h, scale_w) -> [N, C, OH, OW] as
/// XNNPACK's bilinear resize computes it: returns align_corners. Throws Unsupported for a
/// scale (without align_corners) other than H / OH, W / OW in f32 (XNNPACK derives the scale
/// from the sizes).
bool bilinear_upsample_align_corners(const Graph& g, const Node& node);

/// Checks a tern::conv1d node (x [N, C, L], weight [O, C / groups, K]) and reads its attributes
/// as those of a conv2d of height 1 (index 0: stride and dilation 1, no padding).
ConvAttrs conv1d_attrs(const Graph& g, const Node& node);

struct PoolAttrs {
  int64_t kernel[2];
  int64_t stride[2];
  int64_t pad[2];
  int64_t dilation[2];
  /// Extra bottom (height) / right (width) padding that gives ceil_mode's output size with
  /// XNNPACK's floor-mode pooling (0 in floor mode or where ceil mode gives the same size).
  int64_t extra_pad[2];
  /// avg_pool2d with count_include_pad=True and padding: XNNPACK divides by the window's pixels
  /// inside its input, so the padding becomes an explicit zero pad (XNNPACK's constant pad)
  /// before a pool without it (`pad` then applies to that pad node, extra_pad to the pool).
  bool zero_pad_first;
  /// A 1x1 window (never padded: a pad is at most half the window): the pool picks
  /// x[:, :, ::stride_h, ::stride_w], lowered as a strided copy (XNNPACK's pools take windows
  /// of 2+ pixels). EfficientFormer V2 downsamples its attention queries so.
  bool subsample;
};
/// Checks a tern::max_pool2d / tern::avg_pool2d node and reads its attributes.
PoolAttrs pool_attrs(const Graph& g, const Node& node, bool is_max);

/// Checks a tern::cat node the backend takes (1+ f32 tensors of one rank, along any dim, at
/// least one an activation; the others may be constants, e.g. a ViT's class token) and returns
/// its inputs' value ids.
std::vector<int> concat_inputs(const Graph& g, const Node& node);

/// A standalone inference batch_norm as one multiply-add per channel: y = x * scale + shift,
/// scale = weight / sqrt(running_var + eps), shift = bias - running_mean * scale (computed in
/// double and rounded once, as the portable kernel does).
struct BatchNormAffine {
  std::vector<float> scale;  ///< [C]
  std::vector<float> shift;  ///< [C]
};
/// Checks a tern::batch_norm node (x an activation [N, C], [N, C, L] or [N, C, H, W]; weight,
/// bias None or constants [C]; running_mean, running_var constants [C]; eps a number) and
/// folds its constants.
BatchNormAffine batch_norm_affine(const Graph& g, const Node& node);

/// A binary op of a 4-D activation x [N, C, H, W] (C > 1) and an f32 constant holding one
/// number per channel ([C, 1, 1] or [1, C, 1, 1]) as the per-channel affine it is: y = x ·
/// scale + shift (x + k, x − k, k − x and their alphas, x · k, x / k as x · (1 / k)), in the
/// BatchNormAffine form. `x` is the activation's id. An image model's input normalisation,
/// (x − mean) / std, is two of them.
struct ChannelAffineBinary {
  int x = -1;
  BatchNormAffine affine;
};
/// The node as a ChannelAffineBinary, or x = -1 when it is not one (no refusal: the node is
/// then an ordinary binary op).
ChannelAffineBinary channel_affine_binary(const Graph& g, const Node& node, double alpha);

/// A layer_norm over the last dim: gamma and beta (ones / zeros where None) and eps.
struct LayerNormAttrs {
  std::vector<float> gamma;  ///< [C]
  std::vector<float> beta;   ///< [C]
  float eps;
};
/// Checks a tern::layer_norm node (x an activation, normalized_shape [C] = x's last dim, weight
/// and bias None or constants [C], eps a positive number) and reads its attributes.
LayerNormAttrs layer_norm_attrs(const Graph& g, const Node& node);
/// Checks a tern::rms_norm node (x an activation, normalized_shape [C] = x's last dim, weight
/// None or a constant [C], eps None (f32's machine epsilon) or a positive number) and reads
/// its attributes (beta all 0).
LayerNormAttrs rms_norm_attrs(const Graph& g, const Node& node);

/// A group_norm of a 4-D [N, C, H, W] or 3-D [N, C, L] activation: groups, gamma and beta (ones / zeros where
/// None) and eps.
struct GroupNormAttrs {
  int64_t groups;
  std::vector<float> gamma;  ///< [C]
  std::vector<float> beta;   ///< [C]
  float eps;
};
/// Checks a tern::group_norm node (x a 4-D or 3-D activation, num_groups dividing its C, weight and
/// bias None or constants [C], eps a positive number) and reads its attributes.
GroupNormAttrs group_norm_attrs(const Graph& g, const Node& node);

/// Clamp bounds of relu / hardtanh / clamp.
void clamp_bounds(const Graph& g, const Node& node, float* lo, float* hi);

/// The negative slope of a tern::leaky_relu (x, negative_slope): finite and not negative (the
/// delegate computes max(x, slope·x), or min(x, slope·x) for a slope above 1).
float leaky_relu_slope(const Graph& g, const Node& node);

/// Per-dim pre/post paddings of a tern::pad over a rank-`rank` tensor (tern order), its fill
/// value (constant mode) and whether its mode is "reflect" (else "constant").
void pad_amounts(const Graph& g, const Node& node, size_t rank, std::vector<int64_t>* pre,
                 std::vector<int64_t>* post, float* value, bool* reflect);

/// Checks a node of a binary elementwise op (add sub mul div) and returns alpha (1 unless
/// add/sub give one).
double binary_alpha(const Graph& g, const Node& node);

/// tern::exp(x) or tern::softplus(x, beta?, threshold?) on an f32 activation of the output's
/// shape: the cpu delegate's unary math node (op 38; kernels/unary_math.h). Unsupported for
/// anything else (a softplus beta of 0 or a non-finite beta or threshold included).
struct UnaryMathAttrs {
  uint32_t fn = 1;  ///< 1 exp, 2 softplus, 3 sin, 4 cos, 5 log, 6 expm1, 7 log1p, 8 acos,
                    ///< 9 asin, 10 atan, 11 pow (UnaryMathFn)
  float beta = 1.0f;  ///< softplus's beta; pow's exponent
  float threshold = 20.0f;
};
UnaryMathAttrs unary_math_attrs(const Graph& g, const Node& node);

/// exp, softplus, sin, cos, log, expm1, log1p, acos, asin, atan: the ops tern's unary math node
/// (op 38) runs (and pow by an exponent other than 2, 3 or 0.5: pow_math_exponent).
inline bool is_unary_math_op(const std::string& op) {
  return op == "tern::exp" || op == "tern::softplus" || op == "tern::sin" || op == "tern::cos" ||
         op == "tern::log" || op == "tern::expm1" || op == "tern::log1p" || op == "tern::acos" ||
         op == "tern::asin" || op == "tern::atan";
}

/// tern::cumsum(x, dim) of an f32 activation (out f32, x's shape): the dim, wrapped. Unsupported
/// for anything else (an integer x: the portable kernel's).
int64_t cumsum_dim(const Graph& g, const Node& node);

/// gelu's form: true for approximate "tanh", false for "none" (or the argument left out).
/// Unsupported for anything else.
bool gelu_tanh_form(const Graph& g, const Node& node);

/// Checks a tern::mean over the spatial dims {2, 3} of an [N, C, H, W] activation (global
/// average pooling) and returns keepdim.
bool global_mean_keepdim(const Graph& g, const Node& node);

/// Whether `op` is one of the view ops the backend takes (reshape view flatten squeeze
/// unsqueeze).
bool is_cpu_view_op(const std::string& op);

}  // namespace tern::compiler::cpu_compile
