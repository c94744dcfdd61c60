// The cpu delegate blob (version: kBlobVersion below), shared by the compile half (writer) and the
// runtime half (reader). Plain structs only (no STL): the runtime includes this file.
// The byte layout is documented in backends/cpu/README.md; all fields are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::cpu {

/// The blob's first four bytes.
constexpr char kBlobMagic[4] = {'T', 'C', 'P', 'U'};
/// The blob format version this build writes and reads. A blob of another version is refused
/// with DelegateInvalidCompatibility (the method then runs the portable fallback).
constexpr uint32_t kBlobVersion = 30;
// Versions: 3: PackedWinogradConv2d, Gelu; 4: PackedBottleneck; 5: SiLU and sigmoid activations (4,
// 5), bottleneck SiLU epilogue (4) and squeeze-excitation; 6: Concat; 7: ops 23-24 quantized
// weights, op 25 LayerNorm; 8: weights made at prepare from the program's constants (Source /
// Derived values, recipes); 9: op 26 BatchMatMul, op 27 StridedCopy, Concat along any dim
// (params[0] outer rows), op 28 SquareRoot; 10: grouped op 18 (params[13] groups, PackConv
// params[4]); 11: op 29 RowConcat; 12: BlobValue::dynamic_mask (bounded-dynamic rows of ops 17 and
// 23); 13: op 30 GroupNorm; 14: constant inputs of ops 22 / 29 (one must be data), op 31
// ResizeBilinear; 15: op 32 Attention, 4 input slots a node (100 bytes); 16: op 33 PackedConv3d, op
// 34 ResizeBilinearToPlanes; 17: signed StridedCopy strides (a flip), ops 35 Maximum, 36 Minimum;
// 18: View values, op 37 LstmCell, op 38 UnaryMath, op 39 Cumsum, op 40 GruCell; 19: sin, cos and
// log in op 38, op 41 Deconv2d; 20: op 32's q may be a constant, op 26's a too, op 42 GatherMap, op
// 43 GridSample; 21: op 25's RMS mode (params[0] = 1), expm1 and log1p in op 38, op 44 Select of a
// BoolPlain condition; 22: op 44's comparison modes (params[0] 1..6), op 38's acos, asin, atan and
// pow, op 45 IndexRows; 23: op 46 GroupedMatmul, the Int32Plain layout, recipe PackGroupedKn, op 47
// QuantizedGroupedMatmul; 24: op 17's multiplier (params[3]), the square activation (6) of ops 17,
// 18 and 33, op 21's residual without a project; 25: dynamic values on rows maps (ops 3-11, 16, 20,
// 28, 35, 36, 38; blob_dynamic_checks.h); 26: op 48 GroupSum; 27: the leaky ReLU activation (7) of
// ops 17-19 with its slope, op 19's activation; 28: op 49 ChannelMix, the post-activation affine of
// ops 17 and 21; 29: op 49's softmax (params[2]); 30: op 19's F(4x4, 3x3) tile (params[13],
// PackWinograd's params[2]).

/// Most dimensions of a value (XNN_MAX_TENSOR_DIMS).
constexpr uint32_t kMaxDims = 6;
/// Most inputs of one node (Attention's q, k, v and mask; 3 before version 15).
constexpr uint32_t kMaxNodeInputs = 4;
/// Most inputs of one Concat or RowConcat node (longer cats are chains of them).
constexpr uint32_t kMaxConcatInputs = 3;
/// Integer parameters of one node.
constexpr uint32_t kNodeParams = 16;
/// Output columns per panel of a packed fully-connected weight (PackedFullyConnected).
constexpr uint64_t kPackedPanelWidth = 16;
/// "No value" in a node's input list and in a value's arg field.
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
/// The data section starts at a multiple of this many bytes from the blob start, and every
/// constant within it too.
constexpr uint64_t kDataAlignment = 64;
/// Bytes after the last constant that the data section keeps as zero padding: XNNPACK may
/// read up to 16 bytes (XNN_EXTRA_BYTES) past a tensor.
constexpr uint64_t kDataTailPadding = 64;

/// Largest constant (bytes) the compile half embeds in the data section rather than writing a
/// recipe for it: below this, the recipe's records would cost about as much as the bytes.
/// Constants with no recipe (folded batch-norm scale and shift, computed from several
/// constants; scalars; ones/zeros standing for an absent weight) are embedded whatever their
/// size.
constexpr uint64_t kEmbedMaxBytes = 256;

/// Fixed header at offset 0.
struct BlobHeader {
  char magic[4];
  uint32_t version;
  uint32_t header_size;  ///< sizeof(BlobHeader); value records follow it
  uint32_t num_args;     ///< arguments of the delegate call (region inputs + outputs)
  uint32_t num_values;
  uint32_t num_nodes;
  uint32_t value_record_size;   ///< sizeof(BlobValue)
  uint32_t node_record_size;    ///< sizeof(BlobNode); node records follow the value records
  uint32_t num_recipes;         ///< recipe records follow the node records (0..num_values)
  uint32_t recipe_record_size;  ///< sizeof(BlobRecipe)
  uint64_t data_offset;         ///< from the blob start; multiple of kDataAlignment
  uint64_t data_size;           ///< bytes of the data section (including its tail padding)
};

/// What a value is.
enum class ValueKind : uint32_t {
  Internal = 0,        ///< produced and consumed inside the delegate
  ExternalInput = 1,   ///< a delegate call argument read by the delegate
  ExternalOutput = 2,  ///< a delegate call argument written by the delegate
  Constant = 3,        ///< bytes in the data section (already in the XNNPACK layout)
  /// A delegate call argument that is one of the program's constants (a weight, a bias, a
  /// quantized weight with its scale tensors), read at prepare by recipes only, never by a
  /// node. `dims` are its tern sizes, `data_bytes` its exact byte count, `source` its element
  /// type (SourceType) and flags (since version 8).
  Source = 4,
  /// A constant made at prepare by recipe `recipe` from Source values (packed, re-laid out,
  /// scaled, or a Source's bytes in place), read by nodes like a Constant; `data_bytes` is
  /// 4 * numel (since version 8).
  Derived = 5,
  /// A contiguous run of another value's elements, read in place (since version 18): the
  /// elements [data_offset, data_offset + numel) of Internal value `view_base`, seen with this
  /// value's dims (a split's chunk, a slice of whole rows, a step of an unrolled recurrent
  /// layer). Read by nodes like any data value; no node makes it (its base's maker does). The
  /// runtime keeps the base's bytes until the view's last reader. Layout Plain, static dims.
  View = 6,
};
constexpr uint32_t kLastValueKind = 6;

/// The element type of a Source value (low byte of BlobValue::source).
enum class SourceType : uint32_t {
  F32 = 1,
  Nf4 = 2,      ///< two codes a byte; the argument's QuantView holds the scheme's tensors
  Fp8E4M3 = 3,  ///< one code a byte, with its scales in the QuantView
  Fp8E5M2 = 4,
};
constexpr uint32_t kLastSourceType = 4;
/// BlobValue::source flag: no node outside this delegate reads the constant (in its method), so
/// once every recipe reading it has copied it (none aliases it), the runtime may hand its pages
/// back to the loader (an mmapped file's pages are dropped; they stay readable).
constexpr uint32_t kSourceExclusive = 0x100;
constexpr uint32_t kSourceFlagBits = 0x1FF;

