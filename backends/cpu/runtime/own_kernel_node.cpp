#include "backends/cpu/runtime/own_kernel_node.h"

#include <cstring>

#include "backends/cpu/kernels/batch_matmul.h"
#include "backends/cpu/kernels/fused_attention.h"
#include "backends/cpu/kernels/bottleneck.h"
#include "backends/cpu/kernels/cumsum_rows.h"
#include "backends/cpu/kernels/gather_map.h"
#include "backends/cpu/kernels/grid_sample_nhwc.h"
#include "backends/cpu/kernels/group_norm_nhwc.h"
#include "backends/cpu/kernels/layer_norm_rows.h"
#include "backends/cpu/kernels/gru_cell.h"
#include "backends/cpu/kernels/lstm_cell.h"
#include "backends/cpu/kernels/unary_math.h"
#include "backends/cpu/kernels/packed_conv.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/quant_embedding.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/resize_planes.h"
#include "backends/cpu/kernels/row_concat.h"
#include "backends/cpu/kernels/grouped_gemm.h"
#include "backends/cpu/kernels/channel_mix.h"
#include "backends/cpu/kernels/group_sum.h"
#include "backends/cpu/kernels/index_rows.h"
#include "backends/cpu/kernels/select_where.h"
#include "backends/cpu/kernels/strided_copy.h"
#include "backends/cpu/kernels/winograd_conv.h"
#include "runtime/kernels/util/float16_bits.h"
#include "runtime/kernels/util/gelu_array.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {

static_assert(kPanelWidth == static_cast<int64_t>(kPackedPanelWidth),
              "the blob's packed weight layout is the kernel's");
static_assert(kLastGemmActivation == kLastPackedActivation,
              "the blob's activation codes are the kernel's");
static_assert(static_cast<uint32_t>(GemmActivation::Silu) == 4, "SiLU is the blob's code 4");
static_assert(static_cast<uint32_t>(GemmActivation::LeakyRelu) == kLeakyReluActivation,
              "the leaky ReLU is the blob's code 7");
static_assert(kMaxBottleneckKernel == kMaxBottleneckWindow, "the blob's window bound is the kernel's");
static_assert(kRowConcatMaxInputs == static_cast<int>(kMaxConcatInputs),
              "the row concat takes every input a blob node can have");
static_assert(kStridedCopyMaxDims == static_cast<int>(kMaxDims),
              "the blob's copy rank is the kernel's");
static_assert(kResizePlanesMaxChannels == static_cast<int64_t>(kMaxResizePlanesChannels),
              "the blob's channel limit of op 34 is the kernel's");

