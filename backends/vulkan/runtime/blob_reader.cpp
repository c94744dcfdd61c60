// Validation of a vulkan blob: every field is untrusted input (docs/architecture.md).
#include "backends/vulkan/runtime/blob_reader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/core/checked_math.h"

namespace tern::vulkan {
namespace {

constexpr uint32_t kMaxRecords = 1u << 20;
constexpr int64_t kMaxParam = 1ll << 30;

const char* kind_name(uint32_t k) {
  switch (static_cast<ValueKind>(k)) {
    case ValueKind::Internal: return "internal";
    case ValueKind::ExternalInput: return "external input";
    case ValueKind::ExternalOutput: return "external output";
    case ValueKind::Constant: return "constant";
  }
  return "?";
}

/// Largest index + 1 that sum_d (dims[d] - 1) * strides[d] + offset reaches (0 if any dim is
/// 0); false on a negative stride/offset or overflow.
bool strided_extent(const int32_t* dims, const int32_t* strides, int32_t offset, uint32_t n,
                    uint64_t* out) {
  if (offset < 0) return false;
  uint64_t last = static_cast<uint64_t>(offset);
  for (uint32_t d = 0; d < n; ++d) {
    if (dims[d] < 1 || strides[d] < 0) return false;
    uint64_t t = 0;
    if (!checked_mul(static_cast<uint64_t>(dims[d] - 1), static_cast<uint64_t>(strides[d]), &t) ||
        !checked_add(last, t, &last)) {
      return false;
    }
  }
  *out = last + 1;
  return true;
}

/// The lowest and highest index that offset + sum_d k_d * strides[d] reaches for
/// 0 <= k_d < dims[d], strides of either sign (a negative one reads backwards: flip); the
/// caller checked dims >= 1, |strides| <= 2^30 and offset >= 0, so no term overflows.
void signed_strided_range(const int32_t* dims, const int32_t* strides, int32_t offset,
                          uint32_t n, int64_t* lo, int64_t* hi) {
  *lo = *hi = offset;
  for (uint32_t d = 0; d < n; ++d) {
    const int64_t reach = static_cast<int64_t>(dims[d] - 1) * strides[d];
    *(reach < 0 ? lo : hi) += reach;
  }
}

/// The product of `n` dims, saturating at UINT64_MAX (six dims of up to 2^30 would wrap), so
/// an extent too large for any value fails reads_within / out_numel instead of wrapping small.
uint64_t product(const int32_t* dims, uint32_t n) {
  uint64_t p = 1;
  for (uint32_t d = 0; d < n; ++d) {
    const uint64_t v = static_cast<uint64_t>(dims[d]);
    if (v != 0 && p > UINT64_MAX / v) return UINT64_MAX;
    p *= v;
  }
  return p;
}

struct NodeChecker {
  const BlobPlan& plan;
  uint32_t index;
  const BlobNode& node;

  const BlobValue& in(uint32_t i) const { return plan.values[node.inputs[i]]; }
  const BlobValue& out() const { return plan.values[node.output]; }
  uint64_t in_numel(uint32_t i) const { return value_numel(in(i)); }