/// How an external value's tern tensor maps onto the XNNPACK value.
enum class ValueLayout : uint32_t {
  Plain = 0,  ///< same dims, same row-major bytes
  Nhwc = 1,   ///< XNNPACK dims [N, H, W, C]; the tern tensor is [N, C, H, W] (NCHW)
  /// An external input of int64 elements (8 bytes each), same dims: the indices of a
  /// QuantizedEmbedding node, the only node that may read it (since version 7).
  Int64Plain = 2,
  /// An external input of bool elements (1 byte each, nonzero true), same dims: the condition
  /// of a Select node, the only node that may read it (since version 21).
  BoolPlain = 3,
  /// An external input of int32 elements (4 bytes each), same dims: the group ends of a
  /// GroupedMatmul node, the only node that may read it (since version 23; those ends may
  /// also come as Int64Plain).
  Int32Plain = 4,
};
constexpr uint32_t kLastValueLayout = 4;

/// One value: a tensor of f32. `dims` are the XNNPACK dims (for Nhwc: N, H, W, C).
struct BlobValue {
  uint32_t kind;            ///< ValueKind
  uint32_t layout;          ///< ValueLayout (Nhwc needs rank 4; Source and Derived: Plain)
  uint32_t rank;            ///< 1..kMaxDims
  uint32_t arg;             ///< delegate call argument index for externals and Sources, else
                            ///< kNoValue
  uint64_t dims[kMaxDims];  ///< first `rank` used, each >= 1; the rest 0
  uint64_t data_offset;     ///< Constant: from the data section start; View: the element
                            ///< offset into its base; else 0
  uint64_t data_bytes;      ///< Constant, Derived: 4 * numel; Source: the argument's bytes;
                            ///< else 0
  uint32_t recipe;          ///< Derived: index of its recipe record; else kNoValue
  uint32_t source;          ///< Source: SourceType | kSourceExclusive?; else 0
  /// 0 for a static value. Else (since version 12) one bit, 1 << d: dim d's size varies per
  /// execution within [1, dims[d]] (docs/dynamic-shapes.md). Only a Plain external or internal
  /// value of rank >= 2, d not its last dim, read only as x (or the residual) of a
  /// PackedFullyConnected / QuantizedFullyConnected node and made only by one, whose rows
  /// then follow the actual size.
  uint32_t dynamic_mask;
  uint32_t view_base;  ///< View: the value it reads (an Internal value); else 0
};

/// How a Derived value is made from Source values (BlobRecipe::op). Every recipe reads f32
/// sources unless it says otherwise; `sources` slots not listed are kNoValue, as are the
/// optional ones left out. `scale` and `shift` are 1 and 0 unless the recipe takes them.
enum class RecipeOp : uint32_t {
  /// The source's bytes in place, seen with the Derived value's dims (no copy; the program's
  /// memory outlives the delegate). sources[0]: as many elements as the value.
  Alias = 1,
  /// out[i] = float(double(src[i]) * scale + shift) (shift added only when non-zero): a
  /// broadcast operand scaled by alpha, a weight or bias with a hardsigmoid folded in.
  /// sources[0]: as many elements as the value.
  Affine = 2,
  /// A 4-D transpose scaled as Affine: sources[0] is [params[0..3]] (its own element count),
  /// the value has dims params[4 + i]-th source dim for i in 0..3 (params[4..7] a permutation
  /// of 0..3): OIHW -> OHWI (0, 2, 3, 1), a depthwise [O, 1, KH, KW] -> [1, KH, KW, O]
  /// (1, 2, 3, 0), an NCHW operand -> NHWC (0, 2, 3, 1). flags: kRecipeFlat.
  Permute = 3,
  /// PackedFullyConnected's weight: sources[0] the weight [N, K] (N * K elements), sources[1]
  /// the bias [N] (optional); params[0] = N, params[1] = K; flags: kRecipeFoldHardsigmoid.
  /// The value is [packed_fc_floats(N, K)].
  PackFc = 4,
  /// PackedConv2d's weight: sources[0] the OIHW filter [O, C, KH, KW] (C: a group's input
  /// channels), flattened to the [O, KH * KW * C] matrix in (kh, kw, c) order and packed like
  /// PackFc with sources[1] the bias [O] (optional), each of the G groups' O/G rows on its own;
  /// params O, C, KH, KW, G (0 or 1: one group; O a multiple of G); flags:
  /// kRecipeFoldHardsigmoid. The value is [G * packed_fc_floats(O / G, KH * KW * C)].
  PackConv = 5,
  /// PackedWinogradConv2d's weight: sources[0] the filter [O, C, 3, 3], sources[1] the bias [O]
  /// (optional); params[0] = O, params[1] = C, params[2] = the tile (kWinogradTileF2x2 or
  /// kWinogradTileF4x4). The value is [winograd_packed_floats(O, C, tile)].
  PackWinograd = 6,
  /// PackedBottleneck's weight (bottleneck_weight_floats): sources at the BottleneckSource
  /// slots; params at the BottleneckRecipeParam indices.
  PackBottleneck = 7,
  /// Ops 23 / 24's weight: sources[0] the quantized weight (Nf4 or Fp8 [rows, cols], its
  /// QuantView the scheme's tensors), re-laid out as kernels/quant_weight.h says; params at the
  /// QuantParam indices (the node's own). The value is [total_bytes / 4].
  QuantWeight = 8,
  /// GroupedMatmul's weight (since version 23): sources[0] the experts' matrices [E, K, N]
  /// (E * K * N elements, each [K, N] the right operand of x · w[e]); params[0] = E, params[1]
  /// = K, params[2] = N. Each expert's matrix packed on its own into the packed GEMM's panels
  /// with a zero bias (kernels/batch_matmul.h, pack_kn_weight), one after another: the value is
  /// [E * packed_fc_floats(N, K)].
  PackGroupedKn = 9,
};
constexpr uint32_t kLastRecipeOp = 9;

/// Source slots of a recipe.
constexpr uint32_t kRecipeSources = 10;
/// Integer parameters of a recipe.
constexpr uint32_t kRecipeParams = 8;
/// PackFc / PackConv flag: a hardsigmoid folded in (every packed float / 6, then 1/2 added to
/// the bias slots in f32), as the compile half folds one into the GEMM before it.
constexpr uint32_t kRecipeFoldHardsigmoid = 1;
/// Permute flag (2026-12-05): the permuted elements, in row-major order, seen with the Derived
/// value's own dims (any of the same element count): a grouped deconvolution's filter, made
/// [G, O/G, KH·KW, C/G] and read as [O, KH, KW, C/G]. Readers before it refuse the flag.
constexpr uint32_t kRecipeFlat = 2;