namespace {

/// A convolution node's clamp (fparams) and, when `addr` is not null, its data pointers: x,
/// the packed weight, y and the optional residual (ops 18, 19, 33).
template <typename Problem>
void bind_conv_io(const BlobNode& node, float* const* addr, Problem* p) {
  p->out_min = node.fparams[0];
  p->out_max = node.fparams[1];
  if (addr != nullptr) {
    p->x = addr[node.inputs[0]];
    p->packed = addr[node.inputs[1]];
    p->y = addr[node.output];
    p->residual = node.num_inputs == 3 ? addr[node.inputs[2]] : nullptr;
  }
}

/// Fills what a direct and a Winograd conv problem share (ConvProblem, WinogradProblem) from
/// node `node` (ops 18, 19): NHWC sizes, top/left pads, the clamp, and the data pointers from
/// `addr` when it is not null.
template <typename Problem>
Problem conv_problem(const BlobPlan& plan, const BlobNode& node, float* const* addr) {
  const BlobValue& x = plan.values[node.inputs[0]];
  const BlobValue& y = plan.values[node.output];
  Problem p;
  p.batch = static_cast<int64_t>(x.dims[0]);
  p.in_h = static_cast<int64_t>(x.dims[1]);
  p.in_w = static_cast<int64_t>(x.dims[2]);
  p.in_c = static_cast<int64_t>(x.dims[3]);
  p.out_h = static_cast<int64_t>(y.dims[1]);
  p.out_w = static_cast<int64_t>(y.dims[2]);
  p.out_c = static_cast<int64_t>(y.dims[3]);
  p.pad_top = node.params[kPadTop];
  p.pad_left = node.params[kPadLeft];
  bind_conv_io(node, addr, &p);
  return p;
}

/// The WinogradProblem of a PackedWinogradConv2d node (op 19), its tile from params[kWinogradTile]
/// (checked: kWinogradTileF2x2 or kWinogradTileF4x4).
WinogradProblem winograd_problem(const BlobPlan& plan, const BlobNode& node, float* const* addr) {
  WinogradProblem p = conv_problem<WinogradProblem>(plan, node, addr);
  p.tile =
      node.params[kWinogradTile] == kWinogradTileF4x4 ? WinogradTile::F4x4 : WinogradTile::F2x2;
  return p;
}

/// The ConvProblem of a PackedConv3d node (op 33; validated by check_packed_conv3d): NDHWC
/// sizes, the window at the Conv3dParam indices, the clamp and the activation, and the data
/// pointers from `addr`.
ConvProblem conv3d_problem(const BlobPlan& plan, const BlobNode& node, float* const* addr) {
  const BlobValue& x = plan.values[node.inputs[0]];
  const BlobValue& y = plan.values[node.output];
  const uint32_t* q = node.params;
  ConvProblem p;
  p.batch = static_cast<int64_t>(x.dims[0]);
  p.in_d = static_cast<int64_t>(x.dims[1]);
  p.in_h = static_cast<int64_t>(x.dims[2]);
  p.in_w = static_cast<int64_t>(x.dims[3]);
  p.in_c = static_cast<int64_t>(x.dims[4]);
  p.out_d = static_cast<int64_t>(y.dims[1]);
  p.out_h = static_cast<int64_t>(y.dims[2]);
  p.out_w = static_cast<int64_t>(y.dims[3]);
  p.out_c = static_cast<int64_t>(y.dims[4]);
  p.pad_front = q[kConv3dPad];
  p.pad_top = q[kConv3dPad + 1];
  p.pad_left = q[kConv3dPad + 2];
  p.kernel_d = q[kConv3dKernel];
  p.kernel_h = q[kConv3dKernel + 1];
  p.kernel_w = q[kConv3dKernel + 2];
  p.stride_d = q[kConv3dStride];
  p.stride_h = q[kConv3dStride + 1];
  p.stride_w = q[kConv3dStride + 2];
  p.dilation_d = q[kConv3dDilation];
  p.dilation_h = q[kConv3dDilation + 1];
  p.dilation_w = q[kConv3dDilation + 2];
  p.groups = static_cast<int64_t>(conv_groups(q[kConv3dGroups]));
  p.activation = static_cast<GemmActivation>(q[kConv3dActivation]);
  bind_conv_io(node, addr, &p);
  return p;
}

/// A PackedBottleneck stage epilogue code (validated) as the kernel's clamp and activation.
StageEpilogue stage_epilogue(uint32_t code) {
  StageEpilogue e;
  switch (static_cast<BottleneckEpilogue>(code)) {
    case BottleneckEpilogue::Relu:
      e.lo = 0.0f;
      break;
    case BottleneckEpilogue::Relu6:
      e.lo = 0.0f;
      e.hi = 6.0f;
      break;
    case BottleneckEpilogue::Hardswish:
      e.act = GemmActivation::Hardswish;
      break;
    case BottleneckEpilogue::Silu:
      e.act = GemmActivation::Silu;
      break;
    case BottleneckEpilogue::None:
      break;
  }
  return e;
}

/// The kernel's problem for PackedBottleneck node `node`; pointers from `addr` when not null.
BottleneckProblem bottleneck_problem(const BlobPlan& plan, const BlobNode& node,
                                     float* const* addr) {
  const uint32_t* q = node.params;
  const BlobValue& x = plan.values[node.inputs[0]];
  const BlobValue& y = plan.values[node.output];
  constexpr uint32_t kLow = (1u << kBottleneckHighShift) - 1;
  const uint32_t flags = q[kBottleneckFlags] & kLow;
  const bool expand = (flags & kBottleneckHasExpand) != 0;
  const bool project = (flags & kBottleneckHasProject) != 0;
  const bool se = (flags & kBottleneckHasSqueezeExcite) != 0;
  BottleneckProblem p;
  p.batch = static_cast<int64_t>(x.dims[0]);
  p.in_h = static_cast<int64_t>(x.dims[1]);
  p.in_w = static_cast<int64_t>(x.dims[2]);
  p.in_c = static_cast<int64_t>(x.dims[3]);
  p.exp_c = q[kBottleneckExpandedChannels];
  p.out_h = static_cast<int64_t>(y.dims[1]);
  p.out_w = static_cast<int64_t>(y.dims[2]);
  p.out_c = static_cast<int64_t>(y.dims[3]);
  p.kernel_h = q[kKernelH];
  p.kernel_w = q[kKernelW];
  p.stride_h = q[kStrideH];
  p.stride_w = q[kStrideW];
  p.pad_top = q[kPadTop];
  p.pad_left = q[kPadLeft];
  p.expand = stage_epilogue(q[kBottleneckExpandEpilogue] & kLow);
  p.depthwise = stage_epilogue(q[kBottleneckDepthwiseEpilogue] & kLow);
  p.out_min = node.fparams[0];
  p.out_max = node.fparams[1];
  if (se) {
    p.se_c = q[kBottleneckFlags] >> kBottleneckHighShift;
    p.se_squeeze = stage_epilogue(q[kBottleneckExpandEpilogue] >> kBottleneckHighShift);
    if (static_cast<SqueezeGate>(q[kBottleneckDepthwiseEpilogue] >> kBottleneckHighShift) ==
        SqueezeGate::Clamp01) {
      p.se_gate.lo = 0.0f;
      p.se_gate.hi = 1.0f;
    } else {
      p.se_gate.act = GemmActivation::Sigmoid;
    }
  }
  // Placeholders that only say which stages exist (the scratch size depends on that).
  static const float kAbsent = 0.0f;
  p.expand_packed = expand ? &kAbsent : nullptr;
  p.project_packed = project ? &kAbsent : nullptr;
  p.se_squeeze_packed = se ? &kAbsent : nullptr;
  p.se_excite_packed = se ? &kAbsent : nullptr;
  if (addr != nullptr) {
    const float* w = addr[node.inputs[1]];
    const uint64_t dw_at = expand ? packed_fc_floats(p.exp_c, p.in_c) : 0;
    const uint64_t project_at =
        dw_at + bottleneck_depthwise_floats(p.kernel_h, p.kernel_w, p.exp_c);
    const uint64_t se_at = project_at + (project ? packed_fc_floats(p.out_c, p.exp_c) : 0);
    p.x = addr[node.inputs[0]];
    p.expand_packed = expand ? w : nullptr;
    p.dw_weight = w + dw_at;
    p.dw_bias = w + dw_at + p.kernel_h * p.kernel_w * p.exp_c;
    p.project_packed = project ? w + project_at : nullptr;
    p.se_squeeze_packed = se ? w + se_at : nullptr;
    p.se_excite_packed = se ? w + se_at + packed_fc_floats(p.se_c, p.exp_c) : nullptr;
    const bool affine = (flags & kBottleneckHasPostAffine) != 0;  // validated: no project
    p.residual = node.num_inputs == (affine ? 4u : 3u) ? addr[node.inputs[2]] : nullptr;
    if (affine) {
      p.post_scale = addr[node.inputs[node.num_inputs - 1]];
      p.post_shift = p.post_scale + p.exp_c;
    }
    p.y = addr[node.output];
  }
  return p;
}

/// GELU split over the pool in chunks of kGeluChunk floats (enough work per task to pay for
/// the dispatch), each through the portable kernel's vectorized loop.
constexpr int64_t kGeluChunk = 16384;

struct GeluTask {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t n = 0;
  bool tanh_form = false;
};

void gelu_chunk(void* context, size_t i) {
  const GeluTask& t = *static_cast<const GeluTask*>(context);
  const int64_t begin = static_cast<int64_t>(i) * kGeluChunk;
  const int64_t count = t.n - begin < kGeluChunk ? t.n - begin : kGeluChunk;
  portable::gelu_f32(t.tanh_form, t.x + begin, t.y + begin, count);
}

void run_gelu(const GeluTask& t, pthreadpool_t pool) {
  const size_t chunks = static_cast<size_t>((t.n + kGeluChunk - 1) / kGeluChunk);
  if (pool == nullptr || chunks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    portable::gelu_f32(t.tanh_form, t.x, t.y, t.n);
    return;
  }
  pthreadpool_parallelize_1d(pool, &gelu_chunk, const_cast<GeluTask*>(&t), chunks, kPoolFlags);
}

/// The kernel's problem for BatchMatMul node `node`; pointers from `addr` when not null.
BatchMatMulProblem batch_matmul_problem(const BlobPlan& plan, const BlobNode& node,
                                        float* const* addr) {
  const BlobValue& a = plan.values[node.inputs[0]];
  const BlobValue& c = plan.values[node.output];
  BatchMatMulProblem p;
  p.m = static_cast<int64_t>(a.dims[a.rank - 2]);
  p.k = static_cast<int64_t>(a.dims[a.rank - 1]);
  p.n = static_cast<int64_t>(c.dims[c.rank - 1]);
  p.batch = static_cast<int64_t>(value_numel(a)) / (p.m * p.k);
  p.trans_b = node.params[0] == 1;
  if (addr != nullptr) {
    p.a = addr[node.inputs[0]];
    p.b = addr[node.inputs[1]];
    p.c = addr[node.output];
  }
  return p;
}

/// The kernel's problem for Attention node `node` (validated by check_attention); pointers
/// from `addr` when not null.
AttentionProblem attention_problem(const BlobPlan& plan, const BlobNode& node,
                                   float* const* addr) {
  const BlobValue& q = plan.values[node.inputs[0]];
  const BlobValue& v = plan.values[node.inputs[2]];
  const uint32_t flags = node.params[kAttentionFlags];
  AttentionProblem p;
  p.l = static_cast<int64_t>(q.dims[q.rank - 2]);
  p.e = static_cast<int64_t>(q.dims[q.rank - 1]);
  p.s = static_cast<int64_t>(v.dims[v.rank - 2]);
  p.ev = static_cast<int64_t>(v.dims[v.rank - 1]);
  p.batch = static_cast<int64_t>(value_numel(q)) / (p.l * p.e);
  p.k_transposed = (flags & kAttentionKTransposed) != 0;
  p.empty_rows_nan = (flags & kAttentionEmptyRowsNan) != 0;
  p.scale = node.fparams[0];
  p.causal_period = node.params[kAttentionCausal];
  if (node.num_inputs == 4) {
    const BlobValue& m = plan.values[node.inputs[3]];
    p.mask_batch_rank = static_cast<int>(node.params[kAttentionMaskBatchRank]);
    // Strides of the mask's dims (row-major); a dim of 1 broadcast (stride 0) where the heads'
    // is larger.
    int64_t stride = static_cast<int64_t>(m.dims[m.rank - 1] * m.dims[m.rank - 2]);
    p.mask_row_stride = m.dims[m.rank - 2] == 1 ? 0 : static_cast<int64_t>(m.dims[m.rank - 1]);
    for (int d = p.mask_batch_rank - 1; d >= 0; --d) {
      p.mask_batch_dims[d] = node.params[kAttentionMaskBatch + d];
      p.mask_batch_strides[d] = m.dims[d] == 1 ? 0 : stride;
      stride *= static_cast<int64_t>(m.dims[d]);
    }
    if (addr != nullptr) p.mask = addr[node.inputs[3]];
  }
  if (addr != nullptr) {
    p.q = addr[node.inputs[0]];
    p.k = addr[node.inputs[1]];
    p.v = addr[node.inputs[2]];
    p.out = addr[node.output];
  }
  return p;
}

/// Concat: per output row (all dims but the last), each input's row copied into its slice.
struct ConcatTask {
  const float* x[kMaxConcatInputs] = {};
  int64_t width[kMaxConcatInputs] = {};  ///< each input's last dim
  uint32_t inputs = 0;
  float* y = nullptr;
  int64_t out_width = 0;
  int64_t rows = 0;
  int64_t rows_per_chunk = 1;
};

void concat_rows(const ConcatTask& t, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    float* dst = t.y + r * t.out_width;
    for (uint32_t i = 0; i < t.inputs; ++i) {
      std::memcpy(dst, t.x[i] + r * t.width[i], sizeof(float) * static_cast<size_t>(t.width[i]));
      dst += t.width[i];
    }
  }
}

