// Per-node checks of a vulkan blob: each node's parameters keep every shader access inside
// the buffers it binds (the shaders do not bound check); every field is untrusted input.
#include "backends/vulkan/runtime/node_checker.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/checked_math.h"

namespace tern::vulkan {
namespace {

constexpr int64_t kMaxParam = 1ll << 30;

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
                        index, node_op_name(node.op), slot, value_kind_name(v.kind), v.type);
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

Error check_node(const BlobPlan& plan, uint32_t index) {
  return NodeChecker{plan, index, plan.nodes[index]}.check();
}

}  // namespace tern::vulkan