  Error fail(const char* what, uint64_t expected, uint64_t found) const {
    TERN_RETURN_ERROR(InvalidProgram,
                      "vulkan blob: node %u (%s): %s: expected %llu, found %llu", index,
                      node_op_name(node.op), what, static_cast<unsigned long long>(expected),
                      static_cast<unsigned long long>(found));
  }
  Error need_inputs(uint32_t lo, uint32_t hi) const {
    if (node.num_inputs < lo || node.num_inputs > hi) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): %u inputs, expected %u..%u", index,
                        node_op_name(node.op), node.num_inputs, lo, hi);
    }
    return Error::Ok;
  }
  /// Params [first, first + n) each in [lo, kMaxParam].
  Error params_in(uint32_t first, uint32_t n, int64_t lo) const {
    for (uint32_t i = first; i < first + n; ++i) {
      if (node.params[i] < lo || node.params[i] > kMaxParam) {
        TERN_RETURN_ERROR(InvalidProgram,
                          "vulkan blob: node %u (%s): params[%u] = %d, expected %lld..%lld",
                          index, node_op_name(node.op), i, node.params[i],
                          static_cast<long long>(lo), static_cast<long long>(kMaxParam));
      }
    }
    return Error::Ok;
  }
  /// `n` elements read from input i (or the output when i == kNoValue) must exist.
  Error reads_within(uint32_t i, uint64_t extent, const char* what) const {
    const uint64_t have = i == kNoValue ? value_numel(out()) : in_numel(i);
    if (extent > have) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): %s reaches element %llu of a value of %llu",
                        index, node_op_name(node.op), what,
                        static_cast<unsigned long long>(extent),
                        static_cast<unsigned long long>(have));
    }
    return Error::Ok;
  }
  /// Input `slot` holds `count` indices into `rows` rows: an i64 external input (checked at
  /// each execute) or an i64 constant, whose indices are checked here.
  Error indices(uint32_t slot, int32_t rows, int32_t count) const {
    const BlobValue& v = in(slot);
    if (v.type != static_cast<uint32_t>(ValueType::I64) ||
        (v.kind != static_cast<uint32_t>(ValueKind::ExternalInput) &&
         v.kind != static_cast<uint32_t>(ValueKind::Constant))) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): input %u (indices): expected an i64 "
                        "external input or constant, found a %s value of type %u",
                        index, node_op_name(node.op), slot, kind_name(v.kind), v.type);
    }
    TERN_RETURN_IF_ERROR(reads_within(slot, static_cast<uint64_t>(count), "indices"));
    if (v.kind != static_cast<uint32_t>(ValueKind::Constant)) return Error::Ok;
    const uint8_t* bytes = plan.data + v.data_offset;  // the value checks kept it in the section
    for (int32_t c = 0; c < count; ++c) {
      int64_t k = 0;
      std::memcpy(&k, bytes + 8 * static_cast<size_t>(c), 8);
      if (k < 0 || k >= rows) {
        TERN_RETURN_ERROR(InvalidProgram,
                          "vulkan blob: node %u (%s): constant index %lld at position %d "
                          "outside [0, %d)",
                          index, node_op_name(node.op), static_cast<long long>(k), c, rows);
      }
    }
    return Error::Ok;
  }
  Error out_numel(uint64_t expected) const {
    const uint64_t found = value_numel(out());
    if (found != expected) return fail("output elements", expected, found);
    return Error::Ok;
  }
  /// params[first..end) must be 0 (unused by the op); `what` names them in the message.
  Error zeros(uint32_t first, uint32_t end, const char* what = "unused parameter") const {
    for (uint32_t k = first; k < end; ++k) {
      if (node.params[k] != 0) return fail(what, 0, static_cast<uint64_t>(node.params[k]));
    }
    return Error::Ok;
  }
  Error flag(uint32_t i) const { return params_in(i, 1, 0) == Error::Ok && node.params[i] <= 1
                                            ? Error::Ok
                                            : fail("flag parameter", 1,
                                                   static_cast<uint64_t>(node.params[i])); }

  /// Input `i` is a quantized weight whose bytes are exactly the QuantLayout of the scheme in
  /// params[kQFormat..kQCols] and whose dims are [rows, cols] = (`rows`, `cols`).
  Error quant_weight(uint32_t i, uint64_t rows, uint64_t cols) const {
    const int32_t* p = node.params;
    const BlobValue& w = in(i);
    if (w.rank != 2 || w.dims[0] != rows || w.dims[1] != cols ||
        static_cast<uint64_t>(p[kQRows]) != rows || static_cast<uint64_t>(p[kQCols]) != cols) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): quantized weight (value %u): dims [%llu, %llu] "
                        "and params rows/cols %d, %d, expected [%llu, %llu] from the node's shape",
                        index, node_op_name(node.op), node.inputs[i],
                        static_cast<unsigned long long>(w.rank >= 1 ? w.dims[0] : 0),
                        static_cast<unsigned long long>(w.rank >= 2 ? w.dims[1] : 0), p[kQRows],
                        p[kQCols], static_cast<unsigned long long>(rows),
                        static_cast<unsigned long long>(cols));
    }
    QuantLayout l;
    if (!quant_layout(p[kQFormat], rows, cols, p[kQBlockSize], p[kQDqBlockSize],
                      p[kQGranularity], p[kQBlockRows], p[kQBlockCols], &l)) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): quantized weight scheme format %d, block %d, "
                        "dq block %d, granularity %d, tile %dx%d: expected format 0..3; NF4 a "
                        "power-of-two block in [32, 4096] (dq block >= 1 with double "
                        "quantization, else 0) and no granularity or tile; FP8 no blocks, "
                        "granularity 0..2, a tile only for granularity 2", index,
                        node_op_name(node.op), p[kQFormat], p[kQBlockSize], p[kQDqBlockSize],
                        p[kQGranularity], p[kQBlockRows], p[kQBlockCols]);
    }
    if (static_cast<uint64_t>(p[kQScaleWord]) != l.scale_word ||
        static_cast<uint64_t>(p[kQAbsmax2Word]) != l.absmax2_word ||
        static_cast<uint64_t>(p[kQTableWord]) != l.table_word || p[kQScaleWord] < 0 ||
        p[kQAbsmax2Word] < 0 || p[kQTableWord] < 0) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): quantized weight section words %d, %d, %d "
                        "(scales, absmax2, table), expected %llu, %llu, %llu", index,
                        node_op_name(node.op), p[kQScaleWord], p[kQAbsmax2Word], p[kQTableWord],
                        static_cast<unsigned long long>(l.scale_word),
                        static_cast<unsigned long long>(l.absmax2_word),
                        static_cast<unsigned long long>(l.table_word));
    }
    if (w.data_bytes != 4 * l.total_words) {
      const bool nf4 = p[kQFormat] <= static_cast<int32_t>(QuantFormat::Nf4DoubleQuant);
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): quantized weight (value %u) of %llu bytes, "
                        "expected %llu (%llu bytes of %s codes for [%llu, %llu] and %llu %s)",
                        index, node_op_name(node.op), node.inputs[i],
                        static_cast<unsigned long long>(w.data_bytes),
                        static_cast<unsigned long long>(4 * l.total_words),
                        static_cast<unsigned long long>(4 * l.scale_word), nf4 ? "nf4" : "fp8",
                        static_cast<unsigned long long>(rows),
                        static_cast<unsigned long long>(cols),
                        static_cast<unsigned long long>(l.blocks),
                        nf4 ? "blocks' absmax" : "scales");
    }
    if (p[kQFormat] == static_cast<int32_t>(QuantFormat::Nf4DoubleQuant) &&
        !(node.fparams[0] - node.fparams[0] == 0.0f)) {
      TERN_RETURN_ERROR(InvalidProgram,
                        "vulkan blob: node %u (%s): double quantization offset not finite", index,
                        node_op_name(node.op));
    }
    TERN_RETURN_IF_ERROR(zeros(kQCols + 1, kNodeParams, "unused parameter after the scheme"));
    return Error::Ok;
  }

  Error check() const {
    const int32_t* p = node.params;
    switch (static_cast<NodeOp>(node.op)) {
      case NodeOp::MatMul: {
        TERN_RETURN_IF_ERROR(need_inputs(2, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 4, 1));
        TERN_RETURN_IF_ERROR(params_in(4, 2, 0));
        TERN_RETURN_IF_ERROR(flag(6));
        TERN_RETURN_IF_ERROR(flag(7));
        TERN_RETURN_IF_ERROR(params_in(8, 3, 0));
        if ((p[7] != 0) != (node.num_inputs == 3)) return fail("has_bias vs inputs", 3, node.num_inputs);
        const int32_t a_dims[3] = {p[0], p[1], p[3]}, a_str[3] = {p[4], p[3], 1};
        const int32_t b_dims[3] = {p[0], p[3], p[2]};
        const int32_t b_str[3] = {p[5], p[6] ? 1 : p[2], p[6] ? p[3] : 1};
        uint64_t e = 0;
        if (!strided_extent(a_dims, a_str, 0, 3, &e)) return fail("a extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(0, e, "a"));
        if (!strided_extent(b_dims, b_str, 0, 3, &e)) return fail("b extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(1, e, "b"));
        if (p[7] != 0) {
          const int32_t c_dims[3] = {p[0], p[1], p[2]}, c_str[3] = {p[8], p[9], p[10]};
          if (!strided_extent(c_dims, c_str, 0, 3, &e)) return fail("bias extent", 0, 0);
          TERN_RETURN_IF_ERROR(reads_within(2, e, "bias"));
        }
        return out_numel(static_cast<uint64_t>(p[0]) * static_cast<uint64_t>(p[1]) *
                         static_cast<uint64_t>(p[2]));
      }
      case NodeOp::Elementwise: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 3));
        if (p[0] < 0 || p[0] > kLastElementwiseKind) return fail("kind", kLastElementwiseKind, static_cast<uint64_t>(p[0]));
        TERN_RETURN_IF_ERROR(flag(1));
        TERN_RETURN_IF_ERROR(params_in(2, 6, 1));
        TERN_RETURN_IF_ERROR(params_in(8, 18, 0));
        const uint32_t need = p[0] == static_cast<int32_t>(ElementwiseKind::Where) ? 3 : (p[1] ? 2 : 1);
        if (node.num_inputs != need) return fail("inputs for this kind and has_b", need, node.num_inputs);
        const uint64_t n = product(p + 2, 6);
        TERN_RETURN_IF_ERROR(out_numel(n));
        for (uint32_t i = 0; i < need; ++i) {
          uint64_t e = 0;
          if (!strided_extent(p + 2, p + 8 + 6 * i, 0, 6, &e)) return fail("operand extent", 0, i);
          TERN_RETURN_IF_ERROR(reads_within(i, e, "operand"));
        }
        return Error::Ok;
      }
      case NodeOp::Unary:
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        if (p[0] < 0 || p[0] > kLastUnaryKind) return fail("kind", kLastUnaryKind, static_cast<uint64_t>(p[0]));
        TERN_RETURN_IF_ERROR(params_in(1, 1, 1));
        TERN_RETURN_IF_ERROR(out_numel(static_cast<uint64_t>(p[1])));
        return reads_within(0, static_cast<uint64_t>(p[1]), "x");
      case NodeOp::Softmax: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        TERN_RETURN_IF_ERROR(params_in(0, 3, 1));
        const uint64_t n = product(p, 3);
        TERN_RETURN_IF_ERROR(out_numel(n));
        return reads_within(0, n, "x");
      }
      case NodeOp::LayerNorm: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 2, 1));
        TERN_RETURN_IF_ERROR(flag(2));
        TERN_RETURN_IF_ERROR(flag(3));
        TERN_RETURN_IF_ERROR(flag(4));  // RMS (version 9): no mean, no bias
        if (p[4] != 0 && p[3] != 0) return fail("bias of an RMS norm", 0, 1);
        TERN_RETURN_IF_ERROR(zeros(5, kNodeParams));
        if (node.num_inputs != 1u + static_cast<uint32_t>(p[2] + p[3])) return fail("inputs", 1u + p[2] + p[3], node.num_inputs);
        const uint64_t n = product(p, 2);
        TERN_RETURN_IF_ERROR(out_numel(n));
        TERN_RETURN_IF_ERROR(reads_within(0, n, "x"));
        for (uint32_t i = 1; i < node.num_inputs; ++i) {
          TERN_RETURN_IF_ERROR(reads_within(i, static_cast<uint64_t>(p[1]), "weight/bias"));
        }
        return Error::Ok;
      }
      case NodeOp::Conv: {
        TERN_RETURN_IF_ERROR(need_inputs(2, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 11, 1));
        TERN_RETURN_IF_ERROR(params_in(11, 2, 0));
        TERN_RETURN_IF_ERROR(params_in(13, 3, 1));
        TERN_RETURN_IF_ERROR(flag(16));
        TERN_RETURN_IF_ERROR(flag(17));
        if ((p[16] != 0) != (node.num_inputs == 3)) return fail("has_bias vs inputs", 3, node.num_inputs);
        if (p[1] % p[15] != 0 || p[4] % p[15] != 0) return fail("channels divisible by groups", 0, static_cast<uint64_t>(p[15]));
        // Depth (3-D): D, OD, KD, stride, dilation >= 1, pad >= 0; a 2-D conv has 1, 1, 1, 1, 0, 1.
        TERN_RETURN_IF_ERROR(params_in(18, 4, 1));
        TERN_RETURN_IF_ERROR(params_in(22, 1, 0));
        TERN_RETURN_IF_ERROR(params_in(23, 1, 1));
        TERN_RETURN_IF_ERROR(zeros(24, kNodeParams));
        const int32_t x_dims[5] = {p[0], p[1], p[18], p[2], p[3]};
        TERN_RETURN_IF_ERROR(reads_within(0, product(x_dims, 5), "x"));
        const int32_t w_dims[5] = {p[4], p[1] / p[15], p[20], p[7], p[8]};
        TERN_RETURN_IF_ERROR(reads_within(1, product(w_dims, 5), "weight"));
        if (p[16] != 0) TERN_RETURN_IF_ERROR(reads_within(2, static_cast<uint64_t>(p[4]), "bias"));
        const int32_t o_dims[5] = {p[0], p[4], p[19], p[5], p[6]};
        return out_numel(product(o_dims, 5));
      }
      case NodeOp::ConvTranspose: {
        TERN_RETURN_IF_ERROR(need_inputs(2, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 11, 1));
        TERN_RETURN_IF_ERROR(params_in(11, 2, 0));
        TERN_RETURN_IF_ERROR(params_in(13, 3, 1));
        TERN_RETURN_IF_ERROR(flag(16));
        TERN_RETURN_IF_ERROR(zeros(17, kNodeParams));
        if ((p[16] != 0) != (node.num_inputs == 3)) return fail("has_bias vs inputs", 3, node.num_inputs);
        if (p[1] % p[15] != 0 || p[4] % p[15] != 0) return fail("channels divisible by groups", 0, static_cast<uint64_t>(p[15]));
        // The output extent: (in - 1) * stride - 2 * pad + dilation * (k - 1) + 1, plus an
        // output padding below the stride or the dilation.
        for (int d = 0; d < 2; ++d) {
          const int64_t base = (int64_t{p[2 + d]} - 1) * p[9 + d] - 2 * int64_t{p[11 + d]} +
                               int64_t{p[13 + d]} * (p[7 + d] - 1) + 1;
          const int64_t extra = int64_t{p[5 + d]} - base;
          if (extra < 0 || extra >= std::max(p[9 + d], p[13 + d])) {
            return fail(d == 0 ? "OH" : "OW", static_cast<uint64_t>(std::max<int64_t>(base, 0)),
                        static_cast<uint64_t>(p[5 + d]));
          }
        }
        TERN_RETURN_IF_ERROR(reads_within(0, product(p, 4), "x"));
        const int32_t w_dims[4] = {p[1], p[4] / p[15], p[7], p[8]};
        TERN_RETURN_IF_ERROR(reads_within(1, product(w_dims, 4), "weight"));
        if (p[16] != 0) TERN_RETURN_IF_ERROR(reads_within(2, static_cast<uint64_t>(p[4]), "bias"));
        const int32_t o_dims[4] = {p[0], p[4], p[5], p[6]};
        return out_numel(product(o_dims, 4));
      }
      case NodeOp::ChannelAffine: {
        TERN_RETURN_IF_ERROR(need_inputs(3, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 3, 1));
        const uint64_t n = product(p, 3);
        TERN_RETURN_IF_ERROR(out_numel(n));
        TERN_RETURN_IF_ERROR(reads_within(0, n, "x"));
        TERN_RETURN_IF_ERROR(reads_within(1, static_cast<uint64_t>(p[1]), "scale"));
        return reads_within(2, static_cast<uint64_t>(p[1]), "shift");
      }
      case NodeOp::Pool2d: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        TERN_RETURN_IF_ERROR(params_in(0, 9, 1));
        TERN_RETURN_IF_ERROR(params_in(9, 2, 0));
        TERN_RETURN_IF_ERROR(params_in(11, 2, 1));
        if (p[13] < 0 || p[13] > 2) return fail("mode", 2, static_cast<uint64_t>(p[13]));
        TERN_RETURN_IF_ERROR(flag(14));
        TERN_RETURN_IF_ERROR(params_in(15, 1, 0));
        TERN_RETURN_IF_ERROR(reads_within(0, product(p, 3), "x"));
        if (p[13] != 2) {  // every window starts inside the padded input
          if (p[9] >= p[5] || p[10] >= p[6]) return fail("padding below the window", static_cast<uint64_t>(p[5]), static_cast<uint64_t>(p[9]));
          const int64_t last_y = static_cast<int64_t>(p[3] - 1) * p[7] - p[9];
          const int64_t last_x = static_cast<int64_t>(p[4] - 1) * p[8] - p[10];
          if (last_y >= static_cast<int64_t>(p[1]) + p[9] || last_x >= static_cast<int64_t>(p[2]) + p[10]) {
            return fail("last window start inside the padded input", static_cast<uint64_t>(p[1]), static_cast<uint64_t>(last_y));
          }
        }
        const int32_t o_dims[3] = {p[0], p[3], p[4]};
        return out_numel(product(o_dims, 3));
      }
      case NodeOp::Copy: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        TERN_RETURN_IF_ERROR(params_in(1, 6, 1));
        TERN_RETURN_IF_ERROR(params_in(13, 8, 0));
        for (uint32_t i = 7; i < 13; ++i) {  // source strides: negative ones read backwards
          if (p[i] < -kMaxParam || p[i] > kMaxParam) {
            TERN_RETURN_ERROR(InvalidProgram,
                              "vulkan blob: node %u (copy): params[%u] = %d, expected a source "
                              "stride in -2^30..2^30",
                              index, i, p[i]);
          }
        }
        int64_t lo = 0, hi = 0;
        signed_strided_range(p + 1, p + 7, p[19], 6, &lo, &hi);
        if (lo < 0) {
          TERN_RETURN_ERROR(InvalidProgram,
                            "vulkan blob: node %u (copy): source reaches element %lld, before "
                            "the first",
                            index, static_cast<long long>(lo));
        }
        uint64_t e = static_cast<uint64_t>(hi) + 1;
        TERN_RETURN_IF_ERROR(reads_within(0, e, "source"));
        if (!strided_extent(p + 1, p + 13, p[20], 6, &e)) return fail("destination extent", 0, 0);
        return reads_within(kNoValue, e, "destination");
      }
      case NodeOp::Reduce: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        if (p[0] < 0 || p[0] > kLastReduceKind) return fail("reduce kind", kLastReduceKind, static_cast<uint32_t>(p[0]));
        const uint64_t exact = static_cast<uint64_t>(exact_int_limit(plan.header.storage));
        if ((p[0] == static_cast<int32_t>(ReduceKind::ArgMax) ||
             p[0] == static_cast<int32_t>(ReduceKind::ArgMin)) &&
            product(p + 14, 6) > exact) {
          return fail("argmax / argmin reduced elements (at most the storage's exact integers)",
                      exact, product(p + 14, 6));
        }
        TERN_RETURN_IF_ERROR(params_in(1, 6, 1));
        TERN_RETURN_IF_ERROR(params_in(7, 6, 0));
        TERN_RETURN_IF_ERROR(params_in(14, 6, 1));
        TERN_RETURN_IF_ERROR(params_in(20, 6, 0));
        int32_t dims[12], strides[12];
        for (int d = 0; d < 6; ++d) {
          dims[d] = p[1 + d];
          strides[d] = p[7 + d];
          dims[6 + d] = p[14 + d];
          strides[6 + d] = p[20 + d];
        }
        uint64_t e = 0;
        if (!strided_extent(dims, strides, 0, 12, &e)) return fail("source extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(0, e, "source"));
        return out_numel(product(p + 1, 6));
      }
      case NodeOp::Cumsum: {  // params [0] outer, [1] size, [2] inner
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        TERN_RETURN_IF_ERROR(params_in(0, 3, 1));
        TERN_RETURN_IF_ERROR(zeros(3, kNodeParams));
        const uint64_t n = product(p, 3);
        TERN_RETURN_IF_ERROR(reads_within(0, n, "x"));
        return out_numel(n);
      }
      case NodeOp::Embedding: {
        // params [0] V, [1] D, [2] count, [3] outer (O): out[o, c, :] = weight[o, idx[c], :];
        // [4] 1: the indices are integers held as floats (the shader guards their range).
        TERN_RETURN_IF_ERROR(need_inputs(2, 2));
        TERN_RETURN_IF_ERROR(params_in(0, 4, 1));
        TERN_RETURN_IF_ERROR(flag(4));
        TERN_RETURN_IF_ERROR(zeros(5, kNodeParams));
        const int32_t w_dims[3] = {p[3], p[0], p[1]};
        TERN_RETURN_IF_ERROR(reads_within(0, product(w_dims, 3), "weight"));
        if (p[4] == 1) {
          if (in(1).type == static_cast<uint32_t>(ValueType::I64)) {
            return fail("float-held indices: type (not i64)", 0, in(1).type);
          }
          TERN_RETURN_IF_ERROR(reads_within(1, static_cast<uint64_t>(p[2]), "indices"));
        } else {
          TERN_RETURN_IF_ERROR(indices(1, p[0], p[2]));
        }
        const int32_t o_dims[3] = {p[3], p[2], p[1]};
        return out_numel(product(o_dims, 3));
      }
      case NodeOp::Attention: {
        TERN_RETURN_IF_ERROR(need_inputs(3, 4));
        TERN_RETURN_IF_ERROR(params_in(0, 5, 1));
        TERN_RETURN_IF_ERROR(flag(5));
        TERN_RETURN_IF_ERROR(flag(6));
        TERN_RETURN_IF_ERROR(params_in(7, 6, 0));
        TERN_RETURN_IF_ERROR(params_in(13, 2, 1));
        if ((p[6] != 0) != (node.num_inputs == 4)) return fail("has_mask vs inputs", 4, node.num_inputs);
        if (p[0] % p[13] != 0) return fail("kv group dividing the batch", static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[13]));
        const int32_t kv_batch = p[0] / p[13];
        uint64_t e = 0;
        const int32_t q_dims[3] = {p[0], p[1], p[3]}, q_str[3] = {p[7], p[3], 1};
        if (!strided_extent(q_dims, q_str, 0, 3, &e)) return fail("q extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(0, e, "q"));
        const int32_t k_dims[3] = {kv_batch, p[2], p[3]}, k_str[3] = {p[8], p[3], 1};
        if (!strided_extent(k_dims, k_str, 0, 3, &e)) return fail("k extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(1, e, "k"));
        const int32_t v_dims[3] = {kv_batch, p[2], p[4]}, v_str[3] = {p[9], p[4], 1};
        if (!strided_extent(v_dims, v_str, 0, 3, &e)) return fail("v extent", 0, 0);
        TERN_RETURN_IF_ERROR(reads_within(2, e, "v"));
        if (p[6] != 0) {
          if (p[0] % p[14] != 0) {
            return fail("mask group dividing the batch", static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[14]));
          }
          const int32_t m_dims[3] = {p[0] / p[14], p[1], p[2]}, m_str[3] = {p[10], p[11], p[12]};
          if (!strided_extent(m_dims, m_str, 0, 3, &e)) return fail("mask extent", 0, 0);
          TERN_RETURN_IF_ERROR(reads_within(3, e, "mask"));
        }
        const int32_t o_dims[3] = {p[0], p[1], p[4]};
        return out_numel(product(o_dims, 3));
      }
      case NodeOp::Pad: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        if (p[0] < 0 || p[0] > 1) return fail("mode (0 constant, 1 reflect)", 1, static_cast<uint64_t>(p[0]));
        TERN_RETURN_IF_ERROR(params_in(1, 12, 1));
        for (uint32_t d = 0; d < 6; ++d) {
          const int64_t out = p[1 + d], size = p[7 + d], before = p[13 + d];
          if (before < -kMaxParam || before > kMaxParam) {
            return fail("padding before a dim, |pad| <= 2^30", static_cast<uint64_t>(kMaxParam),
                        static_cast<uint64_t>(before < 0 ? -before : before));
          }
          // Reflect reads s = |o - before| mirrored once at the far edge: inside x only when
          // 0 <= before < size and 0 <= after < size (constant mode checks every read).
          const int64_t after = out - size - before;
          if (p[0] == 1 && (before < 0 || before >= size || after < 0 || after >= size)) {
            return fail("reflect padding of a dim below its size", static_cast<uint64_t>(size),
                        static_cast<uint64_t>(before < 0 || after < 0 ? size : (before > after ? before : after)));
          }
        }
        TERN_RETURN_IF_ERROR(reads_within(0, product(p + 7, 6), "x"));
        return out_numel(product(p + 1, 6));
      }
      case NodeOp::Upsample2d: {
        TERN_RETURN_IF_ERROR(need_inputs(1, 1));
        TERN_RETURN_IF_ERROR(params_in(0, 5, 1));
        TERN_RETURN_IF_ERROR(flag(5));
        TERN_RETURN_IF_ERROR(flag(6));
        TERN_RETURN_IF_ERROR(zeros(7, kNodeParams));
        // The shader clamps a source index in f32 (min(floor(o * step), in - 1)): exact for
        // input sizes up to 2^24; a step must be finite and >= 0 so the index is too.
        for (uint32_t d = 1; d <= 2; ++d) {
          if (p[d] > (1 << 24)) return fail("input size <= 2^24", 1u << 24, static_cast<uint64_t>(p[d]));
        }
        for (uint32_t k = 0; k < 2; ++k) {
          const float step = node.fparams[k];
          if (!(step >= 0.0f && step <= 3.0e38f)) {
            TERN_RETURN_ERROR(InvalidProgram,
                              "vulkan blob: node %u (%s): source step %u = %g, expected finite "
                              "and >= 0", index, node_op_name(node.op), k,
                              static_cast<double>(step));
          }
        }
        const int32_t x_dims[3] = {p[0], p[1], p[2]}, o_dims[3] = {p[0], p[3], p[4]};
        TERN_RETURN_IF_ERROR(reads_within(0, product(x_dims, 3), "x"));
        return out_numel(product(o_dims, 3));
      }
      case NodeOp::QuantLinear: {
        TERN_RETURN_IF_ERROR(need_inputs(2, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 3, 1));
        TERN_RETURN_IF_ERROR(flag(3));
        TERN_RETURN_IF_ERROR(flag(4));
        TERN_RETURN_IF_ERROR(zeros(5, kQFormat));
        if ((p[3] != 0) != (node.num_inputs == 3)) return fail("has_bias vs inputs", 3, node.num_inputs);
        const uint64_t m = static_cast<uint64_t>(p[0]), n = static_cast<uint64_t>(p[1]),
                       k = static_cast<uint64_t>(p[2]);
        TERN_RETURN_IF_ERROR(p[4] != 0 ? quant_weight(1, n, k) : quant_weight(1, k, n));
        TERN_RETURN_IF_ERROR(reads_within(0, m * k, "x"));
        if (p[3] != 0) TERN_RETURN_IF_ERROR(reads_within(2, n, "bias"));
        return out_numel(m * n);
      }
      case NodeOp::GroupedMatmul:
      case NodeOp::QuantGroupedLinear: {
        const bool quant = node.op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear);
        TERN_RETURN_IF_ERROR(need_inputs(3, 3));
        TERN_RETURN_IF_ERROR(params_in(0, 4, 1));
        if (p[4] != 1 && p[4] != 2) return fail("words per end (1 i32, 2 i64)", 1, static_cast<uint64_t>(p[4]));
        const uint32_t ends_type = static_cast<uint32_t>(p[4] == 1 ? ValueType::I32 : ValueType::I64);
        if (in(2).type != ends_type ||
            in(2).kind != static_cast<uint32_t>(ValueKind::ExternalInput)) {
          return fail("group ends: an external input of the type params[4] says (type)", ends_type,
                      in(2).type);
        }
        const uint64_t s = static_cast<uint64_t>(p[0]), k = static_cast<uint64_t>(p[1]),
                       n = static_cast<uint64_t>(p[2]), e = static_cast<uint64_t>(p[3]);
        if (in(2).rank != 1 || in(2).dims[0] != e) return fail("group ends [E]", e, in_numel(2));
        if (quant) {
          TERN_RETURN_IF_ERROR(zeros(5, kQFormat));
          TERN_RETURN_IF_ERROR(quant_weight(1, e * n, k));
        } else {
          TERN_RETURN_IF_ERROR(flag(5));
          TERN_RETURN_IF_ERROR(zeros(6, kNodeParams));
          uint64_t w = 0;
          if (!checked_mul(e * n, k, &w)) return fail("w elements", 0, 0);
          if (w != in_numel(1)) return fail("w elements (E K N)", w, in_numel(1));
        }
        TERN_RETURN_IF_ERROR(reads_within(0, s * k, "x"));
        return out_numel(s * n);
      }
      case NodeOp::QuantEmbedding: {
        TERN_RETURN_IF_ERROR(need_inputs(2, 2));
        TERN_RETURN_IF_ERROR(params_in(0, 3, 1));
        TERN_RETURN_IF_ERROR(zeros(3, kQFormat));
        TERN_RETURN_IF_ERROR(quant_weight(0, static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[1])));
        TERN_RETURN_IF_ERROR(indices(1, p[0], p[2]));
        return out_numel(static_cast<uint64_t>(p[2]) * static_cast<uint64_t>(p[1]));
      }
    }
    TERN_RETURN_ERROR(InvalidProgram, "vulkan blob: node %u: op %u, expected 1..%u", index,
                      node.op, kLastNodeOp);
  }
};

}  // namespace