void concat_chunk(void* context, size_t i) {
  const ConcatTask& t = *static_cast<const ConcatTask*>(context);
  const int64_t begin = static_cast<int64_t>(i) * t.rows_per_chunk;
  const int64_t end = begin + t.rows_per_chunk < t.rows ? begin + t.rows_per_chunk : t.rows;
  concat_rows(t, begin, end);
}

void run_concat(ConcatTask& t, pthreadpool_t pool) {
  // Chunks of at least 16Ki floats so the split pays for itself.
  const int64_t per_chunk = t.out_width >= 16384 ? 1 : 16384 / t.out_width;
  t.rows_per_chunk = per_chunk;
  const size_t chunks = static_cast<size_t>((t.rows + per_chunk - 1) / per_chunk);
  if (pool == nullptr || chunks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    concat_rows(t, 0, t.rows);
    return;
  }
  pthreadpool_parallelize_1d(pool, &concat_chunk, &t, chunks, kPoolFlags);
}

/// The quantized weight of op 23 / 24 node `node` (validated by parse_blob) at `base`.
QuantWeightView quant_weight_of(const BlobNode& node, const float* base) {
  const QuantWeightDesc d = quant_weight_desc(node.params);
  QuantWeightLayout layout;
  (void)quant_weight_layout(d, &layout);  // parse_blob checked it
  return quant_weight_view(d, layout, base);
}