/// PackBottleneck's source slots (weights [out, in, kh, kw] as the program holds them).
enum BottleneckSource : uint32_t {
  kBnExpandWeight = 0,   ///< [E, C, 1, 1], with an expand
  kBnExpandBias = 1,     ///< [E], optional
  kBnDepthwiseWeight = 2,  ///< [E, 1, KH, KW]
  kBnDepthwiseBias = 3,    ///< [E], optional
  kBnProjectWeight = 4,  ///< [O, E, 1, 1], with a project
  kBnProjectBias = 5,
  kBnSqueezeWeight = 6,  ///< [S, E, 1, 1], with squeeze-excitation
  kBnSqueezeBias = 7,
  kBnExciteWeight = 8,   ///< [E, S, 1, 1], with squeeze-excitation
  kBnExciteBias = 9,
};
/// PackBottleneck's params.
enum BottleneckRecipeParam : uint32_t {
  kBnC = 0,
  kBnE = 1,
  kBnO = 2,
  kBnKh = 3,
  kBnKw = 4,
  kBnS = 5,      ///< squeeze channels (0 without squeeze-excitation)
  kBnFlags = 6,  ///< kBottleneckHasExpand | kBottleneckHasProject | kBottleneckHasSqueezeExcite
  kBnGate = 7,   ///< SqueezeGate (Clamp01: the excitation's weights and bias / 6, bias + 1/2)
};

/// One recipe: how a Derived value's bytes are made at prepare.
struct BlobRecipe {
  uint32_t op;  ///< RecipeOp
  uint32_t flags;
  uint32_t sources[kRecipeSources];  ///< Source value indices, kNoValue where unused
  uint32_t params[kRecipeParams];    ///< unused ones 0
  double scale;                      ///< Affine / Permute (finite); else 1
  double shift;                      ///< Affine / Permute (finite); else 0
};