const char* node_op_name(uint32_t op) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::MatMul: return "matmul";
    case NodeOp::Elementwise: return "elementwise";
    case NodeOp::Unary: return "unary";
    case NodeOp::Softmax: return "softmax";
    case NodeOp::LayerNorm: return "layer_norm";
    case NodeOp::Conv: return "conv";
    case NodeOp::ConvTranspose: return "conv_transpose";
    case NodeOp::Cumsum: return "cumsum";
    case NodeOp::ChannelAffine: return "channel_affine";
    case NodeOp::Pool2d: return "pool2d";
    case NodeOp::Copy: return "copy";
    case NodeOp::Reduce: return "reduce";
    case NodeOp::Embedding: return "embedding";
    case NodeOp::Attention: return "attention";
    case NodeOp::Pad: return "pad";
    case NodeOp::QuantLinear: return "quant_linear";
    case NodeOp::QuantEmbedding: return "quant_embedding";
    case NodeOp::Upsample2d: return "upsample2d";
    case NodeOp::GroupedMatmul: return "grouped_matmul";
    case NodeOp::QuantGroupedLinear: return "quant_grouped_linear";
  }
  return "?";
}

uint64_t value_numel(const BlobValue& v) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < v.rank && d < kMaxDims; ++d) n *= v.dims[d];
  return n;
}