/// The GroupNorm node's problem; addr null: shapes only (for the scratch size).
GroupNormProblem group_norm_problem(const BlobPlan& plan, const BlobNode& node,
                                    float* const* addr) {
  const BlobValue& x = plan.values[node.inputs[0]];  // validated: rank 3..6, C % groups == 0
  GroupNormProblem p;
  p.batch = static_cast<int64_t>(x.dims[0]);
  p.channels = static_cast<int64_t>(x.dims[x.rank - 1]);
  p.pixels = p.batch == 0 || p.channels == 0
                 ? 0
                 : static_cast<int64_t>(value_numel(x)) / (p.batch * p.channels);
  p.groups = static_cast<int64_t>(node.params[0]);
  p.eps = node.fparams[0];  // validated: finite, > 0
  if (addr != nullptr) {
    p.x = addr[node.inputs[0]];
    p.y = addr[node.output];
    p.gamma = addr[node.inputs[1]];
    p.beta = addr[node.inputs[2]];
  }
  return p;
}

}  // namespace

uint64_t own_kernel_scratch_floats(const BlobPlan& plan, uint32_t n, int64_t threads) {
  const BlobNode& node = plan.nodes[n];
  switch (static_cast<NodeOp>(node.op)) {
    case NodeOp::PackedWinogradConv2d:
      return winograd_scratch_floats(winograd_problem(plan, node, nullptr), threads);
    case NodeOp::PackedBottleneck:
      return bottleneck_scratch_floats(bottleneck_problem(plan, node, nullptr), threads);
    case NodeOp::BatchMatMul:
      return batch_matmul_scratch_floats(batch_matmul_problem(plan, node, nullptr));
    case NodeOp::GroupNorm:
      return group_norm_scratch_floats(group_norm_problem(plan, node, nullptr));
    case NodeOp::Attention:
      return attention_scratch_floats(attention_problem(plan, node, nullptr), threads);
    case NodeOp::LstmCell:
      return lstm_cell_scratch_floats(node.params[0]);
    case NodeOp::GruCell:
      return gru_cell_scratch_floats(node.params[0]);
    default:
      return 0;
  }
}

