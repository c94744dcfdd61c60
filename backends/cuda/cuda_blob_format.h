// The cuda delegate blob, version 4: shared by the compile half (writer) and the runtime half
// (reader). Plain structs only (no STL): the runtime includes this file. The byte layout is
// documented in backends/cuda/README.md; all fields are little-endian.
//
// A blob describes one region in tern's own layout (contiguous, row-major: no re-layout at the
// edges): a table of values (each a float (f32, or f16/bf16 inside a 16-bit blob), integer or
// bool tensor with a place in one of three device
// buffers: the activation arena, the weights buffer, or an alias of another value), a table of
// nodes in execution order, and a memory plan (the arena, weights and workspace sizes). The
// blob carries no weight bytes: constants are delegate call arguments (docs/partitioning.md)
// that the runtime uploads once, at prepare.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/kernels/util/quant_buffer_layout.h"

namespace tern::cuda {

/// The blob's first four bytes.
constexpr char kBlobMagic[4] = {'T', 'C', 'U', 'D'};
/// The blob format version this build writes and reads. A blob of another version is refused
/// with DelegateInvalidCompatibility (the method then runs the portable fallback).
/// Version 2 added the f16/bf16 compute dtypes (ValueDType F16, BF16), the ops GroupNorm ..
/// IndexSelect and any-dtype data movement; version 3 the quantized (nf4 / fp8) weights
/// (ValueDType Nf4 .. Fp8E5M2, ops QuantLinear and QuantEmbedding); version 4 negative
/// StridedCopy strides (flip); version 5 a mixture of experts' products (ops GroupedMatmul and
/// QuantGroupedLinear); older blobs are refused.
constexpr uint32_t kBlobVersion = 5;
/// Most dimensions of a value.
constexpr uint32_t kMaxDims = 6;
/// Most inputs of one node (a concat's parts).
constexpr uint32_t kMaxNodeInputs = 8;
/// Integer and float parameters of one node.
constexpr uint32_t kNodeIntParams = 16;
constexpr uint32_t kNodeFloatParams = 4;
/// "No value": an unused or absent (optional) node input, a value without an argument or
/// without an alias.
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
/// Every arena and weights offset, and the arena/weights/workspace sizes, are multiples of
/// this (cuBLASLt wants 16-byte aligned matrices; 256 keeps every tensor on its own segment).
constexpr uint64_t kDeviceAlignment = 256;
/// Bounds on the tables and on one dimension (the reader refuses more).
constexpr uint32_t kMaxValues = 1u << 20;
constexpr uint32_t kMaxNodes = 1u << 20;
constexpr uint64_t kMaxDim = 1ull << 31;
/// Bound on each of the three device buffers (1 TiB): keeps every sum of offsets and sizes far
/// from overflow.
constexpr uint64_t kMaxBufferBytes = 1ull << 40;

/// The compute dtype a blob was built for (compile spec "cuda:f16" / "cuda:bf16", f32
/// accumulation). In an F16/BF16 blob every float value inside the delegate (internal values and
/// constants) is stored in that dtype; the delegate's float arguments stay f32 (tern's tensors):
/// Cast nodes convert the external inputs after they are copied in and the external outputs
/// before they are copied out, and constants (f32 arguments) are converted once at prepare.
/// Kernels compute in f32 (GEMMs: CUBLAS_COMPUTE_32F with 16-bit A, B and D).
enum class ComputeDType : uint32_t { F32 = 0, F16 = 1, BF16 = 2 };
constexpr uint32_t kLastComputeDType = 2;

/// Fixed header at offset 0.
struct BlobHeader {
  char magic[4];
  uint32_t version;
  uint32_t header_size;        ///< sizeof(BlobHeader); value records follow it
  uint32_t num_args;           ///< arguments of the delegate call (region inputs + outputs)
  uint32_t num_values;         ///< 1..kMaxValues
  uint32_t num_nodes;          ///< 1..kMaxNodes
  uint32_t value_record_size;  ///< sizeof(BlobValue)
  uint32_t node_record_size;   ///< sizeof(BlobNode); node records follow the value records
  uint32_t compute_dtype;      ///< ComputeDType
  /// The lowest compute capability the blob may run on, as major * 10 + minor (e.g. 70).
  /// A device below it makes init refuse the blob (the method runs its fallback).
  uint32_t min_compute_capability;
  uint64_t arena_bytes;      ///< the activation arena (internal and external values)
  uint64_t weights_bytes;    ///< the weights buffer (constants, uploaded at prepare)
  uint64_t workspace_bytes;  ///< scratch shared by the nodes (im2col columns, attention scores)
  uint64_t blob_bytes;       ///< header + tables: exactly the blob's size
};

/// What a value is.
enum class ValueKind : uint32_t {
  Internal = 0,        ///< produced and consumed inside the delegate (arena)
  ExternalInput = 1,   ///< a delegate call argument copied host -> arena at execute
  ExternalOutput = 2,  ///< a delegate call argument copied arena -> host after the nodes
  Constant = 3,        ///< a delegate call argument uploaded once to the weights buffer
};
constexpr uint32_t kLastValueKind = 3;

/// Element types of values (a subset of tern's DType codes, runtime/core/dtype.h). F16 and BF16
/// appear only in blobs of that compute dtype (the storage of its float values). Nf4, Fp8E4M3
/// and Fp8E5M2 are quantized weights: constants of rank 2 [rows, cols] (an argument of that
/// tern dtype with its scheme tensors) whose device bytes are the quant::QuantLayout buffer of
/// the scheme in the params of the nodes reading it (QuantLinear, QuantEmbedding); `bytes` is
/// that buffer's size (4 * total_words), checked by every node that reads the value.
enum class ValueDType : uint32_t { F32 = 0, F16 = 1, BF16 = 2, I64 = 3, I32 = 4, Bool = 8,
                                   Nf4 = 9, Fp8E4M3 = 10, Fp8E5M2 = 11 };

/// One value: a tensor, row-major with `dims`.
struct BlobValue {
  uint32_t kind;   ///< ValueKind
  uint32_t dtype;  ///< ValueDType
  uint32_t rank;   ///< 0..kMaxDims (0: one element)
  uint32_t arg;    ///< delegate call argument of an external or constant value, else kNoValue
  /// kNoValue, or the value whose bytes this one shares (a view: reshape/view/flatten/
  /// squeeze/unsqueeze). The target is not a constant and not itself an alias, has the same
  /// byte size; `offset` repeats the target's. Only Internal and ExternalOutput values alias.
  uint32_t alias_of;
  uint32_t reserved;  ///< 0
  uint64_t dims[kMaxDims];  ///< first `rank` used, each 1..kMaxDim; the rest 0
  uint64_t offset;  ///< byte offset in the arena (constants: in the weights buffer); aligned
  uint64_t bytes;   ///< numel * element size
};

/// Node operators (BlobNode::op). Shapes come from the value table; what each op reads from
/// params/fparams is listed with it, and the reader checks every one.
enum class NodeOp : uint32_t {
  /// out[b] = act(alpha * a[b] · op(w[b]) + bias). in: a [.., M, K], w ([N, K] when
  /// params[4] = 1, else [K, N]), bias [N] or kNoValue. params: [0] M, [1] N, [2] K,
  /// [3] batch, [4] w transposed (0/1), [5] a's batch stride (0 or M*K), [6] w's batch
  /// stride (0 or K*N), [7] Activation (None, Relu, GeluTanh). fparams[0] alpha.
  /// Output: batch * M * N elements.
  Gemm = 1,
  /// out = act(conv(x, w) + bias), NCHW. in: x [N, C, H, W], w [O, C/g, KH, KW], bias [O] or
  /// kNoValue. params: [0, 1] stride h, w, [2, 3] padding h, w, [4, 5] dilation h, w,
  /// [6] groups, [7] Activation (None, Relu). Output [N, O, OH, OW]. A 1-D convolution (conv1d)
  /// is the same op on rank-3 x [N, C, L], w [O, C/g, K] and output [N, O, OL], run with height
  /// 1: params[0] (stride h) 1, [2] (padding h) 0, [4] (dilation h) 1.
  Conv2d = 2,
  /// out = a (op) b with NumPy broadcasting over right-aligned dims. in: a, b (or kNoValue:
  /// b is the scalar fparams[1]). params[0] BinaryOp. fparams[0] alpha (b is scaled by it:
  /// add/sub only; 1 otherwise).
  Binary = 3,
  /// out = f(x). params[0] UnaryOp; fparams[0], [1]: clamp min, max / pow exponent.
  Unary = 4,
  /// Softmax (params[0] = 0) or log-softmax (1) over the last dim.
  Softmax = 5,
  /// Layer norm over the last params[0] elements. in: x, weight [params[0]] or kNoValue,
  /// bias [params[0]] or kNoValue. fparams[0] eps.
  LayerNorm = 6,
  /// Inference batch norm over dim 1. in: x [N, C, ...], weight [C] or kNoValue, bias [C] or
  /// kNoValue, running mean [C], running var [C]. fparams[0] eps.
  BatchNorm = 7,
  /// params: [0, 1] kernel h, w, [2, 3] stride, [4, 5] padding, [6, 7] dilation. x and out
  /// [N, C, H, W]; windows clipped to the input (padding never read).
  MaxPool2d = 8,
  /// params as MaxPool2d without dilation (1), [8] count_include_pad (0/1), [9] divisor
  /// override (0: none).
  AvgPool2d = 9,
  /// x [N, C, H, W] -> out [N, C, OH, OW] (ATen's adaptive windows).
  AdaptiveAvgPool2d = 10,
  /// Sum (params[3] = 0) or mean (1) over the middle of x viewed as [outer, reduce, inner]:
  /// params [0] outer, [1] reduce, [2] inner.
  Reduce = 11,
  /// out[i] = x[params[0] + sum_d i_d * params[1 + d]] over out's dims (strides in elements,
  /// |stride| <= 2^40; a negative one reads backwards, since version 4): permute, transpose,
  /// slice, select, expand, split pieces, flip. Any dtype (x's = out's).
  StridedCopy = 12,
  /// Concatenation along dim params[0] of the 2..kMaxNodeInputs inputs (any dtype, all the
  /// output's). A longer cat is lowered as a chain of these.
  Concat = 13,
  /// out[..., :] = weight[indices[...], :]. in: weight [V, D], indices (I64/I32). An index
  /// outside [0, V) writes zeros and makes execute fail with InvalidArgument.
  Embedding = 14,
  /// Scaled dot-product attention. in: q [batch, L, E], k [batch, S, E], v [batch, S, Ev],
  /// mask or kNoValue. params: [0] batch, [1] L, [2] S, [3] E, [4] Ev, [5] causal (0/1),
  /// [6] MaskKind, [7] inner batch size (the last batch dim, 1 if none), [8..11] the mask's
  /// element strides over (outer batch, inner batch, L, S). fparams[0] scale. Scores use
  /// batch * L * S floats of the workspace.
  Attention = 15,
  /// Group norm of x [N, C, *] over C/params[0] channels at a time. in: x, weight [C] or
  /// kNoValue, bias [C] or kNoValue. params[0] groups (divides C). fparams[0] eps.
  GroupNorm = 16,
  /// RMS norm over the last params[0] elements. in: x, weight [params[0]] or kNoValue.
  /// fparams[0] eps.
  RmsNorm = 17,
  /// x [N, C, H, W] -> out [N, C, OH, OW]. params[0] 0 nearest, 1 bilinear; [1] align_corners
  /// (bilinear). fparams[0], [1]: the source step per output pixel along h, w (as the portable
  /// kernels compute it: 1/scale, in/out, or with align_corners (in-1)/(out-1)).
  Upsample2d = 18,
  /// out[i] = x[i - before] per dim, or fparams[0] outside x (constant, params[0] = 0), or x
  /// reflected at its edges (params[0] = 1). params[1 + d]: padding before dim d (negative:
  /// cropped), for out's dims. x and out of equal rank.
  Pad = 19,
  /// Transposed convolution, NCHW. in: x [N, C, H, W], w [C, O/g, KH, KW], bias [O] or kNoValue.
  /// params: [0, 1] stride, [2, 3] padding, [4, 5] output padding, [6, 7] dilation, [8] groups.
  ConvTranspose2d = 20,
  /// out = cond ? a : b with three-way broadcasting. in: cond (bool), a, b (kNoValue: the
  /// scalar fparams[0] / fparams[1]).
  Where = 21,
  /// out (bool) = a (op) b with broadcasting. in: a, b (kNoValue: the scalar fparams[0]), of one
  /// dtype. params[0] CompareOp.
  Compare = 22,
  /// out = x converted to out's dtype (same element count; float -> int truncates, -> bool is
  /// != 0). The edge conversions of a 16-bit blob are Cast nodes too.
  Cast = 23,
  /// out[o, j, i] = x[o, index[j], i] over x viewed as [params[0] outer, params[1] dim,
  /// params[2] inner]. in: x, index (I64/I32, 1-D). An index outside [0, dim) writes zeros and
  /// makes execute fail with InvalidArgument.
  IndexSelect = 24,
  /// out = x · dequant(w)^T + bias with w a quantized weight [N, K] decoded in the kernel
  /// (never expanded in memory). in: x [.., K] (f32), w (Nf4/Fp8 value [N, K]), bias [N] or
  /// kNoValue. params: [0] M (x's rows), [1] N, [2] K, then the scheme at kQFormat..kQBlockCols.
  /// fparams[0] the double quantization offset (0 otherwise). Output [.., N]. f32 blobs only.
  QuantLinear = 25,
  /// out[..., :] = dequant(w)[indices[...], :]. in: w (Nf4/Fp8 value [V, D]), indices
  /// (I64/I32). params: [0] V, [1] D, [2] index count, the scheme at kQFormat..kQBlockCols;
  /// fparams[0] as QuantLinear. An index outside [0, V) writes zeros and makes execute fail
  /// with InvalidArgument. f32 blobs only.
  QuantEmbedding = 26,
  /// A mixture of experts' products: out[s, :] = x[s, :] · w[e] for the group e of row s,
  /// group e being rows [ends[e - 1], ends[e]) (group 0 from row 0); rows at or after the last
  /// end are zeros. in: x [S, K], w [E, K, N] (float), ends [E] (I32/I64). Shapes from the
  /// value table; no params. Ends that go backwards or past S make execute fail with
  /// InvalidArgument (checked on the host when the ends are an external input, and by the
  /// kernel: error flag bit kErrorGroupEnds). Version 5.
  GroupedMatmul = 27,
  /// The same with nf4 / fp8 experts (tern::grouped_linear): out[s, n] = x[s, :] ·
  /// dequant(w)[e N + n, :]. in: x [S, K] (f32), w (Nf4/Fp8 value [E·N, K]), ends [E]
  /// (I32/I64). params: [0] S, [1] N (one expert's rows), [2] K, the scheme at
  /// kQFormat..kQBlockCols; fparams[0] as QuantLinear. f32 blobs only. Version 5.
  QuantGroupedLinear = 28,
};
constexpr uint32_t kLastNodeOp = 28;
/// Bits of the device error flag (one int, copied back after the nodes when a node may set it):
/// an index outside its table (Embedding, IndexSelect, QuantEmbedding), group ends out of order
/// (GroupedMatmul, QuantGroupedLinear).
constexpr int kErrorIndex = 1;
constexpr int kErrorGroupEnds = 2;

/// Where QuantLinear, QuantEmbedding and QuantGroupedLinear keep their weight's scheme (quant::quant_layout's
/// arguments; the reader recomputes the layout and checks the weight's bytes against it).
constexpr uint32_t kQFormat = 3;       ///< quant::QuantFormat
constexpr uint32_t kQBlockSize = 4;    ///< NF4 block (a power of two in [32, 4096]); else 0
constexpr uint32_t kQDqBlockSize = 5;  ///< NF4 double quant: absmax values per absmax2; else 0
constexpr uint32_t kQGranularity = 6;  ///< FP8: quant::QuantGranularity; else 0
constexpr uint32_t kQBlockRows = 7;    ///< FP8 Block2D tile rows; else 0
constexpr uint32_t kQBlockCols = 8;    ///< FP8 Block2D tile columns; else 0
constexpr uint32_t kQuantNodeParams = 9;

/// Epilogue activations of Gemm and Conv2d.
enum class Activation : int64_t { None = 0, Relu = 1, GeluTanh = 2 };
constexpr int64_t kLastActivation = 2;

/// Binary operators.
enum class BinaryOp : int64_t { Add = 0, Sub = 1, Mul = 2, Div = 3, Pow = 4, Maximum = 5,
                                 Minimum = 6 };
constexpr int64_t kLastBinaryOp = 6;

/// Unary operators.
enum class UnaryOp : int64_t {
  Relu = 0,
  Clamp = 1,  ///< to [fparams[0], fparams[1]] (hardtanh, relu6, clamp; ±inf for no bound)
  Gelu = 2,   ///< erf form
  GeluTanh = 3,
  Silu = 4,
  Sigmoid = 5,
  Hardswish = 6,
  Hardsigmoid = 7,
  Tanh = 8,
  Exp = 9,
  Log = 10,
  Sqrt = 11,
  Rsqrt = 12,
  Neg = 13,
  Abs = 14,
  Reciprocal = 15,
  PowScalar = 16,  ///< x ^ fparams[0]
  Copy = 17,
};
constexpr int64_t kLastUnaryOp = 17;

/// Comparisons (Compare); integers compare exactly, floats in f32. LogicalAnd/Or take a and b
/// as truth values (nonzero is true).
enum class CompareOp : int64_t { Eq = 0, Ne = 1, Lt = 2, Le = 3, Gt = 4, Ge = 5, LogicalAnd = 6,
                                 LogicalOr = 7 };
constexpr int64_t kLastCompareOp = 7;

/// Attention masks.
enum class MaskKind : int64_t { None = 0, Bool = 1, Additive = 2 };

/// One node. Unused inputs are kNoValue, unused params 0.
struct BlobNode {
  uint32_t op;  ///< NodeOp
  uint32_t num_inputs;  ///< input slots used (optional ones may hold kNoValue)
  uint32_t inputs[kMaxNodeInputs];
  uint32_t output;
  uint32_t reserved;  ///< 0
  int64_t params[kNodeIntParams];
  float fparams[kNodeFloatParams];
};

static_assert(sizeof(BlobHeader) == 72, "BlobHeader layout");
static_assert(sizeof(BlobValue) == 88, "BlobValue layout");
static_assert(sizeof(BlobNode) == 192, "BlobNode layout");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the cuda blob is read and written as little-endian structs"
#endif

/// Bytes per element of a ValueDType (0 for an unknown code).
constexpr uint64_t value_dtype_bytes(uint32_t dtype) {
  return dtype == static_cast<uint32_t>(ValueDType::F32)    ? 4
         : dtype == static_cast<uint32_t>(ValueDType::F16)  ? 2
         : dtype == static_cast<uint32_t>(ValueDType::BF16) ? 2
         : dtype == static_cast<uint32_t>(ValueDType::I64) ? 8
         : dtype == static_cast<uint32_t>(ValueDType::I32) ? 4
         : dtype == static_cast<uint32_t>(ValueDType::Bool) ? 1
                                                            : 0;
}

/// Whether a ValueDType code is a quantized weight (Nf4, Fp8E4M3, Fp8E5M2).
constexpr bool is_quant_dtype(uint32_t dtype) {
  return dtype >= static_cast<uint32_t>(ValueDType::Nf4) &&
         dtype <= static_cast<uint32_t>(ValueDType::Fp8E5M2);
}

/// The storage dtype of the float values of a blob computing in `compute`.
constexpr uint32_t compute_storage(uint32_t compute) {
  return compute == static_cast<uint32_t>(ComputeDType::F16)    ? static_cast<uint32_t>(ValueDType::F16)
         : compute == static_cast<uint32_t>(ComputeDType::BF16) ? static_cast<uint32_t>(ValueDType::BF16)
                                                                : static_cast<uint32_t>(ValueDType::F32);
}

/// Floats of workspace a Conv2d node needs for its im2col columns (one image, all groups):
/// 0 when it needs none (1x1, stride 1, no padding; or depthwise, C/g = 1, run directly).
constexpr uint64_t conv_workspace_floats(uint64_t c, uint64_t kh, uint64_t kw, uint64_t oh,
                                         uint64_t ow, uint64_t groups, bool pointwise) {
  return (pointwise || c == groups) ? 0 : c * kh * kw * oh * ow;
}

}  // namespace tern::cuda