uint64_t value_bytes(const BlobValue& v, uint32_t storage) {
  if (v.type == static_cast<uint32_t>(ValueType::Quant)) return v.data_bytes;
  if (v.type == static_cast<uint32_t>(ValueType::I64)) return value_numel(v) * 8;
  if (v.type == static_cast<uint32_t>(ValueType::I32)) return value_numel(v) * 4;
  return value_numel(v) * storage_element_bytes(storage);
}

bool node_input_type_ok(uint32_t op, uint32_t slot, uint32_t type) {
  const ValueType t = static_cast<ValueType>(type);
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Embedding:  // float-held indices: the node checker's params[4]
      return slot == 1 ? t == ValueType::I64 || t == ValueType::F32 || t == ValueType::I64AsFloat
                       : t == ValueType::F32;
    case NodeOp::QuantLinear: return t == (slot == 1 ? ValueType::Quant : ValueType::F32);
    case NodeOp::QuantEmbedding: return t == (slot == 0 ? ValueType::Quant : ValueType::I64);
    case NodeOp::GroupedMatmul:
    case NodeOp::QuantGroupedLinear:
      if (slot == 2) return t == ValueType::I32 || t == ValueType::I64;
      if (slot == 1 && op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        return t == ValueType::Quant;
      }
      return t == ValueType::F32;
    default:  // bools are 0 / 1 floats, and an argmax's integers floats too
      return t == ValueType::F32 || t == ValueType::Bool || t == ValueType::I64AsFloat;
  }
}