/// Node operators (BlobNode::op).
enum class NodeOp : uint32_t {
  Conv2d = 1,           ///< in: x, filter [O, KH, KW, C/g], bias [O]?; params: conv layout
  DepthwiseConv2d = 2,  ///< in: x, filter [1, KH, KW, C*M], bias [C*M]?; params: conv layout
  FullyConnected = 3,   ///< in: x [..., I], filter [O, I], bias [O]?
  Add = 4,              ///< in: a, b (NumPy broadcasting over the XNNPACK dims)
  Subtract = 5,
  Multiply = 6,
  Divide = 7,
  Clamp = 8,  ///< fparams: min, max
  Hardswish = 9,
  Sigmoid = 10,
  Softmax = 11,          ///< over the last XNNPACK dim
  MaxPool2d = 12,        ///< params: pool layout (with dilation)
  AvgPool2d = 13,        ///< params: pool layout (dilation unused); padding not counted
  GlobalAvgPool2d = 14,  ///< x [N, H, W, C] -> [N, 1, 1, C]
  ConstantPad = 15,      ///< params[0..5] pre, params[6..11] post paddings; fparams[0] value
  Reshape = 16,          ///< to the output value's dims (same element count)
  /// tern's own GEMM (not XNNPACK). in: x [..., K], packed weight (a constant [F] with
  /// F = packed_fc_floats(N, K)), optional residual (the output's dims, not a constant; added
  /// after the bias, before the clamp), optional multiplier (since version 24, with params[3]'s
  /// kFcMultiplier: the last input, the output's dims, not a constant; the result is multiplied
  /// by it after the activation); params[0] = N (out features), params[1] = K, params[2] = the
  /// activation after the clamp (kernels/gemm_activation.h GemmActivation: 0 none, 1 hardswish,
  /// 2 GELU erf, 3 GELU tanh, 4 SiLU, 5 sigmoid, since version 24 6 square), params[3] =
  /// epilogue flags (0, kFcMultiplier, or since version 28 kFcPostAffine), params[4] (since version 27) = the f32 bits of the
  /// leaky ReLU's negative slope with activation 7 (finite, >= 0, at most 2), else 0; fparams:
  /// output min, max. Output [..., N].
  PackedFullyConnected = 17,
  /// tern's own NHWC convolution. in: x [N, H, W, C], packed weight (a constant [F] with F =
  /// G * packed_fc_floats(O / G, KH * KW * C / G): each group's [O/G, KH, KW, C/G] filter as
  /// an [O/G, KH*KW*C/G] matrix, one after another), optional residual [N, OH, OW, O] (not a
  /// constant; added after the bias, before the clamp); params: pads, KH, KW, strides,
  /// dilations at the ConvParam indices, [10] = C, [11] = O, [12] = the activation after the
  /// clamp (as op 17's params[2]), [13] = G (0 or 1: one group, as blobs before grouped convs
  /// hold; C and O multiples of G), [14] the leaky ReLU's slope bits (as op 17's params[4]);
  /// fparams: output min, max. Output [N, OH, OW, O]. A
  /// one-group window of fewer than 32 taps (KH*KW*C) runs as a direct convolution
  /// (kernels/shallow_conv.h).
  PackedConv2d = 18,
  /// tern's own Winograd NHWC convolution, F(2x2, 3x3) or F(4x4, 3x3): a 3x3 stride-1
  /// dilation-1 one-group conv (params and inputs as PackedConv2d, the window params fixed to
  /// 3x3/1/1; the activation 0 before version 27; params[kWinogradTile] in place of the groups:
  /// kWinogradTileF2x2 (0) or, since version 30, kWinogradTileF4x4). The weight is a constant [F]
  /// with F = winograd_packed_floats(O, C, tile): 16 (or 36) matrices of packed_fc_floats(O, C)
  /// (the transformed filter G g Gᵀ at each 4x4 (6x6) tile position; the bias in the 6th (8th)).
  PackedWinogradConv2d = 19,
  /// tern's own GELU over the whole tensor, split over the pool (not in this XNNPACK). in: x;
  /// params[0] = 0 for the erf form, 1 for the tanh form. Output: x's dims.
  Gelu = 20,
  /// tern's fused inverted bottleneck (kernels/bottleneck.h): an optional 1x1 expand GEMM, a
  /// KHxKW depthwise conv (dilation 1) and an optional 1x1 project GEMM with an optional
  /// residual, in one pass per band of rows. in: x [N, H, W, C], weights (a constant [F] with
  /// F = bottleneck_weight_floats(...): the expand weight packed as packed_fc_floats(E, C) when
  /// there is one, then the depthwise taps [KH*KW][E] and bias [E] padded to a multiple of 16
  /// floats, then the project weight packed as packed_fc_floats(O, E) when there is one),
  /// optional residual [N, OH, OW, O] (not a constant; with a project added before its clamp,
  /// without one, since version 24, added after the depthwise epilogue). params: pads, KH,
  /// KW, strides, dilations (1) at the ConvParam indices, then the BottleneckParam ones;
  /// fparams: the project's output min, max (-inf, +inf without a project). Output
  /// [N, OH, OW, O] (O = E without a project). With squeeze-excitation (flag
  /// kBottleneckHasSqueezeExcite, only with a project) the weight constant continues with the
  /// squeeze [S, E] and the excitation [E, S] weights, each packed with its bias, and the
  /// project reads d scaled per image and channel by the gate (bottleneck.h). With flag
  /// kBottleneckHasPostAffine (since version 28; only without a project) the last input is a
  /// constant [2, E]: d · scale + shift per channel after the depthwise epilogue.
  PackedBottleneck = 21,
  /// tern's own concatenation along the last XNNPACK dim (the channels of an NHWC 4-D tensor,
  /// the last dim of a plain one), split over the pool: per row of the output, each input's
  /// row copied into its slice. in: 2 or 3 data inputs (not constants), each of the output's
  /// rank and dims but the last; params all 0; fparams (-inf, +inf). Output: the inputs' dims
  /// with the last the sum of theirs. A cat of more inputs is a chain of these.
  /// Since version 9, params[0] = R >= 1 concatenates along another dim: every input and the
  /// output are seen as [R, numel / R] row-major matrices (R the product of the dims before the
  /// cat dim) and concatenated along those rows; the output's dims are then checked only by
  /// their element count (the sum of the inputs').
  Concat = 22,
  /// tern's fused dequantizing GEMV/GEMM over an NF4 or FP8 weight kept packed
  /// (kernels/quant_gemm.h): y = clamp(x · Wᵀ + bias). in: x [..., K] (not a constant), the
  /// weight (a constant [F] whose bytes are laid out as kernels/quant_weight.h says, F =
  /// total_bytes / 4 for the QuantParam params), optional bias [N] (a constant). params at the
  /// QuantParam indices (rows = N out features, cols = K in features); fparams: output min,
  /// max. Output [..., N]. FP8 codes that encode NaN or infinity are refused.
  QuantizedFullyConnected = 23,
  /// tern's gather of embedding rows from an NF4 or FP8 table kept packed
  /// (kernels/quant_embedding.h). in: indices (an external input of layout Int64Plain, any
  /// dims), the table (a constant [F] as op 23's weight; rows = vocabulary V, cols = D).
  /// Output: the indices' dims + [D]. An index outside [0, V) fails the execute
  /// (InvalidArgument naming it), as in the portable kernel.
  QuantizedEmbedding = 24,
  /// tern's layer norm over the last XNNPACK dim (kernels/layer_norm_rows.h), split over the
  /// pool: each row normalized by its mean and biased variance, then gamma and beta per column.
  /// in: x (not a constant; a plain value, e.g. the channels-last view of an NHWC tensor that a
  /// permute(0, 2, 3, 1) gives), gamma [C] and beta [C] (constants, C = x's last dim); params
  /// all 0; fparams[0] = eps (finite, > 0), fparams[1] = 0. Output: x's dims. Since version
  /// 21 params[0] = 1 selects RMS norm (rms_norm): no mean taken off, each row scaled by
  /// 1 / sqrt(mean of squares + eps), then gamma; beta is read by no one (zeros).
  LayerNorm = 25,
  /// tern's batched product of two activations (kernels/batch_matmul.h; since version 9):
  /// C[b] = A[b] · B[b], or A[b] · B[b]ᵀ with params[0] = 1. in: a [..., M, K], b [..., K, N]
  /// (params[0] = 1: [..., N, K]), data values of one rank 2..6 with the same leading (batch)
  /// dims, but one of them may be a constant (b since version 17, a since version 20); params[0] = 0 or 1, the rest 0; fparams (-inf, +inf). Output
  /// [..., M, N]. Needs scratch: one packed B per batch.
  BatchMatMul = 26,
  /// tern's strided copy (kernels/strided_copy.h; since version 9): the output, row-major over
  /// its dims, gathered from x: y[i0..ir-1] = x[offset + sum_d i_d * stride_d]. A permute,
  /// transpose, slice, expand, or a view that reorders an NHWC tensor's bytes, or several
  /// composed. in: x (a data value); params[0] = r (1..6), params[1..6] = the extents (the first
  /// r >= 1, their product the output's element count, the rest 0), params[7..12] = the strides
  /// in x's elements (the first r as int32 two's complement, each in [-2^30, 2^30] — a negative
  /// one reads its dim backwards, a flip, since version 17 — the rest 0), params[13] = offset
  /// (<= 2^30); every element read lies in x. fparams (-inf, +inf).
  StridedCopy = 27,
  /// XNNPACK's square root (since version 9). in: x; params all 0; fparams (-inf, +inf).
  /// Output: x's dims.
  SquareRoot = 28,
  /// tern's concatenation of rows read with a stride (kernels/row_concat.h; since version 11):
  /// output row r (of `rows`) is input i's row r — w_i floats at x_i[o_i + r * s_i] — for each
  /// input in turn, or with a unit u >= 1 their u-float units interleaved (unit k of input 0,
  /// of input 1, ..., then unit k + 1): ShuffleNet's concat + channel shuffle in one pass, its
  /// inputs channel slices of NHWC tensors read in place. in: 2 or 3 f32 values, data values
  /// or (since version 14) constants, at least one data; params at the RowConcatParam indices (unused ones 0): rows >= 1, u (0: plain;
  /// else every w_i equal and a multiple of u), w_i >= 1, s_i, o_i (each <= 2^30) with every
  /// row read inside x_i; fparams (-inf, +inf). Output: any dims whose element count is
  /// rows * sum(w_i).
  RowConcat = 29,
  /// tern's group norm of a channels-last tensor (kernels/group_norm_nhwc.h; since version 13):
  /// the last dim's C channels in params[0] = G groups of C / G consecutive channels, each
  /// group normalized over all of a sample's pixels (dims between the first and the last) by
  /// its mean and biased variance, then gamma and beta per channel. in: x (a data value of rank
  /// 3..6: [N, ..., C], an NHWC 4-D tensor's XNNPACK dims), gamma [C] and beta [C] (constants);
  /// params[0] = G >= 1 dividing C, the rest 0; fparams[0] = eps (finite, > 0), fparams[1] = 0.
  /// Output: x's dims. Needs scratch (per-band channel sums).
  GroupNorm = 30,
  /// XNNPACK's bilinear resize (since version 14): in x [N, H, W, C]; params[0] = OH >= 1,
  /// params[1] = OW >= 1, params[2] = 1 for aligned corners (else 0: half-pixel centres, as
  /// PyTorch's align_corners=False); fparams (-inf, +inf). Output [N, OH, OW, C].
  ResizeBilinear = 31,
  /// tern's fused attention (kernels/fused_attention.h; since version 15): out = softmax(q ·
  /// kᵀ · scale + mask) · v per batch (head), a block of query rows at a time (the scores never
  /// written out). in: q [..., L, E], k [..., S, E] (params[kAttentionFlags] bit
  /// kAttentionKTransposed: [..., E, S], a bmm's right operand), v [..., S, Ev] (data values
  /// of rank 2..6 but q, which since version 20 may be a constant; the product of the dims
  /// before the last two, the heads, the same for q, k,
  /// v and the output: a head's rows are contiguous), optional additive mask (a constant or data
  /// value of rank kAttentionMaskBatchRank + 2: dims [b_0, .., L or 1, S], each b_d equal to
  /// params[kAttentionMaskBatch + d] or 1, those params multiplying to the heads, q's leading
  /// dims' product; no mask: the rank param and the batch params 0). params[kAttentionCausal]
  /// = P: 0, or 1..L (row i attends keys j <= i mod P, top-left aligned); flag
  /// kAttentionEmptyRowsNan: a row whose every key is masked out gives NaN (softmax's), else
  /// zeros (scaled_dot_product_attention's). fparams[0] = scale (finite), fparams[1] = 0.
  /// Output [..., L, Ev]. Needs scratch: per pool thread, one head's packed K and V and a
  /// block of scores.
  Attention = 32,
  /// tern's own 3-D convolution over channels-last tensors (kernels/packed_conv.h with its
  /// depth fields; since version 16). in: x [N, D, H, W, C] (a data value), packed weight (a
  /// constant [F] with F = G * packed_fc_floats(O / G, KD * KH * KW * C / G): each group's
  /// [O/G, KD, KH, KW, C/G] filter as an [O/G, KD*KH*KW*C/G] matrix, one after another: a
  /// PackConv recipe whose KH is KD * KH), optional residual [N, OD, OH, OW, O] (a data value;
  /// added after the bias, before the clamp); params at the Conv3dParam indices; fparams: output
  /// min, max. Padding is symmetric: OD = (D + 2 pd - dd (KD - 1) - 1) / sd + 1, and OH, OW
  /// alike. Output [N, OD, OH, OW, O].
  PackedConv3d = 33,
  /// tern's bilinear resize of a channels-last image into channel planes
  /// (kernels/resize_planes.h; since version 16): a segmentation model's last upsample, whose
  /// NCHW output leaves the delegate as it is. in: x [N, H, W, C] (a data value); params[0] =
  /// OH >= 1, params[1] = OW >= 1, params[2] = 1 for aligned corners (else 0), the rest 0;
  /// fparams (-inf, +inf); C <= kMaxResizePlanesChannels. Output [N, C, OH, OW] (plain:
  /// row-major in those dims).
  ResizeBilinearToPlanes = 34,
  /// XNNPACK's elementwise maximum / minimum of two operands with NumPy broadcasting (since
  /// version 17: XGLM's scores clamped below by the dtype's lowest value). in: a, b; params all
  /// 0; fparams (-inf, +inf) (no output bounds). Output: the broadcast dims.
  Maximum = 35,
  Minimum = 36,
  /// tern's fused LSTM cell (kernels/lstm_cell.h; since version 18): one step's gates in
  /// PyTorch's order i, f, g, o to the new cell and hidden states. in: gates [..., 4H] (a data
  /// value), c [..., H] (the previous cell state: a data value or a constant), optional gates2
  /// (a data value of the gates' element count and last dim, added to them: the step's row of
  /// the input projection); R = numel(c) / H rows, the gates 4 R H elements. params[0] = H, the
  /// rest 0; fparams (-inf, +inf). Output [2, R, H]: c' = σ(f) c + σ(i) tanh(g), then
  /// h' = σ(o) tanh(c') (read as View values).
  LstmCell = 37,
  /// tern's elementwise math XNNPACK lacks (kernels/unary_math.h; since version 18). in: x (a
  /// data value); params[0] = the function (UnaryMathFn: 1 exp, 2 softplus, since version
  /// 19 also 3 sin, 4 cos, 5 log, since version 21 6 expm1, 7 log1p, since version 22 8 acos,
  /// 9 asin, 10 atan, 11 pow), for softplus params[1] and params[2] the bits of beta (finite,
  /// non-zero) and threshold (finite) as f32, for pow params[1] the exponent's (finite) and
  /// params[2] 0, else 0; the rest 0; fparams (-inf, +inf). Output: x's dims.
  UnaryMath = 38,
  /// tern's inclusive running sum along blob dim params[0] of x (kernels/cumsum_rows.h; since
  /// version 18), accumulated in double in order (the portable kernel's sums). in: x (a data
  /// value); params[0] < x's rank, the rest 0; fparams (-inf, +inf). Output: x's dims.
  Cumsum = 39,
  /// tern's fused GRU cell (kernels/gru_cell.h; since version 18): one step's gates in
  /// PyTorch's order r, z, n to the new hidden state. in: gi [..., 3H] (the input side's
  /// gates, a data value), gh [..., 3H] (the hidden side's, a data value), h [..., H] (the
  /// previous hidden state: a data value or a constant); R = numel(h) / H rows, each gates
  /// operand 3 R H elements. params[0] = H, the rest 0; fparams (-inf, +inf). Output: h's
  /// element count with last dim H: h' = (h - n) σ(z) + n, n = tanh(gi_n + σ(r) gh_n).
  GruCell = 40,
  /// XNNPACK's 2-D deconvolution, a transposed conv (since version 19). in: x [N, IH, IW, C]
  /// (NHWC), filter [O, KH, KW, C/G] (constant; XNNPACK's [G, O/G, KH, KW, C/G]), bias [O]?
  /// (constant); params: the ConvParam window (padding taken off the output's ends, stride =
  /// XNNPACK's upsampling), kGroups G (1 before 2026-12-05: VOLO's fold is grouped; readers
  /// before then refuse G > 1 by name), kGroupInChannels C/G, kGroupOutChannels O/G,
  /// kDeconvAdjustH / W each below its stride; fparams
  /// the output bounds. Output [N, OH, OW, O], OH = (IH - 1) * stride + dilation * (KH - 1) + 1
  /// + adjust - pad top - pad bottom (at least 1), OW alike.
  Deconv2d = 41,
  /// tern's gather by a constant map (kernels/gather_map.h; since version 20): the output seen
  /// as [O, B, R] row-major, y[o, t, r] = x[o * params[1] + map[t] + r] (a torch.gather or
  /// index_select by a constant index that is no affine walk, a reflect pad, a nearest resize
  /// by no integer factor). in: x (a data value, its bytes as they lie), map (a constant of B
  /// elements, each a little-endian int32 in [0, numel(x) - (O - 1) * params[1] - R]).
  /// params[0] = O >= 1, params[1] = the step (0..2^30; 0 when O is 1), params[2] = the run R
  /// (0 means 1: blobs before 2026-12-05 had no runs, and their readers refuse a nonzero
  /// params[2] by name), the rest 0; fparams (-inf, +inf). Output: O * B * R elements.
  GatherMap = 42,
  /// tern's grid sample (kernels/grid_sample_nhwc.h; since version 20): y[n, i, j, :] = x
  /// sampled at grid[n, i, j] = (gx, gy) in [-1, 1] coordinates (the portable grid_sample2d's
  /// rules). in: x [N, H, W, C] (an NHWC data value), grid [N, HO, WO, 2] (a plain data value or
  /// constant, row-major pairs). params[0] = mode (0 bilinear, 1 nearest), params[1] = padding
  /// (0 zeros, 1 border, 2 reflection), params[2] = align_corners (0 or 1), the rest 0; fparams
  /// (-inf, +inf). Output [N, HO, WO, C] (NHWC).
  GridSample = 43,
  /// tern's elementwise select (kernels/select_where.h; since version 21): y = cond ? a : b
  /// with NumPy broadcasting. params[0] the mode (SelectMode): 0, in: cond (an external input
  /// of layout BoolPlain: a condition made outside the delegate), a, b; 1..6 (since version
  /// 22), in: x (an f32 data value or constant, plain), a, b, and cond = x OP s with OP >, >=,
  /// <, <=, ==, != and s the f32 whose bits are params[1] (a comparison of an activation with a
  /// number fused into the select: Apertus' xIELU, where(x > 0, ..)); a, b f32 data values or
  /// constants; each input's dims, right-aligned, equal the output's or 1 (rank at most the
  /// output's). params[1] 0 in mode 0, the rest 0; fparams (-inf, +inf). Output: the broadcast
  /// dims (plain).
  Select = 44,
  /// tern's gather by a run-time index (kernels/index_rows.h; since version 22): out's slice k
  /// along blob dim d = params[0] is x's slice index[k]. in: x (an f32 data value or constant,
  /// plain), index (an external input of layout Int64Plain, any dims: its elements in order);
  /// params[0] = d < x's rank, the rest 0; fparams (-inf, +inf). Output plain, x's dims with
  /// dim d the index's element count. An index outside [0, x's dim d) fails the execution
  /// (InvalidArgument naming it), as the portable kernels do.
  IndexRows = 45,
  /// tern's grouped product (kernels/grouped_gemm.h; since version 23): the rows of x are cut
  /// into E consecutive groups by the running ends in `ends` (group e is rows [ends[e - 1],
  /// ends[e]), group 0 from row 0) and each group is multiplied by its own packed matrix; rows
  /// after the last end are zeros (torch._grouped_mm's offsets; mixture-of-experts layers sorted
  /// by expert). in: x [S, K] (an f32 data value, plain), w (a Derived value of recipe
  /// PackGroupedKn with this node's E, K, N), ends [E] (an external input of layout Int32Plain
  /// or Int64Plain); params[0] = E, params[1] = K, params[2] = N (each in 1..2^30), the rest 0;
  /// fparams (-inf, +inf). Output [S, N] plain. Ends that go backwards or past S fail the
  /// execution (InvalidArgument naming them), as the portable kernel does.
  GroupedMatmul = 46,
  /// tern's grouped product of NF4 / FP8 experts (kernels/quant_gemm.h on each expert's rows;
  /// since version 23): op 46 with each expert's matrix transposed in one quantized weight
  /// [E N, K] (tern::grouped_linear, what `tern compile --quantize` makes of a grouped_mm):
  /// group e times rows [e N, (e + 1) N) of it. in: x [S, K] (an f32 data value, plain), w (a
  /// constant as op 23's weight: rows E N, cols K), ends [E] (an external input of layout
  /// Int32Plain or Int64Plain); params[0..7] the QuantParam values (op 23's), params[8] = E (E
  /// divides the rows into parts quant_rows_split_ok accepts), the rest 0; fparams (-inf,
  /// +inf). Output [S, N] plain. Ends as op 46's.
  QuantizedGroupedMatmul = 47,
  /// tern's channel-group sum (kernels/group_sum.h; since version 26): ResNeSt's split attention
  /// and SKNet's selective kernel. in: 1 to 3 parts (f32 data values, NHWC [N, H, W, R_i C]
  /// with R_i >= 1), then, when params[0] = 1, the weight (an f32 data value of N R C elements,
  /// R = the sum of the R_i: [N, R C] row-major). params[0] = 0 or 1, the rest 0; fparams
  /// (-inf, +inf). Output [N, H, W, C]: the sum over the parts' groups of C channels, in order,
  /// each times its weight row (group g of sample n: weight[n, g C .. (g + 1) C)).
  GroupSum = 48,
  /// tern's linear map along an inner dim (kernels/channel_mix.h; since version 28): CaiT's
  /// talking heads, a linear layer over the heads of the attention scores written around two
  /// permutes. in: x (an f32 data value, plain, rank 2 to 6), w (a constant of J K elements:
  /// [J, K] row-major), b (optional: a constant of J elements); params[0] = d < x's rank - 1,
  /// params[1] = J, with J and K = x's dim d in 1..kMaxChannelMixWidth; params[2] (since
  /// version 29) = 1 for a softmax over dim d first (YOLO's box-distribution head: the bins'
  /// softmax and their expected value), else 0; the rest 0; fparams (-inf, +inf). Output
  /// plain: x's dims with dim d J (since version 29 any dims of that element count), y[o, j,
  /// i] = sum over k of w[j, k] x[o, k, i] (x[o, ·, i] its softmax with params[2]), plus b[j]
  /// (o: the dims before d, i: those after it).
  ChannelMix = 49,
};