namespace {

/// A grouped product's rows, x, ends and output (ops 46 and 47: inputs 0 and 2).
GroupedGemmProblem grouped_problem(const BlobPlan& plan, const BlobNode& node,
                                   float* const* addr) {
  GroupedGemmProblem p;
  p.rows = static_cast<int64_t>(plan.values[node.inputs[0]].dims[0]);
  p.x = addr[node.inputs[0]];
  const void* ends = addr[node.inputs[2]];
  if (plan.values[node.inputs[2]].layout == static_cast<uint32_t>(ValueLayout::Int32Plain)) {
    p.ends32 = static_cast<const int32_t*>(ends);
  } else {
    p.ends64 = static_cast<const int64_t*>(ends);
  }
  p.out = addr[node.output];
  return p;
}

/// Ok when `bad` is negative, else InvalidArgument naming group `bad`'s end and its range.
Error bad_ends_error(uint32_t n, const BlobNode& node, const GroupedGemmProblem& p, int64_t bad) {
  if (bad < 0) return Error::Ok;
  const int64_t before = bad == 0 ? 0 : grouped_gemm_end(p, bad - 1);
  TERN_RETURN_ERROR(InvalidArgument,
                    "cpu backend: node %u (%s): ends[%lld] is %lld, expected %lld..%lld (the "
                    "group ends must not go backwards nor past the %lld rows)",
                    n, node_op_name(node.op), static_cast<long long>(bad),
                    static_cast<long long>(grouped_gemm_end(p, bad)),
                    static_cast<long long>(before), static_cast<long long>(p.rows),
                    static_cast<long long>(p.rows));
}

}  // namespace

