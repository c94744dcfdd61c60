// The vulkan delegate blob, version 11: shared by the compile half (writer) and the runtime half
// (reader). Plain structs only (no STL): the runtime includes this file. The byte layout is
// documented in backends/vulkan/README.md; all fields are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/kernels/util/quant_buffer_layout.h"

namespace tern::vulkan {

/// The blob's first four bytes.
constexpr char kBlobMagic[4] = {'T', 'V', 'K', 'N'};
/// The blob format version this build writes and reads. A blob of another version is refused
/// with DelegateInvalidCompatibility (the method then runs the portable fallback). Version 1
/// was before node op 13 (pad), version 2 before quantized weights (value type 2, node ops 14
/// and 15), version 3 before f16 storage (BlobHeader::storage 1), version 4 before attention's
/// kv and mask groups (node op 12's parameters 13 and 14, grouped-query attention), version 5
/// before 3-D convolutions (node op 6's parameters 18-23: depth) and upsampling (node op 16),
/// version 6 before negative source strides of node op 9 (flip), version 7 before grouped
/// products (node ops 17 and 18, value type 3: a mixture of experts' group ends), version 8
/// before sin, cos and softplus (unary kinds 21 to 23), maximum and minimum (elementwise kinds 5 and 6),
/// RMS norm (node op 5's params[4]) and transposed convolutions (node op 19), version 9 before
/// i64 constants (embedding indices known at compile time: a constant index map), node op
/// 11's params[3] (an outer count: index_select along an inner dim), cumsum (node op 20) and
/// the reduce node's kind (params[0]: amax, amin), comparisons and logical and / or
/// (elementwise kinds 7 to 14), bool externals (value type 4), argmax / argmin (reduce kinds 3
/// and 4) and integers held as floats (value type 5, node op 11's params[4]), version 10
/// before int64 inputs read only by casts (value type 6): a runtime that reads an older
/// version falls back instead of refusing it as malformed.
constexpr uint32_t kBlobVersion = 11;
/// Most dimensions of a value and of a strided iteration.
constexpr uint32_t kMaxDims = 6;
/// Most inputs of one node (attention: q, k, v, mask).
constexpr uint32_t kMaxNodeInputs = 4;
/// Integer and float parameters of one node.
constexpr uint32_t kNodeParams = 28;
constexpr uint32_t kNodeFParams = 4;
/// "No value" in a node's input list and in a value's arg field.
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
/// The data section starts at a multiple of this many bytes, and so does every constant in it.
constexpr uint64_t kDataAlignment = 64;
/// Most elements of one value: shaders index with 32-bit integers.
constexpr uint64_t kMaxElements = 1ull << 30;
/// Storage element types (BlobHeader::storage): how every f32 value (ValueType::F32) is held on
/// the device and in the blob's constants. F16: IEEE binary16, 2 bytes per element, computed
/// in f32 (the shaders' f16-storage variants); the delegate's arguments stay f32 tensors,
/// converted at its edges. Quantized weights (and so node ops 14, 15, 18) are f32-storage only.
constexpr uint32_t kStorageF32 = 0;
constexpr uint32_t kStorageF16 = 1;
constexpr uint32_t kLastStorage = 1;

/// Bytes per element of an f32 value under `storage` (kStorageF32 or kStorageF16).
constexpr uint64_t storage_element_bytes(uint32_t storage) {
  return storage == kStorageF16 ? 2 : 4;
}

/// Fixed header at offset 0 (64 bytes).
struct BlobHeader {
  char magic[4];
  uint32_t version;
  uint32_t header_size;        ///< sizeof(BlobHeader); value records follow it
  uint32_t num_args;           ///< arguments of the delegate call (region inputs + outputs)
  uint32_t num_values;         ///< 1..2^20
  uint32_t num_nodes;          ///< 1..2^20
  uint32_t value_record_size;  ///< sizeof(BlobValue)
  uint32_t node_record_size;   ///< sizeof(BlobNode); node records follow the value records
  uint64_t data_offset;        ///< from the blob start; multiple of kDataAlignment
  uint64_t data_size;          ///< bytes of the data section
  uint32_t storage;            ///< kStorageF32 or kStorageF16
  /// Invocations per workgroup of the 1-D shaders (elementwise, copies, conv, pooling) and of
  /// the row shaders (softmax, layer_norm): a power of two in [32, 1024]; specialization
  /// constant 0. The runtime refuses a device whose limits are smaller.
  uint32_t workgroup_size;
  /// Tile edge of the tiled matmul (TILE x TILE invocations, two TILE x TILE tiles of shared
  /// memory): 8, 16 or 32; specialization constant 1.
  uint32_t matmul_tile;
  uint32_t reserved;  ///< 0
};

/// What a value is.
enum class ValueKind : uint32_t {
  Internal = 0,        ///< produced and consumed inside the delegate
  ExternalInput = 1,   ///< a delegate call argument read by the delegate
  ExternalOutput = 2,  ///< a delegate call argument written by the delegate
  Constant = 3,        ///< bytes in the data section, uploaded to the device at init
};

/// Element type of a value.
enum class ValueType : uint32_t {
  F32 = 0,    ///< stored as the header's storage type (f32 or f16)
  /// external inputs (embedding indices, group ends) and, since version 10, constants: raw
  /// little-endian int64 bytes (8 per element whatever the storage), embedding indices only
  I64 = 1,
  Quant = 2,  ///< constants only: an nf4/fp8 weight [rows, cols] in the QuantLayout below
  I32 = 3,    ///< external inputs only: group ends (version 8)
  /// (version 10) external inputs and outputs only: a bool tensor (a byte per element) held on
  /// the device as the storage's 0.0 / 1.0, converted at the delegate's edges (a nonzero byte
  /// is 1; a nonzero float true, NaN too). Inside the delegate bool values are F32 of 0 / 1.
  Bool = 4,
  /// (version 10) external inputs and outputs only: an int64 tensor held on the device as the
  /// storage's float (exact up to kExactIntF32 / kExactIntF16), converted at the edges; an
  /// input element beyond that fails the execute. Inside the delegate such integers (an
  /// argmax's indices) are F32 values.
  I64AsFloat = 5,
  /// (version 11) external inputs only: an int64 tensor the delegate reads only through casts
  /// to float or bool, converted at the edge to the storage's float by rounding (ATen's int64
  /// to float conversion; any value, nothing refused: a cast to bool sees zero as zero and
  /// anything else as nonzero). Never an index.
  I64CastToFloat = 6,
};
constexpr uint32_t kLastValueType = 6;
/// The largest integer magnitude every smaller one of which a float of the storage holds
/// exactly: f32 2^24, f16 2^11.
constexpr int64_t kExactIntF32 = int64_t{1} << 24;
constexpr int64_t kExactIntF16 = int64_t{1} << 11;
constexpr int64_t exact_int_limit(uint32_t storage) {
  return storage == kStorageF16 ? kExactIntF16 : kExactIntF32;
}

/// One tensor value (80 bytes). Row-major (tern's layout), `rank` 0..kMaxDims.
struct BlobValue {
  uint32_t kind;            ///< ValueKind
  uint32_t type;            ///< ValueType
  uint32_t rank;            ///< 0..kMaxDims
  uint32_t arg;             ///< delegate call argument index for externals, else kNoValue
  uint64_t dims[kMaxDims];  ///< first `rank` used, each 1..2^30, numel <= kMaxElements; rest 0
  uint64_t data_offset;     ///< constants: from the data section start (aligned), else 0
  uint64_t data_bytes;      ///< constants: storage_element_bytes * numel (f32), 8 * numel (i64), else 0
};

/// Node operators (BlobNode::op); the params of each, by index, are in the README.
enum class NodeOp : uint32_t {
  MatMul = 1,          ///< in: a, b, bias?  (matmul_tiled.comp)
  Elementwise = 2,     ///< in: a, b?, c?    (elementwise.comp: add sub mul div where, broadcast)
  Unary = 3,           ///< in: x            (unary.comp: activations)
  Softmax = 4,         ///< in: x            (softmax.comp)
  LayerNorm = 5,       ///< in: x, w?, b?    (layer_norm.comp)
  Conv = 6,            ///< in: x, w, b?     (conv.comp: direct 2-D and 3-D, groups)
  ChannelAffine = 7,   ///< in: x, scale, shift (channel_affine.comp: folded batch_norm)
  Pool2d = 8,          ///< in: x            (pool2d.comp: max, avg, adaptive avg)
  Copy = 9,            ///< in: x            (strided_copy.comp: views, permute, slice, cat, flip...)
  Reduce = 10,         ///< in: x            (reduce.comp: mean/sum over dims)
  /// in: weight [O, V, D], indices (i64 [count], an input or a constant; or, params[4] = 1,
  /// integers held as floats: an argmax's, an I64AsFloat input) (embedding.comp:
  /// out[o, c, :] = weight[o, idx[c], :]; index_select along any dim)
  Embedding = 11,
  Attention = 12,      ///< in: q, k, v, mask? (attention.comp)
  Pad = 13,            ///< in: x            (pad.comp: constant (negative pads crop), reflect)
  QuantLinear = 14,    ///< in: x, weight (quant), bias? (quant_gemv.comp / quant_gemm.comp)
  QuantEmbedding = 15, ///< in: table (quant), indices (i64) (quant_embedding.comp)
  Upsample2d = 16,     ///< in: x            (upsample2d.comp: nearest, bilinear; version 6)
  /// in: x [S, K], w (f32), ends (i32 / i64 [E]) (grouped_matmul.comp: a mixture of experts'
  /// products, rows [ends[e - 1], ends[e]) times expert e; version 8)
  GroupedMatmul = 17,
  /// in: x [S, K], w (quant [E·N, K]), ends (i32 / i64 [E]) (quant_grouped_linear.comp; version 8)
  QuantGroupedLinear = 18,
  /// in: x, w [C, O/g, KH, KW], b? (conv_transpose.comp: transposed 2-D conv; version 9)
  ConvTranspose = 19,
  /// in: x [O, S, I] (cumsum.comp: inclusive running sum along S, compensated f32; version 10)
  Cumsum = 20,
};
constexpr uint32_t kLastNodeOp = 20;

/// Unary::params[0].
enum class UnaryKind : int32_t {
  Clamp = 0,  ///< fparams[0], [1]: lo, hi (relu, hardtanh, clamp)
  Gelu = 1,
  GeluTanh = 2,
  Silu = 3,
  Sigmoid = 4,
  Hardswish = 5,
  Hardsigmoid = 6,
  Tanh = 7,
  Neg = 8,
  Abs = 9,
  Exp = 10,
  Log = 11,
  Sqrt = 12,
  Rsqrt = 13,
  Reciprocal = 14,
  Erf = 15,
  Pow = 16,        ///< fparams[0]: the scalar exponent (x^2, x^3, x^0.5 exact as ATen)
  LeakyRelu = 17,  ///< fparams[0]: negative slope
  Floor = 18,
  Ceil = 19,
  Round = 20,      ///< half to even
  Sin = 21,        ///< (version 9) argument reduced by pi/2 in three exact parts (no fma: unary.comp)
  Cos = 22,        ///< (version 9)
  Softplus = 23,   ///< (version 9) fparams[0] beta, [1] threshold: x beta > threshold ? x : log1p(e^(x beta)) / beta
};
constexpr int32_t kLastUnaryKind = 23;

/// Elementwise::params[0].
enum class ElementwiseKind : int32_t {
  Add = 0,    ///< a + alpha * b
  Sub = 1,    ///< a - alpha * b
  Mul = 2,
  Div = 3,
  Where = 4,  ///< c != 0 ? a : b  (inputs a, b, c: c the condition as 0/1 floats, a constant or computed)
  Maximum = 5,  ///< (version 9) a NaN operand gives NaN, else a > b ? a : b (as ATen)
  Minimum = 6,  ///< (version 9) a NaN operand gives NaN, else a < b ? a : b
  /// (version 10) comparisons: 1.0 when true, else 0.0; a NaN operand compares unequal
  Eq = 7,
  Ne = 8,
  Lt = 9,
  Le = 10,
  Gt = 11,
  Ge = 12,
  LogicalAnd = 13,  ///< (version 10) a != 0 && b != 0 (NaN is true)
  LogicalOr = 14,   ///< (version 10) a != 0 || b != 0
};
constexpr int32_t kLastElementwiseKind = 14;

/// Reduce::params[0] (version 10; 0 before).
enum class ReduceKind : int32_t {
  Sum = 0,  ///< times fparams[0] (mean: 1 / count)
  Max = 1,  ///< a NaN operand gives NaN (amax)
  Min = 2,  ///< (amin)
  /// The index (row-major over the reduced dims) of the first maximum / minimum, a NaN counting
  /// as both (ATen's argmax / argmin), written as a float: the reduced count at most the
  /// storage's exact_int_limit.
  ArgMax = 3,
  ArgMin = 4,
};
constexpr int32_t kLastReduceKind = 4;

/// Formats and scale granularity of a quantized weight (params[kQFormat], [kQGranularity] of
/// ops 14, 15 and 18): runtime/kernels/util/quant_buffer_layout.h, shared with the cuda backend.
using quant::QuantFormat;
using quant::QuantGranularity;
using quant::kLastQuantFormat;

/// Where ops 14, 15 and 18 keep the weight's scheme in their params (the same indices in all,
/// read by shaders/quant_decode.glsl); fparams[0] is the double quantization offset.
constexpr uint32_t kQFormat = 16;        ///< QuantFormat
constexpr uint32_t kQBlockSize = 17;     ///< NF4 block (a power of two in [32, 4096]); else 0
constexpr uint32_t kQDqBlockSize = 18;   ///< NF4 double quant: absmax values per absmax2; else 0
constexpr uint32_t kQGranularity = 19;   ///< FP8: QuantGranularity; else 0
constexpr uint32_t kQBlockRows = 20;     ///< FP8 Block2D tile rows; else 0
constexpr uint32_t kQBlockCols = 21;     ///< FP8 Block2D tile columns; else 0
constexpr uint32_t kQScaleWord = 22;     ///< word of the absmax (NF4) / scales (FP8) / dq codes
constexpr uint32_t kQAbsmax2Word = 23;   ///< NF4 double quant: word of absmax2; else 0
constexpr uint32_t kQTableWord = 24;     ///< NF4 double quant: word of the 256-entry table; else 0
constexpr uint32_t kQRows = 25;          ///< the weight's rows (dims[0])
constexpr uint32_t kQCols = 26;          ///< the weight's columns (dims[1])

/// The bytes of a quantized weight constant: quant::QuantLayout (32-bit words: the packed
/// codes, then the scheme's parameter arrays), computed by quant::quant_layout.
using quant::QuantLayout;
using quant::quant_layout;

/// One node (160 bytes): `op` on `inputs` writing `output`.
struct BlobNode {
  uint32_t op;  ///< NodeOp
  uint32_t num_inputs;
  uint32_t inputs[kMaxNodeInputs];  ///< value indices; unused kNoValue
  uint32_t output;                  ///< value index (Internal or ExternalOutput)
  uint32_t reserved;                ///< 0
  int32_t params[kNodeParams];      ///< unused 0
  float fparams[kNodeFParams];      ///< unused 0
};

static_assert(sizeof(BlobHeader) == 64, "blob header layout");
static_assert(sizeof(BlobValue) == 80, "blob value layout");
static_assert(sizeof(BlobNode) == 160, "blob node layout");

}  // namespace tern::vulkan