/// The last NodeOp.
constexpr uint32_t kLastNodeOp = 49;

/// Most rows and columns of a ChannelMix's matrix (its kernel reads x's K rows for each of
/// its J outputs; wider mixes are fully-connected layers over copied rows).
constexpr uint64_t kMaxChannelMixWidth = 64;

/// Select's params[0] (since version 22 beyond 0): where its condition comes from.
enum class SelectMode : uint32_t {
  BoolInput = 0,  ///< input 0 is a BoolPlain condition
  Greater = 1,    ///< x > s
  GreaterEqual = 2,
  Less = 3,
  LessEqual = 4,
  Equal = 5,
  NotEqual = 6,
};
constexpr uint32_t kLastSelectMode = 6;

/// Most channels of ResizeBilinearToPlanes's input (its kernel caches a row of every channel).
constexpr uint64_t kMaxResizePlanesChannels = 4096;

/// PackedConv3d's parameter indices (every one used).
enum Conv3dParam : uint32_t {
  kConv3dPad = 0,         ///< [0..2]: front, top, left (each side's, symmetric)
  kConv3dKernel = 3,      ///< [3..5]: KD, KH, KW >= 1
  kConv3dStride = 6,      ///< [6..8]: >= 1
  kConv3dDilation = 9,    ///< [9..11]: >= 1
  kConv3dInChannels = 12,   ///< C
  kConv3dOutChannels = 13,  ///< O
  kConv3dActivation = 14,   ///< GemmActivation after the clamp (0 none), as op 18's
  kConv3dGroups = 15,       ///< 0 or 1: one group; else G dividing C and O
};