Error run_own_kernel_node(const BlobPlan& plan, uint32_t n, float* const* addr,
                          pthreadpool_t pool, float* scratch, const uint64_t* numel) {
  const BlobNode& node = plan.nodes[n];
  // Rows of a GEMM's x at this execution (its output's count: propagate_dynamic_counts).
  auto rows = [&](uint64_t k) {
    const uint32_t x = node.inputs[0];
    return static_cast<int64_t>((numel != nullptr ? numel[x] : value_numel(plan.values[x])) / k);
  };
  switch (static_cast<NodeOp>(node.op)) {
    case NodeOp::PackedFullyConnected: {
      const int64_t out_features = node.params[0], in_features = node.params[1];
      GemmProblem p;
      p.m = rows(static_cast<uint64_t>(in_features));
      p.n = out_features;
      p.k = in_features;
      p.a = addr[node.inputs[0]];
      p.lda = in_features;
      p.packed = addr[node.inputs[1]];
      p.c = addr[node.output];
      p.ldc = out_features;
      // Inputs x, weight, residual?, multiplier or affine? (params[3]: validated 0,
      // kFcMultiplier or kFcPostAffine).
      const bool gated = node.params[kFcEpilogueFlags] == kFcMultiplier;
      const bool affine = node.params[kFcEpilogueFlags] == kFcPostAffine;
      p.residual = node.num_inputs == (gated || affine ? 4u : 3u) ? addr[node.inputs[2]] : nullptr;
      p.multiplier = gated ? addr[node.inputs[node.num_inputs - 1]] : nullptr;
      if (affine) {
        p.post_scale = addr[node.inputs[node.num_inputs - 1]];
        p.post_shift = p.post_scale + out_features;
      }
      p.activation = static_cast<GemmActivation>(node.params[2]);  // validated: 0..7
      p.activation_alpha = portable::bits_to_float(node.params[kFcActivationAlpha]);
      p.out_min = node.fparams[0];
      p.out_max = node.fparams[1];
      packed_gemm(p, pool);
      return Error::Ok;
    }
    case NodeOp::PackedConv2d: {
      const uint32_t* q = node.params;
      ConvProblem c = conv_problem<ConvProblem>(plan, node, addr);
      c.kernel_h = q[kKernelH];
      c.kernel_w = q[kKernelW];
      c.stride_h = q[kStrideH];
      c.stride_w = q[kStrideW];
      c.dilation_h = q[kDilationH];
      c.dilation_w = q[kDilationW];
      c.activation = static_cast<GemmActivation>(q[kPackedActivation]);  // validated: 0..7
      c.activation_alpha = portable::bits_to_float(q[kPackedActivationAlpha]);
      c.groups = static_cast<int64_t>(conv_groups(q[kPackedGroups]));  // validated: divides C, O
      packed_conv_nhwc(c, pool);
      return Error::Ok;
    }
    case NodeOp::PackedConv3d:
      packed_conv_nhwc(conv3d_problem(plan, node, addr), pool);
      return Error::Ok;
    case NodeOp::ResizeBilinearToPlanes: {
      const BlobValue& x = plan.values[node.inputs[0]];
      ResizePlanesProblem p;
      p.batch = static_cast<int64_t>(x.dims[0]);
      p.in_h = static_cast<int64_t>(x.dims[1]);
      p.in_w = static_cast<int64_t>(x.dims[2]);
      p.channels = static_cast<int64_t>(x.dims[3]);
      p.out_h = node.params[0];
      p.out_w = node.params[1];
      p.align_corners = node.params[2] != 0;
      p.x = addr[node.inputs[0]];
      p.y = addr[node.output];
      resize_bilinear_to_planes(p, pool);
      return Error::Ok;
    }
    case NodeOp::PackedWinogradConv2d: {
      WinogradProblem w = winograd_problem(plan, node, addr);
      w.activation = static_cast<GemmActivation>(node.params[kPackedActivation]);  // 0..7
      w.activation_alpha = portable::bits_to_float(node.params[kPackedActivationAlpha]);
      winograd_conv_nhwc(w, scratch, pool);
      return Error::Ok;
    }
    case NodeOp::PackedBottleneck:
      bottleneck_nhwc(bottleneck_problem(plan, node, addr), scratch, pool);
      return Error::Ok;
    case NodeOp::IndexRows: {
      const BlobValue& x = plan.values[node.inputs[0]];
      const uint32_t d = node.params[0];  // validated: check_index_rows
      IndexRowsProblem p;
      for (uint32_t i = 0; i < d; ++i) p.outer *= static_cast<int64_t>(x.dims[i]);
      p.rows = static_cast<int64_t>(x.dims[d]);
      for (uint32_t i = d + 1; i < x.rank; ++i) p.inner *= static_cast<int64_t>(x.dims[i]);
      p.x = addr[node.inputs[0]];
      p.index = reinterpret_cast<const int64_t*>(addr[node.inputs[1]]);
      p.count = static_cast<int64_t>(value_numel(plan.values[node.inputs[1]]));
      p.out = addr[node.output];
      const int64_t bad = index_rows(p);
      TERN_CHECK_OR_RETURN_ERROR(bad < 0, InvalidArgument,
                                 "cpu backend: node %u (index_rows): index %lld at position %lld "
                                 "is outside [0, %lld)",
                                 n, static_cast<long long>(bad < 0 ? 0 : p.index[bad]),
                                 static_cast<long long>(bad), static_cast<long long>(p.rows));
      return Error::Ok;
    }
    case NodeOp::GroupSum: {
      const BlobValue& y = plan.values[node.output];  // checked: check_group_sum
      GroupSumProblem p;
      p.parts = static_cast<int>(node.num_inputs - node.params[0]);
      p.samples = static_cast<int64_t>(y.dims[0]);
      p.pixels = static_cast<int64_t>(y.dims[1] * y.dims[2]);
      p.channels = static_cast<int64_t>(y.dims[3]);
      for (int i = 0; i < p.parts; ++i) {
        p.x[i] = addr[node.inputs[i]];
        p.groups[i] = static_cast<int64_t>(plan.values[node.inputs[i]].dims[3]) / p.channels;
      }
      p.weight = node.params[0] != 0 ? addr[node.inputs[p.parts]] : nullptr;
      p.y = addr[node.output];
      group_sum(p, pool);
      return Error::Ok;
    }
    case NodeOp::ChannelMix: {
      const BlobValue& x = plan.values[node.inputs[0]];  // checked: check_channel_mix
      const uint32_t d = node.params[0];
      ChannelMixProblem p;
      p.outer = p.inner = 1;
      for (uint32_t i = 0; i < d; ++i) p.outer *= static_cast<int64_t>(x.dims[i]);
      for (uint32_t i = d + 1; i < x.rank; ++i) p.inner *= static_cast<int64_t>(x.dims[i]);
      p.k = static_cast<int64_t>(x.dims[d]);
      p.j = static_cast<int64_t>(node.params[1]);
      p.x = addr[node.inputs[0]];
      p.w = addr[node.inputs[1]];
      p.bias = node.num_inputs > 2 ? addr[node.inputs[2]] : nullptr;
      p.y = addr[node.output];
      p.softmax = node.params[2] != 0;
      channel_mix(p, pool);
      return Error::Ok;
    }
    case NodeOp::GroupedMatmul: {
      GroupedGemmProblem p = grouped_problem(plan, node, addr);  // checked: check_grouped_matmul
      p.groups = node.params[0];
      p.k = node.params[1];
      p.n = node.params[2];
      p.packed = addr[node.inputs[1]];
      return bad_ends_error(n, node, p, grouped_gemm(p, pool));
    }
    case NodeOp::QuantizedGroupedMatmul: {
      const QuantWeightView w = quant_weight_of(node, addr[node.inputs[1]]);
      GroupedGemmProblem p = grouped_problem(plan, node, addr);  // checked: check_quant_grouped
      p.groups = node.params[kQuantGroups];
      p.k = static_cast<int64_t>(w.desc.cols);
      p.n = static_cast<int64_t>(w.desc.rows) / p.groups;
      TERN_RETURN_IF_ERROR(bad_ends_error(n, node, p, grouped_gemm_bad_end(p)));
      int64_t start = 0;
      for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t end = grouped_gemm_end(p, g);
        if (end > start) {
          QuantGemmProblem q;
          q.w = quant_rows_view(w, static_cast<uint64_t>(g * p.n), static_cast<uint64_t>(p.n));
          q.m = end - start;
          q.a = p.x + start * p.k;
          q.lda = p.k;
          q.c = p.out + start * p.n;
          q.ldc = p.n;
          quant_gemm(q, pool);
        }
        start = end;
      }
      if (start < p.rows) {
        std::memset(p.out + start * p.n, 0,
                    sizeof(float) * static_cast<size_t>((p.rows - start) * p.n));
      }
      return Error::Ok;
    }
    case NodeOp::Select: {
      const BlobValue& y = plan.values[node.output];
      SelectProblem p;
      p.rank = static_cast<int>(y.rank);  // validated: check_select
      for (uint32_t d = 0; d < y.rank; ++d) p.dims[d] = static_cast<int64_t>(y.dims[d]);
      const BlobValue& c = plan.values[node.inputs[0]];
      const BlobValue& a = plan.values[node.inputs[1]];
      const BlobValue& b = plan.values[node.inputs[2]];
      select_strides(p, static_cast<int>(c.rank), c.dims, p.cond_stride);
      select_strides(p, static_cast<int>(a.rank), a.dims, p.a_stride);
      select_strides(p, static_cast<int>(b.rank), b.dims, p.b_stride);
      p.compare = static_cast<int>(node.params[0]);  // validated: check_select
      if (p.compare == 0) {
        p.cond = reinterpret_cast<const uint8_t*>(addr[node.inputs[0]]);
      } else {
        p.x = addr[node.inputs[0]];
        std::memcpy(&p.s, &node.params[1], 4);
      }
      p.a = addr[node.inputs[1]];
      p.b = addr[node.inputs[2]];
      p.y = addr[node.output];
      select_where(p, pool);
      return Error::Ok;
    }
    case NodeOp::GridSample: {
      const BlobValue& x = plan.values[node.inputs[0]];
      const BlobValue& y = plan.values[node.output];
      GridSampleProblem p;
      p.x = addr[node.inputs[0]];
      p.grid = addr[node.inputs[1]];
      p.y = addr[node.output];
      p.n = static_cast<int64_t>(x.dims[0]);  // validated: check_grid_sample
      p.h = static_cast<int64_t>(x.dims[1]);
      p.w = static_cast<int64_t>(x.dims[2]);
      p.c = static_cast<int64_t>(x.dims[3]);
      p.ho = static_cast<int64_t>(y.dims[1]);
      p.wo = static_cast<int64_t>(y.dims[2]);
      p.mode = node.params[0];
      p.padding = node.params[1];
      p.align_corners = node.params[2] != 0;
      grid_sample_nhwc(p, pool);
      return Error::Ok;
    }
    case NodeOp::GatherMap: {
      GatherMapProblem p;
      p.x = addr[node.inputs[0]];
      p.map = reinterpret_cast<const uint8_t*>(addr[node.inputs[1]]);  // int32 offsets
      p.y = addr[node.output];
      p.outer = node.params[0];  // validated with the map: check_gather_map
      p.block = static_cast<int64_t>(value_numel(plan.values[node.inputs[1]]));
      p.step = node.params[1];
      p.run = node.params[2] == 0 ? 1 : node.params[2];
      gather_map(p, pool);
      return Error::Ok;
    }
    case NodeOp::Cumsum: {
      const BlobValue& x = plan.values[node.inputs[0]];
      CumsumProblem p;
      p.x = addr[node.inputs[0]];
      p.y = addr[node.output];
      for (uint32_t d = 0; d < x.rank; ++d) {
        const int64_t s = static_cast<int64_t>(x.dims[d]);
        if (d < node.params[0]) p.outer *= s;
        else if (d == node.params[0]) p.size = s;
        else p.inner *= s;
      }
      cumsum_rows(p, pool);
      return Error::Ok;
    }
    case NodeOp::UnaryMath: {
      UnaryMathProblem p;
      p.fn = static_cast<UnaryMathFn>(node.params[0]);
      std::memcpy(&p.beta, &node.params[1], 4);
      std::memcpy(&p.threshold, &node.params[2], 4);
      p.x = addr[node.inputs[0]];
      p.y = addr[node.output];
      p.n = static_cast<int64_t>(value_numel(plan.values[node.output]));
      unary_math(p, pool);
      return Error::Ok;
    }
    case NodeOp::GruCell: {
      GruCellProblem p;
      p.gi = addr[node.inputs[0]];
      p.gh = addr[node.inputs[1]];
      p.h = addr[node.inputs[2]];
      p.out = addr[node.output];
      p.hidden = node.params[0];
      p.rows = static_cast<int64_t>(value_numel(plan.values[node.inputs[2]])) / p.hidden;
      gru_cell(p, scratch);
      return Error::Ok;
    }
    case NodeOp::LstmCell: {
      LstmCellProblem p;
      p.gates = addr[node.inputs[0]];
      p.c = addr[node.inputs[1]];
      p.gates2 = node.num_inputs == 3 ? addr[node.inputs[2]] : nullptr;
      p.out = addr[node.output];
      p.hidden = node.params[0];
      p.rows = static_cast<int64_t>(value_numel(plan.values[node.inputs[1]])) / p.hidden;
      lstm_cell(p, scratch);
      return Error::Ok;
    }
    case NodeOp::Concat: {
      ConcatTask t;
      const BlobValue& out = plan.values[node.output];
      t.inputs = node.num_inputs;  // validated: 2..3
      for (uint32_t i = 0; i < t.inputs; ++i) {
        const BlobValue& in = plan.values[node.inputs[i]];
        t.x[i] = addr[node.inputs[i]];
        t.width[i] = static_cast<int64_t>(in.dims[in.rank - 1]);
      }
      t.y = addr[node.output];
      t.out_width = static_cast<int64_t>(out.dims[out.rank - 1]);
      t.rows = static_cast<int64_t>(value_numel(out)) / t.out_width;
      if (node.params[0] != 0) {  // along another dim: [R, numel / R] matrices (validated)
        t.rows = node.params[0];
        t.out_width = static_cast<int64_t>(value_numel(out)) / t.rows;
        for (uint32_t i = 0; i < t.inputs; ++i) {
          t.width[i] = static_cast<int64_t>(value_numel(plan.values[node.inputs[i]])) / t.rows;
        }
      }
      run_concat(t, pool);
      return Error::Ok;
    }
    case NodeOp::QuantizedFullyConnected: {
      QuantGemmProblem p;
      p.w = quant_weight_of(node, addr[node.inputs[1]]);
      const int64_t k = static_cast<int64_t>(p.w.desc.cols);
      p.m = rows(p.w.desc.cols);
      p.a = addr[node.inputs[0]];
      p.lda = k;
      p.bias = node.num_inputs == 3 ? addr[node.inputs[2]] : nullptr;
      p.c = addr[node.output];
      p.ldc = static_cast<int64_t>(p.w.desc.rows);
      p.out_min = node.fparams[0];
      p.out_max = node.fparams[1];
      quant_gemm(p, pool);
      return Error::Ok;
    }
    case NodeOp::QuantizedEmbedding: {
      const QuantWeightView w = quant_weight_of(node, addr[node.inputs[1]]);
      const int64_t* indices = reinterpret_cast<const int64_t*>(addr[node.inputs[0]]);
      const int64_t count = static_cast<int64_t>(value_numel(plan.values[node.inputs[0]]));
      const int64_t bad = quant_embedding(w, indices, count, addr[node.output], pool);
      TERN_CHECK_OR_RETURN_ERROR(bad < 0, InvalidArgument,
                                 "cpu backend: node %u (quantized_embedding): index %lld at "
                                 "position %lld is outside [0, %llu)",
                                 n, static_cast<long long>(bad < 0 ? 0 : indices[bad]),
                                 static_cast<long long>(bad),
                                 static_cast<unsigned long long>(w.desc.rows));
      return Error::Ok;
    }
    case NodeOp::LayerNorm: {
      const BlobValue& x = plan.values[node.inputs[0]];
      LayerNormProblem p;
      p.x = addr[node.inputs[0]];
      p.y = addr[node.output];
      p.cols = static_cast<int64_t>(x.dims[x.rank - 1]);
      // A dynamic x: its actual rows (numel, dynamic_counts.h), else the whole value.
      p.rows = static_cast<int64_t>(numel != nullptr ? numel[node.inputs[0]] : value_numel(x)) /
               p.cols;
      p.gamma = addr[node.inputs[1]];
      p.beta = addr[node.inputs[2]];
      p.eps = node.fparams[0];  // validated: finite, > 0
      p.rms = node.params[0] == 1;  // validated: 0 or 1
      layer_norm_rows(p, pool);
      return Error::Ok;
    }
    case NodeOp::BatchMatMul:
      batch_matmul(batch_matmul_problem(plan, node, addr), scratch, pool);
      return Error::Ok;
    case NodeOp::GroupNorm:
      group_norm_nhwc(group_norm_problem(plan, node, addr), scratch, pool);
      return Error::Ok;
    case NodeOp::Attention:
      fused_attention(attention_problem(plan, node, addr), scratch, pool);
      return Error::Ok;
    case NodeOp::StridedCopy: {
      StridedCopyProblem p;
      p.x = addr[node.inputs[0]];
      p.y = addr[node.output];
      p.rank = static_cast<int>(node.params[kCopyRank]);  // validated: 1..6
      for (int d = 0; d < p.rank; ++d) {
        p.extent[d] = node.params[kCopyExtent + d];
        p.stride[d] = static_cast<int32_t>(node.params[kCopyStride + d]);  // signed
      }
      p.offset = node.params[kCopyOffset];
      strided_copy(p, pool);
      return Error::Ok;
    }
    case NodeOp::RowConcat: {
      RowConcatProblem p;
      p.inputs = static_cast<int>(node.num_inputs);  // validated: 2..3
      p.rows = node.params[kRowConcatRows];         // validated with every field below
      p.unit = node.params[kRowConcatUnit];
      for (int i = 0; i < p.inputs; ++i) {
        p.x[i] = addr[node.inputs[i]] + node.params[kRowConcatOffset + i];
        p.width[i] = node.params[kRowConcatWidth + i];
        p.stride[i] = node.params[kRowConcatStride + i];
      }
      p.y = addr[node.output];
      row_concat(p, pool);
      return Error::Ok;
    }
    case NodeOp::Gelu: {
      GeluTask t;
      t.x = addr[node.inputs[0]];
      t.y = addr[node.output];
      t.n = static_cast<int64_t>(value_numel(plan.values[node.output]));
      t.tanh_form = node.params[0] == 1;
      run_gelu(t, pool);
      return Error::Ok;
    }
    default:
      break;
  }
  TERN_RETURN_ERROR(InvalidProgram, "cpu backend: node %u: op %u is not one of tern's kernels", n,
                    node.op);
}

}  // namespace tern::cpu