const char* node_input_type_text(uint32_t op, uint32_t slot) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Embedding: return slot == 1 ? "i64" : "f32";
    case NodeOp::QuantLinear: return slot == 1 ? "quantized weight" : "f32";
    case NodeOp::QuantEmbedding: return slot == 0 ? "quantized weight" : "i64";
    case NodeOp::GroupedMatmul:
    case NodeOp::QuantGroupedLinear:
      if (slot == 2) return "i32 or i64 (group ends)";
      if (slot == 1 && op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        return "quantized weight";
      }
      return "f32";
    default: return "f32 (a bool or integers held as floats too)";
  }
}

/// Whether value `v`'s type may have its kind (the value record's rules, README): f32 any;
/// i64 an input or a constant; i32 an input; bool and i64-as-floats an input or an output; a
/// quantized weight a rank-2 constant of an f32-storage blob.
static bool value_type_allowed(const BlobValue& v, uint32_t storage) {
  const bool input = v.kind == static_cast<uint32_t>(ValueKind::ExternalInput);
  const bool edge = input || v.kind == static_cast<uint32_t>(ValueKind::ExternalOutput);
  const bool constant = v.kind == static_cast<uint32_t>(ValueKind::Constant);
  switch (static_cast<ValueType>(v.type)) {
    case ValueType::F32: return true;
    case ValueType::I64: return input || constant;
    case ValueType::I32: return input;
    case ValueType::Bool:
    case ValueType::I64AsFloat: return edge;
    case ValueType::Quant: return constant && v.rank == 2 && storage == kStorageF32;
  }
  return false;  // past kLastValueType
}