/// Attention's parameter indices and flags.
enum AttentionParam : uint32_t {
  kAttentionFlags = 0,
  kAttentionCausal = 1,
  kAttentionMaskBatchRank = 2,  ///< 0..4
  kAttentionMaskBatch = 3,      ///< [3..6]
  kAttentionParamCount = 7,
};
constexpr uint32_t kAttentionKTransposed = 1;
constexpr uint32_t kAttentionEmptyRowsNan = 2;
constexpr uint32_t kAttentionMaxMaskBatchRank = 4;

/// RowConcat's parameter indices (input i's width, stride and offset at + i).
enum RowConcatParam : uint32_t {
  kRowConcatRows = 0,
  kRowConcatUnit = 1,
  kRowConcatWidth = 2,   ///< [2..4]
  kRowConcatStride = 5,  ///< [5..7]
  kRowConcatOffset = 8,  ///< [8..10]
  kRowConcatParamCount = 11,
};

/// StridedCopy's parameter indices.
enum StridedCopyParam : uint32_t {
  kCopyRank = 0,
  kCopyExtent = 1,  ///< [1..6]
  kCopyStride = 7,  ///< [7..12]
  kCopyOffset = 13,
  kCopyParamCount = 14,
};

/// The quantized weight format of ops 23 and 24 (params[kQuantFormat]).
enum class QuantWeightFormat : uint32_t {
  Nf4 = 1,             ///< NF4 codes, f32 absmax per block
  Nf4DoubleQuant = 2,  ///< NF4 codes, absmax as u8 codes into a 256-entry table (QUANT.md)
  Fp8E4M3 = 3,         ///< float8 e4m3fn codes, f32 scales
  Fp8E5M2 = 4,         ///< float8 e5m2 codes, f32 scales
};
constexpr uint32_t kLastQuantWeightFormat = 4;

/// FP8 scale groups (params[kQuantGranularity]).
enum class Fp8Granularity : uint32_t {
  PerTensor = 0,
  PerChannel = 1,  ///< one scale per row
  Block = 2,       ///< R x C tiles, row-major
};
constexpr uint32_t kLastFp8Granularity = 2;

/// Indices into BlobNode::params for ops 23 and 24; every other parameter is 0.
enum QuantParam : uint32_t {
  kQuantRows = 0,         ///< N (out features) / V (vocabulary)
  kQuantCols = 1,         ///< K (in features) / D (embedding dim)
  kQuantFormat = 2,       ///< QuantWeightFormat
  kQuantBlockSize = 3,    ///< NF4: block size, a power of two in [32, 4096]; FP8: 0
  kQuantDqBlockSize = 4,  ///< NF4 double quantization: absmax values per absmax2 (>= 1); else 0
  kQuantGranularity = 5,  ///< FP8: Fp8Granularity; NF4: 0
  kQuantBlockRows = 6,    ///< FP8 Block: R (>= 1); else 0
  kQuantBlockCols = 7,    ///< FP8 Block: C (>= 1); else 0
  kQuantParamCount = 8,
  kQuantGroups = 8,  ///< op 47 only: E, the experts
};

/// Floats of a packed fully-connected weight with `n` out and `k` in features: ceil(n / 16)
/// panels, each 16 bias floats then k rows of 16 weights (panel p, row r, lane j holds
/// W[16p + j][r]; columns past n are zero). Callers keep n, k <= 2^31.
constexpr uint64_t packed_fc_floats(uint64_t n, uint64_t k) {
  return (n + kPackedPanelWidth - 1) / kPackedPanelWidth * kPackedPanelWidth * (k + 1);
}

/// PackedWinogradConv2d's tile field (params[kWinogradTile], PackWinograd's params[2]).
constexpr uint32_t kWinogradTileF2x2 = 0;  ///< F(2x2, 3x3): 4x4 input tiles, 16 matrices
constexpr uint32_t kWinogradTileF4x4 = 4;  ///< F(4x4, 3x3): 6x6 input tiles, 36 matrices

/// Floats of a Winograd-packed 3x3 filter with `n` out and `k` in channels for a tile field.
constexpr uint64_t winograd_packed_floats(uint64_t n, uint64_t k,
                                          uint32_t tile = kWinogradTileF2x2) {
  return (tile == kWinogradTileF4x4 ? 36 : 16) * packed_fc_floats(n, k);
}

/// A stage epilogue of PackedBottleneck (its expand and depthwise stages): what follows the
/// bias.
enum class BottleneckEpilogue : uint32_t {
  None = 0,
  Relu = 1,       ///< clamp to [0, +inf)
  Relu6 = 2,      ///< clamp to [0, 6]
  Hardswish = 3,  ///< x · min(max(x + 3, 0), 6) / 6
  Silu = 4,       ///< x · sigmoid(x)
};
constexpr uint32_t kLastBottleneckEpilogue = 4;
/// The last activation code of PackedFullyConnected / PackedConv2d (kernels' GemmActivation).
constexpr uint32_t kLastPackedActivation = 7;
/// The activation code whose parameter the node carries (the leaky ReLU's negative slope).
constexpr uint32_t kLeakyReluActivation = 7;
/// Op 17's params index of that parameter's f32 bits.
constexpr uint32_t kFcActivationAlpha = 4;
/// PackedFullyConnected's params[3] (epilogue flags): its last input is a multiplier.
constexpr uint32_t kFcEpilogueFlags = 3;
constexpr uint32_t kFcMultiplier = 1u;
/// Since version 28: the last input is a constant [2, N] (a scale row, then a shift row); the
/// result, after its activation, becomes y · scale[j] + shift[j] per output column (a batch norm
/// after the activation). Not with kFcMultiplier.
constexpr uint32_t kFcPostAffine = 2u;

/// The gate of PackedBottleneck's squeeze-excitation: what follows the excitation's bias.
enum class SqueezeGate : uint32_t {
  Sigmoid = 0,  ///< 1 / (1 + e^-x) (EfficientNet's)
  Clamp01 = 1,  ///< clamp to [0, 1]: a hardsigmoid folded into the excitation (weights and
                ///< bias / 6, bias + 1/2; MobileNetV3's)
};
constexpr uint32_t kLastSqueezeGate = 1;

/// PackedBottleneck's flags (params[kBottleneckFlags]).
constexpr uint32_t kBottleneckHasExpand = 1;
constexpr uint32_t kBottleneckHasProject = 2;
constexpr uint32_t kBottleneckHasSqueezeExcite = 4;  ///< only with kBottleneckHasProject
constexpr uint32_t kBottleneckFlagBits = 7;
/// A PackedBottleneck node's flag (not the recipe's; since version 28), only without a project:
/// the last input is a constant [2, E] (a scale row, then a shift row) applied per channel to
/// the depthwise output after its epilogue and before the residual (a batch norm after the
/// activation: ConvMixer's depthwise conv → ReLU → batch norm → + x).
constexpr uint32_t kBottleneckHasPostAffine = 8;
constexpr uint32_t kBottleneckNodeFlagBits = 15;
/// Params [13], [14], [15] of PackedBottleneck hold two fields each: the low byte (flags, the
/// expand epilogue, the depthwise epilogue) and, from this bit on, the squeeze-excitation's
/// (its squeeze channels S, the squeeze epilogue, the SqueezeGate; 0 without).
constexpr uint32_t kBottleneckHighShift = 8;
/// The tallest depthwise window of a PackedBottleneck.
constexpr uint32_t kMaxBottleneckWindow = 16;