static const char* value_type_name(uint32_t type) {
  switch (static_cast<ValueType>(type)) {
    case ValueType::F32: return "f32";
    case ValueType::I64: return "i64";
    case ValueType::Quant: return "quantized weight";
    case ValueType::I32: return "i32";
    case ValueType::Bool: return "bool";
    case ValueType::I64AsFloat: return "i64 as floats";
  }
  return "?";
}

void free_blob_plan(BlobPlan* plan) {
  std::free(plan->values);
  std::free(plan->nodes);
  plan->values = nullptr;
  plan->nodes = nullptr;
}

Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan) {
  TERN_CHECK_OR_RETURN_ERROR(blob.size() >= sizeof(BlobHeader), InvalidProgram,
                             "vulkan blob: %zu bytes, expected at least the %zu-byte header",
                             blob.size(), sizeof(BlobHeader));
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  TERN_CHECK_OR_RETURN_ERROR(std::memcmp(h.magic, kBlobMagic, 4) == 0, InvalidProgram,
                             "vulkan blob: magic %02x %02x %02x %02x, expected \"TVKN\"",
                             static_cast<uint8_t>(h.magic[0]), static_cast<uint8_t>(h.magic[1]),
                             static_cast<uint8_t>(h.magic[2]), static_cast<uint8_t>(h.magic[3]));
  TERN_CHECK_OR_RETURN_ERROR(h.version == kBlobVersion, DelegateInvalidCompatibility,
                             "vulkan blob: version %u, this runtime reads version %u", h.version,
                             kBlobVersion);
  TERN_CHECK_OR_RETURN_ERROR(h.storage <= kLastStorage, DelegateInvalidCompatibility,
                             "vulkan blob: storage type %u, this runtime implements f32 (0) and "
                             "f16 (1)", h.storage);
  TERN_CHECK_OR_RETURN_ERROR(h.header_size == sizeof(BlobHeader), InvalidProgram,
                             "vulkan blob: header_size %u, expected %zu", h.header_size,
                             sizeof(BlobHeader));
  TERN_CHECK_OR_RETURN_ERROR(h.value_record_size == sizeof(BlobValue), InvalidProgram,
                             "vulkan blob: value_record_size %u, expected %zu",
                             h.value_record_size, sizeof(BlobValue));
  TERN_CHECK_OR_RETURN_ERROR(h.node_record_size == sizeof(BlobNode), InvalidProgram,
                             "vulkan blob: node_record_size %u, expected %zu", h.node_record_size,
                             sizeof(BlobNode));
  TERN_CHECK_OR_RETURN_ERROR(h.num_values >= 1 && h.num_values <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_values %u, expected 1..%u", h.num_values,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(h.num_nodes >= 1 && h.num_nodes <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_nodes %u, expected 1..%u", h.num_nodes,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(h.num_args <= kMaxRecords, InvalidProgram,
                             "vulkan blob: num_args %u, expected at most %u", h.num_args,
                             kMaxRecords);
  TERN_CHECK_OR_RETURN_ERROR(is_power_of_two(h.workgroup_size) && h.workgroup_size >= 32 &&
                                 h.workgroup_size <= 1024,
                             InvalidProgram,
                             "vulkan blob: workgroup_size %u, expected a power of two in "
                             "[32, 1024]", h.workgroup_size);
  TERN_CHECK_OR_RETURN_ERROR(h.matmul_tile == 8 || h.matmul_tile == 16 || h.matmul_tile == 32,
                             InvalidProgram, "vulkan blob: matmul_tile %u, expected 8, 16 or 32",
                             h.matmul_tile);
  TERN_CHECK_OR_RETURN_ERROR(h.reserved == 0, InvalidProgram,
                             "vulkan blob: reserved header field %u, expected 0", h.reserved);
  const uint64_t tables = sizeof(BlobHeader) + uint64_t{h.num_values} * sizeof(BlobValue) +
                          uint64_t{h.num_nodes} * sizeof(BlobNode);
  TERN_CHECK_OR_RETURN_ERROR(h.data_offset % kDataAlignment == 0 && h.data_offset >= tables,
                             InvalidProgram,
                             "vulkan blob: data_offset %llu, expected a multiple of %llu at or "
                             "after the tables' end %llu",
                             static_cast<unsigned long long>(h.data_offset),
                             static_cast<unsigned long long>(kDataAlignment),
                             static_cast<unsigned long long>(tables));
  TERN_CHECK_OR_RETURN_ERROR(range_within(h.data_offset, h.data_size, blob.size()),
                             InvalidProgram,
                             "vulkan blob: data section [%llu, +%llu) past the blob's %zu bytes",
                             static_cast<unsigned long long>(h.data_offset),
                             static_cast<unsigned long long>(h.data_size), blob.size());

  plan->header = h;
  plan->values = static_cast<BlobValue*>(std::malloc(h.num_values * sizeof(BlobValue)));
  plan->nodes = static_cast<BlobNode*>(std::malloc(h.num_nodes * sizeof(BlobNode)));
  if (plan->values == nullptr || plan->nodes == nullptr) {
    free_blob_plan(plan);
    TERN_RETURN_ERROR(MemoryAllocationFailed, "vulkan blob: no memory for %u values, %u nodes",
                      h.num_values, h.num_nodes);
  }
  std::memcpy(plan->values, blob.data() + sizeof(BlobHeader), h.num_values * sizeof(BlobValue));
  std::memcpy(plan->nodes, blob.data() + sizeof(BlobHeader) + h.num_values * sizeof(BlobValue),
              h.num_nodes * sizeof(BlobNode));
  plan->data = blob.data() + h.data_offset;
  plan->data_size = h.data_size;

  // Values.
  bool* arg_seen = static_cast<bool*>(std::calloc(h.num_args + 1, 1));
  bool* written = static_cast<bool*>(std::calloc(h.num_values, 1));
  Error err = Error::Ok;
  if (arg_seen == nullptr || written == nullptr) {
    err = set_error_message(Error::MemoryAllocationFailed, "vulkan blob: no memory to check");
  }
  for (uint32_t i = 0; err == Error::Ok && i < h.num_values; ++i) {
    const BlobValue& v = plan->values[i];
    if (v.kind > static_cast<uint32_t>(ValueKind::Constant)) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: value %u: kind %u, expected 0..3", i, v.kind);
      break;
    }
    if (!value_type_allowed(v, h.storage)) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s, rank %u): type %u, expected 0 (f32), 1 "
                              "(i64), 3 (i32), 4 (bool) or 5 (i64 as floats) for an external "
                              "input, 0, 4 or 5 for an external output, 0 for an internal "
                              "value, 0, 1 or 2 (quantized: rank 2, an f32-storage blob) for a "
                              "constant (storage %u)", i,
                              kind_name(v.kind), v.rank, v.type, h.storage);
      break;
    }
    if (v.rank > kMaxDims) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: value %u: rank %u, expected 0..%u", i, v.rank, kMaxDims);
      break;
    }
    uint64_t n = 1;
    for (uint32_t d = 0; d < kMaxDims && err == Error::Ok; ++d) {
      const bool used = d < v.rank;
      if ((used && (v.dims[d] < 1 || v.dims[d] > kMaxElements)) || (!used && v.dims[d] != 0)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: value %u: dims[%u] = %llu, expected %s", i, d,
                                static_cast<unsigned long long>(v.dims[d]),
                                used ? "1..2^30" : "0 (past the rank)");
      } else if (used) {
        n *= v.dims[d];
        if (n > kMaxElements) {
          err = set_error_message(Error::InvalidProgram,
                                  "vulkan blob: value %u: more than 2^30 elements", i);
        }
      }
    }
    if (err != Error::Ok) break;
    const bool external = v.kind == static_cast<uint32_t>(ValueKind::ExternalInput) ||
                          v.kind == static_cast<uint32_t>(ValueKind::ExternalOutput);
    if (external) {
      if (v.arg >= h.num_args || arg_seen[v.arg]) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: value %u (%s): arg %u, expected an unused argument "
                                "below num_args %u", i, kind_name(v.kind), v.arg, h.num_args);
        break;
      }
      arg_seen[v.arg] = true;
    } else if (v.arg != kNoValue) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s): arg %u, expected none (0xFFFFFFFF)", i,
                              kind_name(v.kind), v.arg);
      break;
    }
    if (v.kind == static_cast<uint32_t>(ValueKind::Constant)) {
      // A quantized weight's exact size follows its scheme, which the nodes reading it hold
      // (NodeChecker::quant_weight); here only a whole number of words.
      const bool quant = v.type == static_cast<uint32_t>(ValueType::Quant);
      const uint64_t elem = v.type == static_cast<uint32_t>(ValueType::I64)
                                ? 8
                                : storage_element_bytes(h.storage);
      const bool size_ok = quant ? v.data_bytes >= 4 && v.data_bytes % 4 == 0 &&
                                       v.data_bytes <= 8 * kMaxElements
                                 : v.data_bytes == elem * n;
      if (!size_ok || v.data_offset % kDataAlignment != 0 ||
          !range_within(v.data_offset, v.data_bytes, h.data_size)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: constant %u: [%llu, +%llu) bytes, expected %s%llu "
                                "bytes at a multiple of %llu inside the %llu-byte data section",
                                i, static_cast<unsigned long long>(v.data_offset),
                                static_cast<unsigned long long>(v.data_bytes),
                                quant ? "a positive multiple of 4 (quantized), at most " : "",
                                static_cast<unsigned long long>(quant ? 8 * kMaxElements
                                                                      : elem * n),
                                static_cast<unsigned long long>(kDataAlignment),
                                static_cast<unsigned long long>(h.data_size));
        break;
      }
      written[i] = true;
    } else if (v.data_offset != 0 || v.data_bytes != 0) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s): data [%llu, +%llu), expected none", i,
                              kind_name(v.kind), static_cast<unsigned long long>(v.data_offset),
                              static_cast<unsigned long long>(v.data_bytes));
      break;
    }
    if (v.kind == static_cast<uint32_t>(ValueKind::ExternalInput)) written[i] = true;
  }
  // Nodes, in order: operands in range and already written; outputs not read-only.
  for (uint32_t n = 0; err == Error::Ok && n < h.num_nodes; ++n) {
    const BlobNode& node = plan->nodes[n];
    if (node.num_inputs < 1 || node.num_inputs > kMaxNodeInputs) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s): num_inputs %u, expected 1..%u", n,
                              node_op_name(node.op), node.num_inputs, kMaxNodeInputs);
      break;
    }
    for (uint32_t i = 0; i < kMaxNodeInputs && err == Error::Ok; ++i) {
      const uint32_t id = node.inputs[i];
      if (i >= node.num_inputs) {
        if (id != kNoValue) {
          err = set_error_message(Error::InvalidProgram,
                                  "vulkan blob: node %u: unused input %u = %u, expected none", n,
                                  i, id);
        }
      } else if (id >= h.num_values || !written[id]) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): input %u is value %u, expected a "
                                "value below %u written before the node", n,
                                node_op_name(node.op), i, id, h.num_values);
      } else if (!node_input_type_ok(node.op, i, plan->values[id].type)) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): input %u (value %u) is %s, expected %s",
                                n, node_op_name(node.op), i, id,
                                value_type_name(plan->values[id].type),
                                node_input_type_text(node.op, i));
      }
    }
    if (err != Error::Ok) break;
    const uint32_t o = node.output;
    if (o >= h.num_values || (plan->values[o].kind != static_cast<uint32_t>(ValueKind::Internal) &&
                              plan->values[o].kind != static_cast<uint32_t>(ValueKind::ExternalOutput))) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s): output value %u, expected an internal "
                              "or external output value below %u", n, node_op_name(node.op), o,
                              h.num_values);
      break;
    }
    for (uint32_t i = 0; i < node.num_inputs; ++i) {
      if (node.inputs[i] == o) {
        err = set_error_message(Error::InvalidProgram,
                                "vulkan blob: node %u (%s): output value %u is also its input %u",
                                n, node_op_name(node.op), o, i);
      }
    }
    if (err != Error::Ok) break;
    if (h.storage != kStorageF32 && (node.op == static_cast<uint32_t>(NodeOp::QuantLinear) ||
                                     node.op == static_cast<uint32_t>(NodeOp::QuantEmbedding) ||
                                     node.op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear))) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: node %u (%s) in a blob of storage %u: quantized "
                              "weights need f32 storage (0)", n, node_op_name(node.op), h.storage);
      break;
    }
    if (node.reserved != 0) {
      err = set_error_message(Error::InvalidProgram, "vulkan blob: node %u: reserved %u, expected 0", n, node.reserved);
      break;
    }
    err = NodeChecker{*plan, n, node}.check();
    written[o] = true;
  }
  for (uint32_t i = 0; err == Error::Ok && i < h.num_values; ++i) {
    if (!written[i]) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan blob: value %u (%s) is never written", i,
                              kind_name(plan->values[i].kind));
    }
  }
  std::free(arg_seen);
  std::free(written);
  if (err != Error::Ok) free_blob_plan(plan);
  return err;
}

}  // namespace tern::vulkan