/// Floats of PackedBottleneck's depthwise section: KH*KW*E taps and E biases, padded to 16.
constexpr uint64_t bottleneck_depthwise_floats(uint64_t kh, uint64_t kw, uint64_t e) {
  return (kh * kw * e + e + 15) / 16 * 16;
}

/// Floats of PackedBottleneck's weight constant (callers keep every size <= 2^30); `se` is the
/// squeeze-excitation's squeeze channels S (0: none).
constexpr uint64_t bottleneck_weight_floats(bool expand, bool project, uint64_t c, uint64_t e,
                                            uint64_t o, uint64_t kh, uint64_t kw,
                                            uint64_t se = 0) {
  return (expand ? packed_fc_floats(e, c) : 0) + bottleneck_depthwise_floats(kh, kw, e) +
         (project ? packed_fc_floats(o, e) : 0) +
         (se > 0 ? packed_fc_floats(se, e) + packed_fc_floats(e, se) : 0);
}

/// Whether tern's own kernels (not XNNPACK) run this op.
constexpr bool is_own_kernel_op(uint32_t op) {
  return op == static_cast<uint32_t>(NodeOp::PackedFullyConnected) ||
         op == static_cast<uint32_t>(NodeOp::PackedConv2d) ||
         op == static_cast<uint32_t>(NodeOp::PackedWinogradConv2d) ||
         op == static_cast<uint32_t>(NodeOp::Gelu) ||
         op == static_cast<uint32_t>(NodeOp::PackedBottleneck) ||
         op == static_cast<uint32_t>(NodeOp::Concat) ||
         op == static_cast<uint32_t>(NodeOp::QuantizedFullyConnected) ||
         op == static_cast<uint32_t>(NodeOp::QuantizedEmbedding) ||
         op == static_cast<uint32_t>(NodeOp::LayerNorm) ||
         op == static_cast<uint32_t>(NodeOp::BatchMatMul) ||
         op == static_cast<uint32_t>(NodeOp::StridedCopy) ||
         op == static_cast<uint32_t>(NodeOp::RowConcat) ||
         op == static_cast<uint32_t>(NodeOp::GroupNorm) ||
         op == static_cast<uint32_t>(NodeOp::Attention) ||
         op == static_cast<uint32_t>(NodeOp::PackedConv3d) ||
         op == static_cast<uint32_t>(NodeOp::ResizeBilinearToPlanes) ||
         op == static_cast<uint32_t>(NodeOp::LstmCell) ||
         op == static_cast<uint32_t>(NodeOp::UnaryMath) ||
         op == static_cast<uint32_t>(NodeOp::Cumsum) ||
         op == static_cast<uint32_t>(NodeOp::GruCell) ||
         op == static_cast<uint32_t>(NodeOp::GatherMap) ||
         op == static_cast<uint32_t>(NodeOp::GridSample) ||
         op == static_cast<uint32_t>(NodeOp::Select) ||
         op == static_cast<uint32_t>(NodeOp::IndexRows) ||
         op == static_cast<uint32_t>(NodeOp::GroupedMatmul) ||
         op == static_cast<uint32_t>(NodeOp::QuantizedGroupedMatmul) ||
         op == static_cast<uint32_t>(NodeOp::GroupSum) ||
         op == static_cast<uint32_t>(NodeOp::ChannelMix);
}

/// Indices into BlobNode::params for the convolution and pooling ops.
enum ConvParam : uint32_t {
  kPadTop = 0,
  kPadRight = 1,
  kPadBottom = 2,
  kPadLeft = 3,
  kKernelH = 4,
  kKernelW = 5,
  kStrideH = 6,
  kStrideW = 7,
  kDilationH = 8,
  kDilationW = 9,
  kGroups = 10,            ///< Conv2d; DepthwiseConv2d: depth multiplier
  kGroupInChannels = 11,   ///< Conv2d; DepthwiseConv2d: input channels
  kGroupOutChannels = 12,  ///< Conv2d only
  kPackedInChannels = 10,   ///< PackedConv2d, PackedWinogradConv2d: C
  kPackedOutChannels = 11,  ///< PackedConv2d, PackedWinogradConv2d: O
  kPackedActivation = 12,   ///< PackedConv2d: GemmActivation after the clamp (0 none)
  kPackedGroups = 13,       ///< PackedConv2d: groups (0 or 1: one)
  kWinogradTile = 13,       ///< PackedWinogradConv2d: kWinogradTileF2x2 or kWinogradTileF4x4
  kPackedActivationAlpha = 14,  ///< PackedConv2d, PackedWinogradConv2d: the leaky ReLU's slope bits
  kDeconvAdjustH = 13,      ///< Deconv2d: output rows added at the bottom (< kStrideH)
  kDeconvAdjustW = 14,      ///< Deconv2d: output columns added at the right (< kStrideW)
};

/// A groups field of op 18 (params[kPackedGroups]) or of its PackConv recipe (params[4]): the
/// compile half writes 0 for one group.
inline uint64_t conv_groups(uint32_t field) { return field == 0 ? 1 : field; }

/// Indices into BlobNode::params for PackedBottleneck (after its window at the ConvParam ones).
enum BottleneckParam : uint32_t {
  kBottleneckInChannels = 10,         ///< C
  kBottleneckExpandedChannels = 11,   ///< E (= C without an expand)
  kBottleneckOutChannels = 12,        ///< O (= E without a project)
  /// kBottleneckHasExpand | kBottleneckHasProject | kBottleneckHasSqueezeExcite, and S <<
  /// kBottleneckHighShift (the squeeze channels, >= 1 with squeeze-excitation, else 0)
  kBottleneckFlags = 13,
  /// BottleneckEpilogue (0 without an expand), and the squeeze's BottleneckEpilogue <<
  /// kBottleneckHighShift (0 without squeeze-excitation)
  kBottleneckExpandEpilogue = 14,
  /// BottleneckEpilogue, and the SqueezeGate << kBottleneckHighShift (0 without
  /// squeeze-excitation)
  kBottleneckDepthwiseEpilogue = 15,
};

/// One node. Unused inputs are kNoValue, unused params 0.
struct BlobNode {
  uint32_t op;  ///< NodeOp
  uint32_t num_inputs;
  uint32_t inputs[kMaxNodeInputs];
  uint32_t output;
  uint32_t params[kNodeParams];
  float fparams[2];  ///< output_min/output_max (conv, fc, binary, clamp); pad value
};

static_assert(sizeof(BlobHeader) == 56, "BlobHeader layout");
static_assert(sizeof(BlobValue) == 96, "BlobValue layout");
static_assert(sizeof(BlobRecipe) == 96, "BlobRecipe layout");
static_assert(sizeof(BlobNode) == 100, "BlobNode layout");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the cpu blob is read and written as little-endian structs"
#endif

}  // namespace tern::cpu
