#include "backends/cuda/runtime/blob_reader.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/kernels/quant_decode.h"
#include "runtime/core/checked_math.h"

namespace tern::cuda {
namespace {

constexpr uint32_t kMaxArgs = 1u << 20;
/// Largest window, stride, padding, dilation or group count taken (keeps products small).
constexpr int64_t kMaxSmallParam = 1 << 20;

#define BLOB_FAIL(...) return set_error_message(Error::InvalidProgram, __VA_ARGS__)
#define BLOB_CHECK(cond, ...) \
  do {                        \
    if (!(cond)) BLOB_FAIL(__VA_ARGS__); \
  } while (0)

using ull = unsigned long long;
using ll = long long;

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case 0: return "internal";
    case 1: return "external input";
    case 2: return "external output";
    case 3: return "constant";
  }
  return "?";
}

const char* dtype_name(uint32_t dtype) {
  switch (dtype) {
    case 0: return "f32";
    case 1: return "f16";
    case 2: return "bf16";
    case 3: return "i64";
    case 4: return "i32";
    case 8: return "bool";
    case 9: return "nf4";
    case 10: return "fp8_e4m3";
    case 11: return "fp8_e5m2";
  }
  return "?";
}

bool is_int(const BlobValue& v) {
  return v.dtype == static_cast<uint32_t>(ValueDType::I64) ||
         v.dtype == static_cast<uint32_t>(ValueDType::I32);
}
bool is_bool(const BlobValue& v) { return v.dtype == static_cast<uint32_t>(ValueDType::Bool); }

void dims_str(const BlobValue& v, char* buf, size_t size) {
  size_t at = static_cast<size_t>(std::snprintf(buf, size, "["));
  for (uint32_t d = 0; d < v.rank && at < size; ++d) {
    at += static_cast<size_t>(std::snprintf(buf + at, size - at, "%s%llu", d ? ", " : "",
                                            static_cast<ull>(v.dims[d])));
  }
  if (at < size) std::snprintf(buf + at, size - at, "]");
}

/// The [N, C, H, W] dims of a conv operand: its own, or a rank-3 (1-D conv) one with H = 1.
void conv_dims(const BlobValue& v, uint64_t out[4]) {
  if (v.rank == 3) {
    out[0] = v.dims[0];
    out[1] = v.dims[1];
    out[2] = 1;
    out[3] = v.dims[2];
  } else {
    for (int i = 0; i < 4; ++i) out[i] = v.dims[i];
  }
}

/// Slots of each op: how many inputs, which are required (bit i = slot i).
struct Arity {
  uint32_t min_inputs;
  uint32_t max_inputs;
  uint32_t required;
  uint32_t int_params;    ///< params used (the rest must be 0); StridedCopy: 1 + out rank
  uint32_t float_params;  ///< fparams used (the rest must be 0)
};

Arity arity(NodeOp op) {
  switch (op) {
    case NodeOp::Gemm: return {3, 3, 0x3, 8, 1};
    case NodeOp::Conv2d: return {3, 3, 0x3, 8, 0};
    case NodeOp::Binary: return {2, 2, 0x1, 1, 2};
    case NodeOp::Unary: return {1, 1, 0x1, 1, 2};
    case NodeOp::Softmax: return {1, 1, 0x1, 1, 0};
    case NodeOp::LayerNorm: return {3, 3, 0x1, 1, 1};
    case NodeOp::BatchNorm: return {5, 5, 0x19, 0, 1};
    case NodeOp::MaxPool2d: return {1, 1, 0x1, 8, 0};
    case NodeOp::AvgPool2d: return {1, 1, 0x1, 10, 0};
    case NodeOp::AdaptiveAvgPool2d: return {1, 1, 0x1, 0, 0};
    case NodeOp::Reduce: return {1, 1, 0x1, 4, 0};
    case NodeOp::StridedCopy: return {1, 1, 0x1, 1, 0};
    case NodeOp::Concat: return {2, kMaxNodeInputs, 0xFF, 1, 0};
    case NodeOp::Embedding: return {2, 2, 0x3, 0, 0};
    case NodeOp::Attention: return {4, 4, 0x7, 12, 1};
    case NodeOp::GroupNorm: return {3, 3, 0x1, 1, 1};
    case NodeOp::RmsNorm: return {2, 2, 0x1, 1, 1};
    case NodeOp::Upsample2d: return {1, 1, 0x1, 2, 2};
    case NodeOp::Pad: return {1, 1, 0x1, 1 + kMaxDims, 1};
    case NodeOp::ConvTranspose2d: return {3, 3, 0x3, 9, 0};
    case NodeOp::Where: return {3, 3, 0x1, 0, 2};
    case NodeOp::Compare: return {2, 2, 0x1, 1, 1};
    case NodeOp::Cast: return {1, 1, 0x1, 0, 0};
    case NodeOp::IndexSelect: return {2, 2, 0x3, 3, 0};
    case NodeOp::QuantLinear: return {3, 3, 0x3, kQuantNodeParams, 1};
    case NodeOp::QuantEmbedding: return {2, 2, 0x3, kQuantNodeParams, 1};
    case NodeOp::GroupedMatmul: return {3, 3, 0x7, 0, 0};
    case NodeOp::QuantGroupedLinear: return {3, 3, 0x7, kQuantNodeParams, 1};
  }
  return {0, 0, 0, 0, 0};
}

/// Context for the per-op checks of node `n`.
struct NodeCheck {
  const BlobHeader& h;
  const BlobValue* values;
  const BlobNode& node;
  uint32_t n;
  const char* name;

  const BlobValue& in(uint32_t slot) const { return values[node.inputs[slot]]; }
  bool has(uint32_t slot) const { return node.inputs[slot] != kNoValue; }
  const BlobValue& out() const { return values[node.output]; }
  int64_t p(uint32_t i) const { return node.params[i]; }
  /// Whether v holds floats in the blob's storage dtype (f32, or f16/bf16 in a 16-bit blob).
  bool fl(const BlobValue& v) const { return v.dtype == compute_storage(h.compute_dtype); }
  const char* float_name() const { return dtype_name(compute_storage(h.compute_dtype)); }
};

#define NODE_CHECK(cond, fmt, ...)                                                        \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      BLOB_FAIL("cuda blob: node %u (%s): " fmt, c.n, c.name, ##__VA_ARGS__);             \
    }                                                                                     \
  } while (0)

bool in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

/// Output element count `want` (overflow-checked product of up to 3 factors).
bool product(uint64_t a, uint64_t b, uint64_t c, uint64_t* out) {
  uint64_t ab;
  return checked_mul(a, b, &ab) && checked_mul(ab, c, out);
}

Error check_shape_equal(const NodeCheck& c, const BlobValue& a, const BlobValue& b,
                        const char* what) {
  char da[128], db[128];
  dims_str(a, da, sizeof(da));
  dims_str(b, db, sizeof(db));
  NODE_CHECK(a.rank == b.rank && std::memcmp(a.dims, b.dims, sizeof(a.dims)) == 0,
             "%s has dims %s, expected %s", what, db, da);
  return Error::Ok;
}

Error check_gemm(const NodeCheck& c) {
  for (uint32_t i = 0; i < 4; ++i) {
    NODE_CHECK(in_range(c.p(i), 1, static_cast<int64_t>(kMaxDim)), "params[%u] = %lld, expected 1..2^31", i,
               static_cast<ll>(c.p(i)));
  }
  const uint64_t m = static_cast<uint64_t>(c.p(0)), n = static_cast<uint64_t>(c.p(1));
  const uint64_t k = static_cast<uint64_t>(c.p(2)), batch = static_cast<uint64_t>(c.p(3));
  NODE_CHECK(c.p(4) == 0 || c.p(4) == 1, "w transposed flag %lld", static_cast<ll>(c.p(4)));
  NODE_CHECK(in_range(c.p(7), 0, kLastActivation), "activation %lld", static_cast<ll>(c.p(7)));
  uint64_t mk, kn, mn, want;
  NODE_CHECK(checked_mul(m, k, &mk) && checked_mul(k, n, &kn) && checked_mul(m, n, &mn),
             "M, N, K overflow");
  NODE_CHECK(c.p(5) == 0 || static_cast<uint64_t>(c.p(5)) == mk,
             "a's batch stride %lld, expected 0 or M*K = %llu", static_cast<ll>(c.p(5)),
             static_cast<ull>(mk));
  NODE_CHECK(c.p(6) == 0 || static_cast<uint64_t>(c.p(6)) == kn,
             "w's batch stride %lld, expected 0 or K*N = %llu", static_cast<ll>(c.p(6)),
             static_cast<ull>(kn));
  NODE_CHECK(c.fl(c.in(0)) && c.fl(c.in(1)) && c.fl(c.out()) && (!c.has(2) || c.fl(c.in(2))),
             "operands must be %s", c.float_name());
  NODE_CHECK(value_numel(c.in(0)) == (c.p(5) ? batch * mk : mk),
             "a has %llu elements, expected %llu", static_cast<ull>(value_numel(c.in(0))),
             static_cast<ull>(c.p(5) ? batch * mk : mk));
  NODE_CHECK(value_numel(c.in(1)) == (c.p(6) ? batch * kn : kn),
             "w has %llu elements, expected %llu", static_cast<ull>(value_numel(c.in(1))),
             static_cast<ull>(c.p(6) ? batch * kn : kn));
  NODE_CHECK(checked_mul(batch, mn, &want) && value_numel(c.out()) == want,
             "output has %llu elements, expected batch*M*N", static_cast<ull>(value_numel(c.out())));
  NODE_CHECK(!c.has(2) || value_numel(c.in(2)) == n, "bias has %llu elements, expected N = %llu",
             static_cast<ull>(value_numel(c.in(2))), static_cast<ull>(n));
  NODE_CHECK(std::isfinite(c.node.fparams[0]), "alpha is not finite");
  return Error::Ok;
}

Error check_conv(const NodeCheck& c) {
  const BlobValue &xv = c.in(0), &wv = c.in(1), &ov = c.out();
  NODE_CHECK((xv.rank == 4 && wv.rank == 4 && ov.rank == 4) ||
                 (xv.rank == 3 && wv.rank == 3 && ov.rank == 3),
             "x, w and output must be all 4-D (conv2d) or all 3-D (conv1d), found ranks %u, %u, "
             "%u", xv.rank, wv.rank, ov.rank);
  NODE_CHECK(c.fl(xv) && c.fl(wv) && c.fl(ov) && (!c.has(2) || c.fl(c.in(2))),
             "operands must be %s", c.float_name());
  if (xv.rank == 3) {
    NODE_CHECK(c.p(0) == 1 && c.p(2) == 0 && c.p(4) == 1,
               "a 1-D convolution with height stride %lld, padding %lld, dilation %lld (expected "
               "1, 0, 1)", static_cast<ll>(c.p(0)), static_cast<ll>(c.p(2)),
               static_cast<ll>(c.p(4)));
  }
  uint64_t x[4], w[4], o[4];
  conv_dims(xv, x);
  conv_dims(wv, w);
  conv_dims(ov, o);
  for (uint32_t i = 0; i < 7; ++i) {
    const int64_t lo = (i == 2 || i == 3) ? 0 : 1;
    NODE_CHECK(in_range(c.p(i), lo, kMaxSmallParam), "params[%u] = %lld out of range", i,
               static_cast<ll>(c.p(i)));
  }
  NODE_CHECK(in_range(c.p(7), 0, static_cast<int64_t>(Activation::Relu)), "activation %lld",
             static_cast<ll>(c.p(7)));
  const uint64_t g = static_cast<uint64_t>(c.p(6));
  const uint64_t cin = x[1], cout = w[0];
  NODE_CHECK(cin % g == 0 && cout % g == 0 && w[1] == cin / g,
             "channels: x has %llu, w is [%llu, %llu, ...], groups %llu", static_cast<ull>(cin),
             static_cast<ull>(cout), static_cast<ull>(w[1]), static_cast<ull>(g));
  uint64_t expect[4] = {x[0], cout, 0, 0};
  for (int a = 0; a < 2; ++a) {
    const int64_t in = static_cast<int64_t>(x[2 + a]);
    const int64_t k = static_cast<int64_t>(w[2 + a]);
    NODE_CHECK(k <= kMaxSmallParam, "window too large");
    const int64_t span = in + 2 * c.p(2 + a) - c.p(4 + a) * (k - 1) - 1;
    NODE_CHECK(span >= 0, "window larger than the padded input");
    expect[2 + a] = static_cast<uint64_t>(span / c.p(a) + 1);
  }
  NODE_CHECK(std::memcmp(expect, o, sizeof(expect)) == 0,
             "output dims [%llu, %llu, %llu, %llu], expected [%llu, %llu, %llu, %llu]",
             static_cast<ull>(o[0]), static_cast<ull>(o[1]), static_cast<ull>(o[2]),
             static_cast<ull>(o[3]), static_cast<ull>(expect[0]), static_cast<ull>(expect[1]),
             static_cast<ull>(expect[2]), static_cast<ull>(expect[3]));
  NODE_CHECK(!c.has(2) || value_numel(c.in(2)) == cout, "bias has %llu elements, expected %llu",
             static_cast<ull>(value_numel(c.in(2))), static_cast<ull>(cout));
  const bool pointwise = w[2] == 1 && w[3] == 1 && c.p(0) == 1 && c.p(1) == 1 &&
                         c.p(2) == 0 && c.p(3) == 0;
  uint64_t floats = conv_workspace_floats(cin, w[2], w[3], o[2], o[3], g, pointwise);
  NODE_CHECK(floats <= c.h.workspace_bytes / 4, "needs %llu workspace bytes, the blob has %llu",
             static_cast<ull>(floats * 4), static_cast<ull>(c.h.workspace_bytes));
  return Error::Ok;
}

Error check_conv_transpose(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &w = c.in(1), &o = c.out();
  NODE_CHECK(x.rank == 4 && w.rank == 4 && o.rank == 4, "x, w and output must be 4-D");
  NODE_CHECK(c.fl(x) && c.fl(w) && c.fl(o) && (!c.has(2) || c.fl(c.in(2))),
             "operands must be %s", c.float_name());
  for (uint32_t i = 0; i < 9; ++i) {
    const int64_t lo = (i >= 2 && i <= 5) ? 0 : 1;
    NODE_CHECK(in_range(c.p(i), lo, kMaxSmallParam), "params[%u] = %lld out of range", i,
               static_cast<ll>(c.p(i)));
  }
  const uint64_t g = static_cast<uint64_t>(c.p(8));
  const uint64_t cin = x.dims[1], cout = w.dims[1] * g;
  NODE_CHECK(cin % g == 0 && w.dims[0] == cin && o.dims[1] == cout && o.dims[0] == x.dims[0],
             "channels: x [%llu, %llu, ...], w [%llu, %llu, ...], groups %llu, output channels "
             "%llu", static_cast<ull>(x.dims[0]), static_cast<ull>(cin),
             static_cast<ull>(w.dims[0]), static_cast<ull>(w.dims[1]), static_cast<ull>(g),
             static_cast<ull>(o.dims[1]));
  for (int a = 0; a < 2; ++a) {
    const int64_t stride = c.p(a), pad = c.p(2 + a), outpad = c.p(4 + a), dil = c.p(6 + a);
    NODE_CHECK(outpad < stride || outpad < dil, "output padding %lld not below stride %lld or "
               "dilation %lld", static_cast<ll>(outpad), static_cast<ll>(stride),
               static_cast<ll>(dil));
    const int64_t want = (static_cast<int64_t>(x.dims[2 + a]) - 1) * stride - 2 * pad +
                         dil * (static_cast<int64_t>(w.dims[2 + a]) - 1) + outpad + 1;
    NODE_CHECK(want == static_cast<int64_t>(o.dims[2 + a]), "output dim %d is %llu, expected %lld",
               2 + a, static_cast<ull>(o.dims[2 + a]), static_cast<ll>(want));
  }
  NODE_CHECK(!c.has(2) || value_numel(c.in(2)) == cout, "bias has %llu elements, expected %llu",
             static_cast<ull>(value_numel(c.in(2))), static_cast<ull>(cout));
  return Error::Ok;
}

/// The output dims of broadcasting `n` operands (null: a scalar) right-aligned; each must
/// broadcast to the output's.
Error check_broadcast(const NodeCheck& c, const BlobValue* const* operands, uint32_t n) {
  const BlobValue& o = c.out();
  for (uint32_t k = 0; k < n; ++k) {
    const BlobValue* v = operands[k];
    if (v == nullptr) continue;
    NODE_CHECK(v->rank <= o.rank, "operand %u has rank %u, above the output's %u", k, v->rank,
               o.rank);
  }
  for (uint32_t i = 0; i < o.rank; ++i) {
    uint64_t want = 1;
    for (uint32_t k = 0; k < n; ++k) {
      const BlobValue* v = operands[k];
      if (v == nullptr || i < o.rank - v->rank) continue;
      const uint64_t d = v->dims[i - (o.rank - v->rank)];
      NODE_CHECK(d == 1 || want == 1 || d == want, "dim %u: %llu and %llu do not broadcast", i,
                 static_cast<ull>(d), static_cast<ull>(want));
      if (d != 1) want = d;
    }
    NODE_CHECK(o.dims[i] == want, "output dim %u is %llu, expected %llu", i,
               static_cast<ull>(o.dims[i]), static_cast<ull>(want));
  }
  return Error::Ok;
}

Error check_where(const NodeCheck& c) {
  NODE_CHECK(is_bool(c.in(0)), "cond must be bool, found %s", dtype_name(c.in(0).dtype));
  NODE_CHECK(c.fl(c.out()) && (!c.has(1) || c.fl(c.in(1))) && (!c.has(2) || c.fl(c.in(2))),
             "a, b and output must be %s", c.float_name());
  for (uint32_t i = 0; i < 2; ++i) {
    NODE_CHECK(!c.has(1 + i) || c.node.fparams[i] == 0, "fparams[%u] set with a tensor operand",
               i);
  }
  const BlobValue* ops[3] = {&c.in(0), c.has(1) ? &c.in(1) : nullptr,
                             c.has(2) ? &c.in(2) : nullptr};
  return check_broadcast(c, ops, 3);
}

Error check_compare(const NodeCheck& c) {
  NODE_CHECK(in_range(c.p(0), 0, kLastCompareOp), "compare op %lld", static_cast<ll>(c.p(0)));
  const BlobValue& a = c.in(0);
  NODE_CHECK(is_bool(c.out()), "output must be bool, found %s", dtype_name(c.out().dtype));
  NODE_CHECK(c.fl(a) || is_int(a) || is_bool(a), "a is %s, expected %s, i64, i32 or bool",
             dtype_name(a.dtype), c.float_name());
  NODE_CHECK(!c.has(1) || c.in(1).dtype == a.dtype, "b is %s, a %s",
             dtype_name(c.in(1).dtype), dtype_name(a.dtype));
  NODE_CHECK(!c.has(1) || c.node.fparams[0] == 0, "fparams[0] set with a tensor b");
  const BlobValue* ops[2] = {&a, c.has(1) ? &c.in(1) : nullptr};
  return check_broadcast(c, ops, 2);
}

Error check_cast(const NodeCheck& c) {
  NODE_CHECK(value_numel(c.in(0)) == value_numel(c.out()),
             "x has %llu elements, the output %llu", static_cast<ull>(value_numel(c.in(0))),
             static_cast<ull>(value_numel(c.out())));
  return Error::Ok;
}

Error check_pad(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(c.fl(x) && c.fl(o), "x and output must be %s", c.float_name());
  NODE_CHECK(x.rank == o.rank && x.rank >= 1, "x rank %u, output rank %u", x.rank, o.rank);
  NODE_CHECK(c.p(0) == 0 || c.p(0) == 1, "pad mode %lld", static_cast<ll>(c.p(0)));
  NODE_CHECK(std::isfinite(c.node.fparams[0]) || c.p(0) == 0, "fill value");
  NODE_CHECK(c.p(0) == 0 || c.node.fparams[0] == 0, "a fill value with reflect padding");
  for (uint32_t d = 0; d < kMaxDims; ++d) {
    const int64_t before = c.p(1 + d);
    if (d >= o.rank) {
      NODE_CHECK(before == 0, "params[%u] = %lld, expected 0", 1 + d, static_cast<ll>(before));
      continue;
    }
    const int64_t in = static_cast<int64_t>(x.dims[d]), out = static_cast<int64_t>(o.dims[d]);
    NODE_CHECK(in_range(before, -in, int64_t{1} << 32), "dim %u: padding %lld before", d,
               static_cast<ll>(before));
    if (c.p(0) == 1) {
      const int64_t after = out - in - before;
      NODE_CHECK(before >= 0 && before < in && after >= 0 && after < in,
                 "dim %u: reflect padding (%lld, %lld) of size %lld", d, static_cast<ll>(before),
                 static_cast<ll>(after), static_cast<ll>(in));
    }
  }
  return Error::Ok;
}

Error check_index_select(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &idx = c.in(1), &o = c.out();
  NODE_CHECK(x.dtype == o.dtype, "x is %s, the output %s", dtype_name(x.dtype),
             dtype_name(o.dtype));
  NODE_CHECK(is_int(idx) && idx.rank == 1, "index must be a 1-D i64 or i32 tensor");
  for (uint32_t i = 0; i < 3; ++i) {
    NODE_CHECK(in_range(c.p(i), 1, int64_t{1} << 40), "params[%u] = %lld out of range", i,
               static_cast<ll>(c.p(i)));
  }
  uint64_t all, want;
  NODE_CHECK(product(static_cast<uint64_t>(c.p(0)), static_cast<uint64_t>(c.p(1)),
                     static_cast<uint64_t>(c.p(2)), &all) &&
                 all == value_numel(x),
             "outer*dim*inner is not x's element count %llu", static_cast<ull>(value_numel(x)));
  NODE_CHECK(product(static_cast<uint64_t>(c.p(0)), idx.dims[0], static_cast<uint64_t>(c.p(2)),
                     &want) &&
                 want == value_numel(o),
             "outer*indices*inner is not the output's element count %llu",
             static_cast<ull>(value_numel(o)));
  return Error::Ok;
}

Error check_row_norm(const NodeCheck& c) {
  NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()), "x and output must be %s", c.float_name());
  NODE_CHECK(c.node.fparams[0] >= 0 && std::isfinite(c.node.fparams[0]), "eps");
  return check_shape_equal(c, c.in(0), c.out(), "output");
}

Error check_group_norm(const NodeCheck& c) {
  TERN_RETURN_IF_ERROR(check_row_norm(c));
  const BlobValue& x = c.in(0);
  NODE_CHECK(x.rank >= 2, "x must be [N, C, *], found rank %u", x.rank);
  NODE_CHECK(in_range(c.p(0), 1, static_cast<int64_t>(kMaxDim)) &&
                 x.dims[1] % static_cast<uint64_t>(c.p(0)) == 0,
             "groups %lld do not divide %llu channels", static_cast<ll>(c.p(0)),
             static_cast<ull>(x.dims[1]));
  for (uint32_t i = 1; i <= 2; ++i) {
    NODE_CHECK(!c.has(i) || (c.fl(c.in(i)) && value_numel(c.in(i)) == x.dims[1]),
               "input %u must be %s [C]", i, c.float_name());
  }
  return Error::Ok;
}

Error check_rms_norm(const NodeCheck& c) {
  TERN_RETURN_IF_ERROR(check_row_norm(c));
  NODE_CHECK(in_range(c.p(0), 1, static_cast<int64_t>(kMaxDim)) &&
                 value_numel(c.in(0)) % static_cast<uint64_t>(c.p(0)) == 0,
             "normalized size %lld does not divide x's %llu elements", static_cast<ll>(c.p(0)),
             static_cast<ull>(value_numel(c.in(0))));
  NODE_CHECK(!c.has(1) || (c.fl(c.in(1)) && value_numel(c.in(1)) == static_cast<uint64_t>(c.p(0))),
             "weight must be %s of %lld elements", c.float_name(), static_cast<ll>(c.p(0)));
  return Error::Ok;
}

Error check_upsample(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(x.rank == 4 && o.rank == 4 && c.fl(x) && c.fl(o), "x and output must be %s 4-D",
             c.float_name());
  NODE_CHECK(x.dims[0] == o.dims[0] && x.dims[1] == o.dims[1], "N, C differ");
  NODE_CHECK(c.p(0) == 0 || c.p(0) == 1, "upsample mode %lld", static_cast<ll>(c.p(0)));
  NODE_CHECK(c.p(1) == 0 || (c.p(1) == 1 && c.p(0) == 1), "align_corners %lld",
             static_cast<ll>(c.p(1)));
  for (uint32_t i = 0; i < 2; ++i) {
    const float s = c.node.fparams[i];
    NODE_CHECK(std::isfinite(s) && s >= 0 && s <= 1e9f, "source step %g", static_cast<double>(s));
  }
  return Error::Ok;
}

Error check_binary(const NodeCheck& c) {
  NODE_CHECK(in_range(c.p(0), 0, kLastBinaryOp), "binary op %lld", static_cast<ll>(c.p(0)));
  const BlobValue& a = c.in(0);
  NODE_CHECK(c.fl(a) && c.fl(c.out()) && (!c.has(1) || c.fl(c.in(1))), "operands must be %s", c.float_name());
  if (!c.has(1)) return check_shape_equal(c, a, c.out(), "output");
  const BlobValue& b = c.in(1);
  const BlobValue& o = c.out();
  const uint32_t r = a.rank > b.rank ? a.rank : b.rank;
  NODE_CHECK(o.rank == r, "output rank %u, expected %u", o.rank, r);
  for (uint32_t i = 0; i < r; ++i) {
    const uint64_t da = i < r - a.rank ? 1 : a.dims[i - (r - a.rank)];
    const uint64_t db = i < r - b.rank ? 1 : b.dims[i - (r - b.rank)];
    NODE_CHECK(da == db || da == 1 || db == 1, "dim %u: %llu and %llu do not broadcast", i,
               static_cast<ull>(da), static_cast<ull>(db));
    NODE_CHECK(o.dims[i] == (da > db ? da : db), "output dim %u is %llu, expected %llu", i,
               static_cast<ull>(o.dims[i]), static_cast<ull>(da > db ? da : db));
  }
  return Error::Ok;
}

Error check_pool(const NodeCheck& c, NodeOp op) {
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(x.rank == 4 && o.rank == 4 && c.fl(x) && c.fl(o), "x and output must be %s 4-D", c.float_name());
  NODE_CHECK(x.dims[0] == o.dims[0] && x.dims[1] == o.dims[1], "N, C differ");
  if (op == NodeOp::AdaptiveAvgPool2d) return Error::Ok;
  for (uint32_t i = 0; i < 8; ++i) {
    const int64_t lo = (i == 4 || i == 5) ? 0 : 1;
    NODE_CHECK(in_range(c.p(i), lo, kMaxSmallParam), "params[%u] = %lld out of range", i,
               static_cast<ll>(c.p(i)));
  }
  for (int a = 0; a < 2; ++a) {
    const int64_t k = c.p(a), s = c.p(2 + a), pad = c.p(4 + a), d = c.p(6 + a);
    NODE_CHECK(pad <= k / 2, "padding %lld above half the window %lld", static_cast<ll>(pad),
               static_cast<ll>(k));
    const int64_t in = static_cast<int64_t>(x.dims[2 + a]);
    const int64_t span = in + 2 * pad - d * (k - 1) - 1;
    NODE_CHECK(span >= 0, "window larger than the padded input");
    const int64_t floor_out = span / s + 1;
    int64_t ceil_out = (span + s - 1) / s + 1;
    if ((ceil_out - 1) * s >= in + pad) --ceil_out;
    const int64_t got = static_cast<int64_t>(o.dims[2 + a]);
    NODE_CHECK(got == floor_out || got == ceil_out, "output dim %d is %lld, expected %lld or %lld",
               2 + a, static_cast<ll>(got), static_cast<ll>(floor_out), static_cast<ll>(ceil_out));
  }
  if (op == NodeOp::AvgPool2d) {
    NODE_CHECK(c.p(6) == 1 && c.p(7) == 1, "average pooling with dilation");
    NODE_CHECK(c.p(8) == 0 || c.p(8) == 1, "count_include_pad %lld", static_cast<ll>(c.p(8)));
    NODE_CHECK(in_range(c.p(9), 0, kMaxSmallParam), "divisor override %lld",
               static_cast<ll>(c.p(9)));
  }
  return Error::Ok;
}

Error check_strided_copy(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(x.dtype == o.dtype, "x is %s, the output %s", dtype_name(x.dtype),
             dtype_name(o.dtype));
  NODE_CHECK(in_range(c.p(0), 0, int64_t{1} << 40), "offset %lld out of range",
             static_cast<ll>(c.p(0)));
  // The lowest and highest elements read: the offset plus each dim's last step, backwards for
  // a negative stride (flip). dims < 2^40 and |stride| <= 2^40: each term fits in 2^80 only
  // as a checked product.
  uint64_t first = static_cast<uint64_t>(c.p(0)), last = first;
  for (uint32_t d = 0; d < o.rank; ++d) {
    const int64_t s = c.p(1 + d);
    NODE_CHECK(in_range(s, -(int64_t{1} << 40), int64_t{1} << 40), "stride %u = %lld out of range",
               d, static_cast<ll>(s));
    uint64_t span;
    const uint64_t magnitude = static_cast<uint64_t>(s < 0 ? -s : s);
    NODE_CHECK(checked_mul(o.dims[d] - 1, magnitude, &span), "strides overflow");
    if (s < 0) {
      NODE_CHECK(span <= first, "reads before x's first element (stride %u = %lld)", d,
                 static_cast<ll>(s));
      first -= span;
    } else {
      NODE_CHECK(checked_add(last, span, &last), "strides overflow");
    }
  }
  for (uint32_t i = 1 + o.rank; i < kNodeIntParams; ++i) {
    NODE_CHECK(c.p(i) == 0, "params[%u] = %lld, expected 0", i, static_cast<ll>(c.p(i)));
  }
  NODE_CHECK(last < value_numel(x), "reads element %llu of x, which has %llu",
             static_cast<ull>(last), static_cast<ull>(value_numel(x)));
  return Error::Ok;
}

Error check_concat(const NodeCheck& c) {
  const BlobValue& o = c.out();
  NODE_CHECK(in_range(c.p(0), 0, static_cast<int64_t>(o.rank) - 1), "dim %lld for rank %u",
             static_cast<ll>(c.p(0)), o.rank);
  const uint32_t dim = static_cast<uint32_t>(c.p(0));
  uint64_t total = 0;
  for (uint32_t i = 0; i < c.node.num_inputs; ++i) {
    const BlobValue& x = c.in(i);
    NODE_CHECK(x.dtype == o.dtype && x.rank == o.rank,
               "part %u: %s of rank %u, expected the output's %s of rank %u", i,
               dtype_name(x.dtype), x.rank, dtype_name(o.dtype), o.rank);
    for (uint32_t d = 0; d < o.rank; ++d) {
      NODE_CHECK(d == dim || x.dims[d] == o.dims[d], "part %u: dim %u is %llu, expected %llu", i,
                 d, static_cast<ull>(x.dims[d]), static_cast<ull>(o.dims[d]));
    }
    total += x.dims[dim];
  }
  NODE_CHECK(total == o.dims[dim], "parts sum to %llu along dim %u, output has %llu",
             static_cast<ull>(total), dim, static_cast<ull>(o.dims[dim]));
  return Error::Ok;
}

Error check_attention(const NodeCheck& c) {
  for (uint32_t i = 0; i < 5; ++i) {
    NODE_CHECK(in_range(c.p(i), 1, static_cast<int64_t>(kMaxDim)), "params[%u] = %lld out of range", i,
               static_cast<ll>(c.p(i)));
  }
  const uint64_t b = static_cast<uint64_t>(c.p(0)), l = static_cast<uint64_t>(c.p(1));
  const uint64_t s = static_cast<uint64_t>(c.p(2)), e = static_cast<uint64_t>(c.p(3));
  const uint64_t ev = static_cast<uint64_t>(c.p(4));
  NODE_CHECK(c.fl(c.in(0)) && c.fl(c.in(1)) && c.fl(c.in(2)) && c.fl(c.out()), "q, k, v, out must be %s", c.float_name());
  uint64_t nq, nk, nv, no, scores;
  NODE_CHECK(product(b, l, e, &nq) && product(b, s, e, &nk) && product(b, s, ev, &nv) &&
                 product(b, l, ev, &no) && product(b, l, s, &scores),
             "sizes overflow");
  NODE_CHECK(value_numel(c.in(0)) == nq && value_numel(c.in(1)) == nk &&
                 value_numel(c.in(2)) == nv && value_numel(c.out()) == no,
             "q, k, v or output element counts disagree with batch %llu, L %llu, S %llu, E %llu, "
             "Ev %llu",
             static_cast<ull>(b), static_cast<ull>(l), static_cast<ull>(s), static_cast<ull>(e),
             static_cast<ull>(ev));
  NODE_CHECK(c.p(5) == 0 || c.p(5) == 1, "causal flag %lld", static_cast<ll>(c.p(5)));
  NODE_CHECK(in_range(c.p(6), 0, static_cast<int64_t>(MaskKind::Additive)), "mask kind %lld",
             static_cast<ll>(c.p(6)));
  NODE_CHECK(in_range(c.p(7), 1, c.p(0)) && b % static_cast<uint64_t>(c.p(7)) == 0,
             "inner batch %lld does not divide batch %llu", static_cast<ll>(c.p(7)),
             static_cast<ull>(b));
  NODE_CHECK(scores <= c.h.workspace_bytes / 4, "needs %llu workspace bytes, the blob has %llu",
             static_cast<ull>(scores * 4), static_cast<ull>(c.h.workspace_bytes));
  NODE_CHECK(std::isfinite(c.node.fparams[0]), "scale is not finite");
  const bool masked = c.p(6) != 0;
  NODE_CHECK(masked == c.has(3), "mask kind %lld but mask input %s", static_cast<ll>(c.p(6)),
             c.has(3) ? "present" : "absent");
  if (!masked) {
    for (uint32_t i = 8; i < 12; ++i) NODE_CHECK(c.p(i) == 0, "mask stride without a mask");
    return Error::Ok;
  }
  NODE_CHECK(c.p(5) == 0, "a mask with causal attention");
  const BlobValue& m = c.in(3);
  const uint32_t want = c.p(6) == static_cast<int64_t>(MaskKind::Bool)
                            ? static_cast<uint32_t>(ValueDType::Bool)
                            : compute_storage(c.h.compute_dtype);
  NODE_CHECK(m.dtype == want, "mask dtype %u, expected %u", m.dtype, want);
  const uint64_t extent[4] = {b / static_cast<uint64_t>(c.p(7)), static_cast<uint64_t>(c.p(7)), l, s};
  uint64_t last = 0;
  for (uint32_t d = 0; d < 4; ++d) {
    const int64_t st = c.p(8 + d);
    NODE_CHECK(in_range(st, 0, int64_t{1} << 40), "mask stride %u = %lld", d, static_cast<ll>(st));
    uint64_t span;
    NODE_CHECK(checked_mul(extent[d] - 1, static_cast<uint64_t>(st), &span) &&
                   checked_add(last, span, &last),
               "mask strides overflow");
  }
  NODE_CHECK(last < value_numel(m), "reads mask element %llu of %llu", static_cast<ull>(last),
             static_cast<ull>(value_numel(m)));
  return Error::Ok;
}

/// Input `slot` is a quantized weight [rows, cols] whose bytes are the QuantLayout of the
/// scheme in params[kQFormat..kQBlockCols] (fparams[0] finite).
Error check_quant_weight(const NodeCheck& c, uint32_t slot, uint64_t rows, uint64_t cols) {
  const BlobValue& w = c.in(slot);
  char dw[128];
  dims_str(w, dw, sizeof(dw));
  NODE_CHECK(is_quant_dtype(w.dtype) && w.rank == 2 && w.dims[0] == rows && w.dims[1] == cols,
             "input %u is a %s value %s, expected a quantized weight [%llu, %llu]", slot,
             dtype_name(w.dtype), dw, static_cast<ull>(rows), static_cast<ull>(cols));
  const int64_t format = c.p(kQFormat);
  const int64_t want_format =
      w.dtype == static_cast<uint32_t>(ValueDType::Fp8E4M3)   ? static_cast<int64_t>(quant::QuantFormat::Fp8E4M3)
      : w.dtype == static_cast<uint32_t>(ValueDType::Fp8E5M2) ? static_cast<int64_t>(quant::QuantFormat::Fp8E5M2)
                                                              : -1;
  NODE_CHECK(want_format >= 0 ? format == want_format
                              : (format == static_cast<int64_t>(quant::QuantFormat::Nf4) ||
                                 format == static_cast<int64_t>(quant::QuantFormat::Nf4DoubleQuant)),
             "format %lld does not fit the weight's dtype %s", static_cast<ll>(format),
             dtype_name(w.dtype));
  QuantDecode q;
  quant::QuantLayout l;
  NODE_CHECK(make_quant_decode(c.node.params, rows, cols, c.node.fparams[0], &q, &l),
             "quantized weight scheme format %lld, block %lld, dq block %lld, granularity %lld, "
             "tile %lldx%lld: expected NF4 a power-of-two block in [32, 4096] (dq block >= 1 "
             "with double quantization, else 0) and no granularity or tile; FP8 no blocks, "
             "granularity 0..2, a tile only for granularity 2",
             static_cast<ll>(format), static_cast<ll>(c.p(kQBlockSize)),
             static_cast<ll>(c.p(kQDqBlockSize)), static_cast<ll>(c.p(kQGranularity)),
             static_cast<ll>(c.p(kQBlockRows)), static_cast<ll>(c.p(kQBlockCols)));
  NODE_CHECK(w.bytes == 4 * l.total_words,
             "quantized weight (value %u) of %llu bytes, the scheme lays out %llu (%llu blocks "
             "or scales)", c.node.inputs[slot], static_cast<ull>(w.bytes),
             static_cast<ull>(4 * l.total_words), static_cast<ull>(l.blocks));
  NODE_CHECK(std::isfinite(c.node.fparams[0]) &&
                 (format == static_cast<int64_t>(quant::QuantFormat::Nf4DoubleQuant) ||
                  c.node.fparams[0] == 0.0f),
             "double quantization offset %g, expected a finite value (0 without double "
             "quantization)", static_cast<double>(c.node.fparams[0]));
  return Error::Ok;
}

Error check_quant_linear(const NodeCheck& c) {
  const int64_t m = c.p(0), n = c.p(1), k = c.p(2);
  NODE_CHECK(in_range(m, 1, int64_t{1} << 22) && in_range(n, 1, int64_t{1} << 30) &&
                 in_range(k, 1, int64_t{1} << 30),
             "M, N, K = %lld, %lld, %lld, expected M in 1..2^22, N and K in 1..2^30",
             static_cast<ll>(m), static_cast<ll>(n), static_cast<ll>(k));
  TERN_RETURN_IF_ERROR(check_quant_weight(c, 1, static_cast<uint64_t>(n), static_cast<uint64_t>(k)));
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(c.fl(x) && c.fl(o), "x and the output must be %s", c.float_name());
  NODE_CHECK(x.rank >= 1 && x.dims[x.rank - 1] == static_cast<uint64_t>(k) &&
                 value_numel(x) == static_cast<uint64_t>(m * k),
             "x is not [.., K] with M rows");
  NODE_CHECK(o.rank == x.rank && o.dims[o.rank - 1] == static_cast<uint64_t>(n) &&
                 std::memcmp(o.dims, x.dims, (x.rank - 1) * sizeof(uint64_t)) == 0,
             "the output is not x's dims with N last");
  if (c.has(2)) {
    const BlobValue& b = c.in(2);
    NODE_CHECK(c.fl(b) && b.rank == 1 && b.dims[0] == static_cast<uint64_t>(n),
               "bias must be %s [N]", c.float_name());
  }
  return Error::Ok;
}

Error check_quant_embedding(const NodeCheck& c) {
  const int64_t v = c.p(0), d = c.p(1), count = c.p(2);
  const BlobValue &idx = c.in(1), &o = c.out();
  NODE_CHECK(in_range(v, 1, int64_t{1} << 30) && in_range(d, 1, int64_t{1} << 30) &&
                 in_range(count, 1, static_cast<int64_t>(kMaxDim)),
             "V, D, count = %lld, %lld, %lld out of range", static_cast<ll>(v),
             static_cast<ll>(d), static_cast<ll>(count));
  TERN_RETURN_IF_ERROR(check_quant_weight(c, 0, static_cast<uint64_t>(v), static_cast<uint64_t>(d)));
  NODE_CHECK(idx.dtype == static_cast<uint32_t>(ValueDType::I64) ||
                 idx.dtype == static_cast<uint32_t>(ValueDType::I32),
             "indices must be i64 or i32");
  NODE_CHECK(value_numel(idx) == static_cast<uint64_t>(count) && idx.rank + 1 <= kMaxDims,
             "count %lld is not the indices' element count %llu", static_cast<ll>(count),
             static_cast<ull>(value_numel(idx)));
  NODE_CHECK(c.fl(o) && o.rank == idx.rank + 1 && o.dims[idx.rank] == static_cast<uint64_t>(d) &&
                 std::memcmp(o.dims, idx.dims, idx.rank * sizeof(uint64_t)) == 0,
             "the output is not %s [indices' dims, D]", c.float_name());
  return Error::Ok;
}

/// The group ends of a grouped product (input 2): i32 / i64 [E], E in 1..65534 (the kernels'
/// grid rows: one per expert and one for the tail).
Error check_group_ends_value(const NodeCheck& c, uint64_t groups) {
  const BlobValue& ends = c.in(2);
  NODE_CHECK(is_int(ends) && ends.rank == 1 && ends.dims[0] == groups,
             "the group ends must be a 1-D i64 or i32 tensor of the %llu experts",
             static_cast<ull>(groups));
  NODE_CHECK(groups >= 1 && groups <= 65534, "%llu experts, expected 1..65534",
             static_cast<ull>(groups));
  return Error::Ok;
}

Error check_grouped_matmul(const NodeCheck& c) {
  const BlobValue &x = c.in(0), &w = c.in(1), &o = c.out();
  NODE_CHECK(c.fl(x) && c.fl(w) && c.fl(o), "x, w and the output must be %s", c.float_name());
  NODE_CHECK(x.rank == 2 && w.rank == 3 && o.rank == 2, "x must be [S, K], w [E, K, N], the "
             "output [S, N]");
  NODE_CHECK(w.dims[1] == x.dims[1] && o.dims[0] == x.dims[0] && o.dims[1] == w.dims[2],
             "w's K or the output's [S, N] disagree with x and w");
  return check_group_ends_value(c, w.dims[0]);
}

Error check_quant_grouped_linear(const NodeCheck& c) {
  const int64_t s = c.p(0), n = c.p(1), k = c.p(2);
  NODE_CHECK(in_range(s, 1, int64_t{1} << 22) && in_range(n, 1, int64_t{1} << 30) &&
                 in_range(k, 1, int64_t{1} << 30),
             "S, N, K = %lld, %lld, %lld, expected S in 1..2^22, N and K in 1..2^30",
             static_cast<ll>(s), static_cast<ll>(n), static_cast<ll>(k));
  const BlobValue& ends = c.in(2);
  const uint64_t groups = ends.rank == 1 ? ends.dims[0] : 0;
  TERN_RETURN_IF_ERROR(check_group_ends_value(c, groups));
  uint64_t rows = 0;
  NODE_CHECK(checked_mul(groups, static_cast<uint64_t>(n), &rows), "E * N overflows");
  TERN_RETURN_IF_ERROR(check_quant_weight(c, 1, rows, static_cast<uint64_t>(k)));
  const BlobValue &x = c.in(0), &o = c.out();
  NODE_CHECK(c.fl(x) && c.fl(o), "x and the output must be %s", c.float_name());
  NODE_CHECK(x.rank == 2 && x.dims[0] == static_cast<uint64_t>(s) &&
                 x.dims[1] == static_cast<uint64_t>(k),
             "x is not [S, K]");
  NODE_CHECK(o.rank == 2 && o.dims[0] == static_cast<uint64_t>(s) &&
                 o.dims[1] == static_cast<uint64_t>(n),
             "the output is not [S, N]");
  return Error::Ok;
}

Error check_op(const NodeCheck& c) {
  const NodeOp op = static_cast<NodeOp>(c.node.op);
  switch (op) {
    case NodeOp::Gemm: return check_gemm(c);
    case NodeOp::Conv2d: return check_conv(c);
    case NodeOp::Binary: return check_binary(c);
    case NodeOp::Unary:
      NODE_CHECK(in_range(c.p(0), 0, kLastUnaryOp), "unary op %lld", static_cast<ll>(c.p(0)));
      NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()), "operands must be %s", c.float_name());
      if (c.p(0) != static_cast<int64_t>(UnaryOp::Clamp) &&
          c.p(0) != static_cast<int64_t>(UnaryOp::PowScalar)) {
        NODE_CHECK(c.node.fparams[0] == 0 && c.node.fparams[1] == 0, "fparams set for op %lld",
                   static_cast<ll>(c.p(0)));
      }
      return check_shape_equal(c, c.in(0), c.out(), "output");
    case NodeOp::Softmax:
      NODE_CHECK(c.p(0) == 0 || c.p(0) == 1, "softmax kind %lld", static_cast<ll>(c.p(0)));
      NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()) && c.in(0).rank >= 1, "x must be %s, rank >= 1", c.float_name());
      return check_shape_equal(c, c.in(0), c.out(), "output");
    case NodeOp::LayerNorm: {
      NODE_CHECK(in_range(c.p(0), 1, static_cast<int64_t>(kMaxDim)), "normalized size %lld",
                 static_cast<ll>(c.p(0)));
      const uint64_t inner = static_cast<uint64_t>(c.p(0));
      NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()) && value_numel(c.in(0)) % inner == 0,
                 "x must be %s with a multiple of %llu elements", c.float_name(),
                 static_cast<ull>(inner));
      for (uint32_t i = 1; i <= 2; ++i) {
        NODE_CHECK(!c.has(i) || (c.fl(c.in(i)) && value_numel(c.in(i)) == inner),
                   "input %u must be %s of %llu elements", i, c.float_name(),
                   static_cast<ull>(inner));
      }
      NODE_CHECK(c.node.fparams[0] >= 0 && std::isfinite(c.node.fparams[0]), "eps");
      return check_shape_equal(c, c.in(0), c.out(), "output");
    }
    case NodeOp::BatchNorm: {
      NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()) && c.in(0).rank >= 2, "x must be %s, rank >= 2", c.float_name());
      for (uint32_t i = 1; i <= 4; ++i) {
        NODE_CHECK(!c.has(i) || (c.fl(c.in(i)) && value_numel(c.in(i)) == c.in(0).dims[1]),
                   "input %u must be %s [C]", i, c.float_name());
      }
      NODE_CHECK(c.node.fparams[0] >= 0 && std::isfinite(c.node.fparams[0]), "eps");
      return check_shape_equal(c, c.in(0), c.out(), "output");
    }
    case NodeOp::MaxPool2d:
    case NodeOp::AvgPool2d:
    case NodeOp::AdaptiveAvgPool2d:
      return check_pool(c, op);
    case NodeOp::Reduce: {
      for (uint32_t i = 0; i < 3; ++i) {
        NODE_CHECK(in_range(c.p(i), 1, int64_t{1} << 40), "params[%u] = %lld out of range", i,
                   static_cast<ll>(c.p(i)));
      }
      NODE_CHECK(c.p(3) == 0 || c.p(3) == 1, "reduce kind %lld", static_cast<ll>(c.p(3)));
      uint64_t all, kept;
      NODE_CHECK(product(static_cast<uint64_t>(c.p(0)), static_cast<uint64_t>(c.p(1)),
                         static_cast<uint64_t>(c.p(2)), &all) &&
                     all == value_numel(c.in(0)),
                 "outer*reduce*inner is not x's element count %llu",
                 static_cast<ull>(value_numel(c.in(0))));
      NODE_CHECK(product(static_cast<uint64_t>(c.p(0)), static_cast<uint64_t>(c.p(2)), 1, &kept) &&
                     kept == value_numel(c.out()),
                 "outer*inner is not the output's element count %llu",
                 static_cast<ull>(value_numel(c.out())));
      NODE_CHECK(c.fl(c.in(0)) && c.fl(c.out()), "operands must be %s", c.float_name());
      return Error::Ok;
    }
    case NodeOp::StridedCopy: return check_strided_copy(c);
    case NodeOp::Concat: return check_concat(c);
    case NodeOp::Embedding: {
      const BlobValue &w = c.in(0), &idx = c.in(1), &o = c.out();
      NODE_CHECK(c.fl(w) && w.rank == 2 && c.fl(o), "weight must be %s [V, D]", c.float_name());
      NODE_CHECK(idx.dtype == static_cast<uint32_t>(ValueDType::I64) ||
                     idx.dtype == static_cast<uint32_t>(ValueDType::I32),
                 "indices must be i64 or i32");
      NODE_CHECK(o.rank == idx.rank + 1 && o.dims[idx.rank] == w.dims[1] &&
                     std::memcmp(o.dims, idx.dims, idx.rank * sizeof(uint64_t)) == 0,
                 "output dims are not the indices' dims and D");
      return Error::Ok;
    }
    case NodeOp::Attention: return check_attention(c);
    case NodeOp::GroupNorm: return check_group_norm(c);
    case NodeOp::RmsNorm: return check_rms_norm(c);
    case NodeOp::Upsample2d: return check_upsample(c);
    case NodeOp::Pad: return check_pad(c);
    case NodeOp::ConvTranspose2d: return check_conv_transpose(c);
    case NodeOp::Where: return check_where(c);
    case NodeOp::Compare: return check_compare(c);
    case NodeOp::Cast: return check_cast(c);
    case NodeOp::IndexSelect: return check_index_select(c);
    case NodeOp::QuantLinear: return check_quant_linear(c);
    case NodeOp::QuantEmbedding: return check_quant_embedding(c);
    case NodeOp::GroupedMatmul: return check_grouped_matmul(c);
    case NodeOp::QuantGroupedLinear: return check_quant_grouped_linear(c);
  }
  BLOB_FAIL("cuda blob: node %u: op %u", c.n, c.node.op);
}

Error check_header(const BlobHeader& h, size_t size) {
  BLOB_CHECK(h.header_size == sizeof(BlobHeader), "cuda blob: header_size %u, expected %zu",
             h.header_size, sizeof(BlobHeader));
  BLOB_CHECK(h.value_record_size == sizeof(BlobValue),
             "cuda blob: value_record_size %u, expected %zu", h.value_record_size,
             sizeof(BlobValue));
  BLOB_CHECK(h.node_record_size == sizeof(BlobNode), "cuda blob: node_record_size %u, expected %zu",
             h.node_record_size, sizeof(BlobNode));
  BLOB_CHECK(h.num_values >= 1 && h.num_values <= kMaxValues,
             "cuda blob: num_values %u, expected 1..%u", h.num_values, kMaxValues);
  BLOB_CHECK(h.num_nodes >= 1 && h.num_nodes <= kMaxNodes, "cuda blob: num_nodes %u, expected 1..%u",
             h.num_nodes, kMaxNodes);
  BLOB_CHECK(h.num_args <= kMaxArgs, "cuda blob: num_args %u, expected at most %u", h.num_args,
             kMaxArgs);
  BLOB_CHECK(h.min_compute_capability >= 10 && h.min_compute_capability <= 1000,
             "cuda blob: min_compute_capability %u, expected 10..1000", h.min_compute_capability);
  const uint64_t sizes[3] = {h.arena_bytes, h.weights_bytes, h.workspace_bytes};
  const char* names[3] = {"arena_bytes", "weights_bytes", "workspace_bytes"};
  for (int i = 0; i < 3; ++i) {
    BLOB_CHECK(sizes[i] <= kMaxBufferBytes && sizes[i] % kDeviceAlignment == 0,
               "cuda blob: %s %llu, expected a multiple of %llu up to 2^40", names[i],
               static_cast<ull>(sizes[i]), static_cast<ull>(kDeviceAlignment));
  }
  const uint64_t want = sizeof(BlobHeader) + uint64_t{h.num_values} * sizeof(BlobValue) +
                        uint64_t{h.num_nodes} * sizeof(BlobNode);
  BLOB_CHECK(h.blob_bytes == want, "cuda blob: blob_bytes %llu, the tables give %llu",
             static_cast<ull>(h.blob_bytes), static_cast<ull>(want));
  BLOB_CHECK(size == want, "cuda blob: %zu bytes, the header describes %llu", size,
             static_cast<ull>(want));
  BLOB_CHECK(h.compute_dtype <= kLastComputeDType,
             "cuda blob: compute_dtype %u, expected 0 (f32), 1 (f16) or 2 (bf16)",
             h.compute_dtype);
  return Error::Ok;
}

Error check_value(const BlobHeader& h, const BlobValue* values, uint32_t i, uint8_t* arg_used) {
  const BlobValue& v = values[i];
  BLOB_CHECK(v.kind <= kLastValueKind, "cuda blob: value %u: kind %u, expected 0..3", i, v.kind);
  const bool quant = is_quant_dtype(v.dtype);
  const uint64_t elem = value_dtype_bytes(v.dtype);
  BLOB_CHECK(elem != 0 || quant,
             "cuda blob: value %u: dtype %u, expected 0 (f32), 1 (f16), 2 (bf16), 3 (i64), "
             "4 (i32), 8 (bool), 9 (nf4), 10 (fp8_e4m3), 11 (fp8_e5m2)", i, v.dtype);
  // A quantized weight: a constant [rows, cols] of at most 2^30 elements in an f32 blob; its
  // bytes are its QuantLayout buffer, checked by each node that reads it.
  BLOB_CHECK(!quant || (v.kind == static_cast<uint32_t>(ValueKind::Constant) && v.rank == 2 &&
                        h.compute_dtype == static_cast<uint32_t>(ComputeDType::F32) &&
                        v.dims[0] >= 1 && v.dims[1] >= 1 &&
                        v.dims[0] <= quant::kMaxQuantElements &&
                        v.dims[1] <= quant::kMaxQuantElements &&
                        v.dims[0] * v.dims[1] <= quant::kMaxQuantElements),
             "cuda blob: value %u (%s): a quantized weight must be a constant of rank 2 with at "
             "most 2^30 elements in an f32 blob (rank %u, compute dtype %u)",
             i, kind_name(v.kind), v.rank, h.compute_dtype);
  const bool half = v.dtype == static_cast<uint32_t>(ValueDType::F16) ||
                    v.dtype == static_cast<uint32_t>(ValueDType::BF16);
  // 16-bit values only in a blob of that compute dtype, and never as the delegate's inputs or
  // outputs (tern's float tensors are f32; constants are converted at prepare).
  BLOB_CHECK(!half || (v.dtype == compute_storage(h.compute_dtype) &&
                       (v.kind == static_cast<uint32_t>(ValueKind::Internal) ||
                        v.kind == static_cast<uint32_t>(ValueKind::Constant))),
             "cuda blob: value %u (%s): dtype %s in a blob of compute dtype %s", i,
             kind_name(v.kind), dtype_name(v.dtype),
             dtype_name(compute_storage(h.compute_dtype)));
  BLOB_CHECK(v.rank <= kMaxDims, "cuda blob: value %u: rank %u, expected at most %u", i, v.rank,
             kMaxDims);
  BLOB_CHECK(v.reserved == 0, "cuda blob: value %u: reserved field %u, expected 0", i, v.reserved);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < kMaxDims; ++d) {
    if (d < v.rank) {
      BLOB_CHECK(v.dims[d] >= 1 && v.dims[d] <= kMaxDim,
                 "cuda blob: value %u: dim %u is %llu, expected 1..2^31", i, d,
                 static_cast<ull>(v.dims[d]));
      BLOB_CHECK(checked_mul(numel, v.dims[d], &numel) && numel <= kMaxBufferBytes,
                 "cuda blob: value %u: element count overflows", i);
    } else {
      BLOB_CHECK(v.dims[d] == 0, "cuda blob: value %u: unused dim %u is %llu, expected 0", i, d,
                 static_cast<ull>(v.dims[d]));
    }
  }
  if (quant) {
    const uint64_t codes = v.dtype == static_cast<uint32_t>(ValueDType::Nf4) ? (numel + 1) / 2 : numel;
    BLOB_CHECK(v.bytes > codes && v.bytes <= kMaxBufferBytes && v.bytes % 4 == 0,
               "cuda blob: value %u (%s): bytes %llu, expected a multiple of 4 above its %llu "
               "bytes of codes", i, dtype_name(v.dtype), static_cast<ull>(v.bytes),
               static_cast<ull>(codes));
  } else {
    BLOB_CHECK(v.bytes == numel * elem, "cuda blob: value %u: bytes %llu, expected %llu", i,
               static_cast<ull>(v.bytes), static_cast<ull>(numel * elem));
  }
  const bool internal = v.kind == static_cast<uint32_t>(ValueKind::Internal);
  if (internal) {
    BLOB_CHECK(v.arg == kNoValue, "cuda blob: value %u (internal): arg %u, expected none", i, v.arg);
  } else {
    BLOB_CHECK(v.arg < h.num_args, "cuda blob: value %u (%s): arg %u, the call has %u", i,
               kind_name(v.kind), v.arg, h.num_args);
    BLOB_CHECK(!arg_used[v.arg], "cuda blob: value %u: argument %u bound twice", i, v.arg);
    arg_used[v.arg] = 1;
  }
  BLOB_CHECK(v.offset % kDeviceAlignment == 0,
             "cuda blob: value %u: offset %llu is not a multiple of %llu", i,
             static_cast<ull>(v.offset), static_cast<ull>(kDeviceAlignment));
  const bool constant = v.kind == static_cast<uint32_t>(ValueKind::Constant);
  const uint64_t limit = constant ? h.weights_bytes : h.arena_bytes;
  BLOB_CHECK(range_within(v.offset, v.bytes, limit),
             "cuda blob: value %u (%s): bytes [%llu, +%llu) past the %s's %llu", i,
             kind_name(v.kind), static_cast<ull>(v.offset), static_cast<ull>(v.bytes),
             constant ? "weights buffer" : "arena", static_cast<ull>(limit));
  if (v.alias_of != kNoValue) {
    BLOB_CHECK(v.alias_of < h.num_values && v.alias_of != i,
               "cuda blob: value %u: alias_of %u out of range", i, v.alias_of);
    const BlobValue& t = values[v.alias_of];
    BLOB_CHECK(internal || v.kind == static_cast<uint32_t>(ValueKind::ExternalOutput),
               "cuda blob: value %u (%s) is an alias", i, kind_name(v.kind));
    BLOB_CHECK(t.kind != static_cast<uint32_t>(ValueKind::Constant) && t.alias_of == kNoValue &&
                   t.kind <= kLastValueKind,
               "cuda blob: value %u aliases value %u, a constant or an alias", i, v.alias_of);
    BLOB_CHECK(t.bytes == v.bytes && t.offset == v.offset && t.dtype == v.dtype,
               "cuda blob: value %u aliases value %u of another size, dtype or offset", i,
               v.alias_of);
  }
  return Error::Ok;
}

}  // namespace

uint64_t value_numel(const BlobValue& v) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < v.rank && d < kMaxDims; ++d) n *= v.dims[d];
  return n;
}

const char* node_op_name(uint32_t op) {
  switch (static_cast<NodeOp>(op)) {
    case NodeOp::Gemm: return "gemm";
    case NodeOp::Conv2d: return "conv2d";
    case NodeOp::Binary: return "binary";
    case NodeOp::Unary: return "unary";
    case NodeOp::Softmax: return "softmax";
    case NodeOp::LayerNorm: return "layer_norm";
    case NodeOp::BatchNorm: return "batch_norm";
    case NodeOp::MaxPool2d: return "max_pool2d";
    case NodeOp::AvgPool2d: return "avg_pool2d";
    case NodeOp::AdaptiveAvgPool2d: return "adaptive_avg_pool2d";
    case NodeOp::Reduce: return "reduce";
    case NodeOp::StridedCopy: return "strided_copy";
    case NodeOp::Concat: return "concat";
    case NodeOp::Embedding: return "embedding";
    case NodeOp::Attention: return "attention";
    case NodeOp::GroupNorm: return "group_norm";
    case NodeOp::RmsNorm: return "rms_norm";
    case NodeOp::Upsample2d: return "upsample2d";
    case NodeOp::Pad: return "pad";
    case NodeOp::ConvTranspose2d: return "conv_transpose2d";
    case NodeOp::Where: return "where";
    case NodeOp::Compare: return "compare";
    case NodeOp::Cast: return "cast";
    case NodeOp::IndexSelect: return "index_select";
    case NodeOp::QuantLinear: return "quant_linear";
    case NodeOp::QuantEmbedding: return "quant_embedding";
    case NodeOp::GroupedMatmul: return "grouped_matmul";
    case NodeOp::QuantGroupedLinear: return "quant_grouped_linear";
  }
  return "?";
}

void free_blob_plan(BlobPlan* plan) {
  if (plan == nullptr) return;
  std::free(plan->values);
  std::free(plan->nodes);
  plan->values = nullptr;
  plan->nodes = nullptr;
}

Error parse_blob(Span<const uint8_t> blob, BlobPlan* plan) {
  BLOB_CHECK(plan != nullptr, "cuda blob: no plan to fill");
  free_blob_plan(plan);
  BLOB_CHECK(blob.data() != nullptr && blob.size() >= sizeof(BlobHeader),
             "cuda blob: %zu bytes, shorter than its %zu-byte header", blob.size(),
             sizeof(BlobHeader));
  BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  BLOB_CHECK(std::memcmp(h.magic, kBlobMagic, 4) == 0,
             "cuda blob: magic %02x %02x %02x %02x, expected 'TCUD'",
             static_cast<unsigned char>(h.magic[0]), static_cast<unsigned char>(h.magic[1]),
             static_cast<unsigned char>(h.magic[2]), static_cast<unsigned char>(h.magic[3]));
  if (h.version != kBlobVersion) {
    return set_error_message(Error::DelegateInvalidCompatibility,
                             "cuda blob: version %u, this runtime reads version %u", h.version,
                             kBlobVersion);
  }
  TERN_RETURN_IF_ERROR(check_header(h, blob.size()));

  BlobValue* values = static_cast<BlobValue*>(std::malloc(h.num_values * sizeof(BlobValue)));
  BlobNode* nodes = static_cast<BlobNode*>(std::malloc(h.num_nodes * sizeof(BlobNode)));
  uint8_t* arg_used = static_cast<uint8_t*>(std::calloc(h.num_args + 1, 1));
  uint8_t* made = static_cast<uint8_t*>(std::calloc(h.num_values, 1));
  auto release = [&](Error e) {
    std::free(values);
    std::free(nodes);
    std::free(arg_used);
    std::free(made);
    return e;
  };
  if (values == nullptr || nodes == nullptr || arg_used == nullptr || made == nullptr) {
    return release(set_error_message(Error::MemoryAllocationFailed,
                                     "cuda blob: cannot copy %u values and %u nodes",
                                     h.num_values, h.num_nodes));
  }
  std::memcpy(values, blob.data() + sizeof(BlobHeader), h.num_values * sizeof(BlobValue));
  std::memcpy(nodes, blob.data() + sizeof(BlobHeader) + h.num_values * sizeof(BlobValue),
              h.num_nodes * sizeof(BlobNode));

  for (uint32_t i = 0; i < h.num_values; ++i) {
    const Error e = check_value(h, values, i, arg_used);
    if (e != Error::Ok) return release(e);
    // Inputs and constants are there from the start.
    if (values[i].kind == static_cast<uint32_t>(ValueKind::ExternalInput) ||
        values[i].kind == static_cast<uint32_t>(ValueKind::Constant)) {
      made[i] = 1;
    }
  }
  auto available = [&](uint32_t v) {
    return made[v] != 0 || (values[v].alias_of != kNoValue && made[values[v].alias_of] != 0);
  };
  for (uint32_t n = 0; n < h.num_nodes; ++n) {
    const BlobNode& node = nodes[n];
    const char* name = node_op_name(node.op);
    if (node.op < 1 || node.op > kLastNodeOp) {
      return release(set_error_message(Error::InvalidProgram,
                                       "cuda blob: node %u: op %u, expected 1..%u", n, node.op,
                                       kLastNodeOp));
    }
    const Arity a = arity(static_cast<NodeOp>(node.op));
    if (node.num_inputs < a.min_inputs || node.num_inputs > a.max_inputs || node.reserved != 0) {
      return release(set_error_message(
          Error::InvalidProgram, "cuda blob: node %u (%s): %u inputs, expected %u..%u", n, name,
          node.num_inputs, a.min_inputs, a.max_inputs));
    }
    for (uint32_t s = 0; s < kMaxNodeInputs; ++s) {
      const uint32_t v = node.inputs[s];
      const bool required = s < node.num_inputs && ((a.required >> s) & 1) != 0;
      if (v == kNoValue) {
        if (required) {
          return release(set_error_message(Error::InvalidProgram,
                                           "cuda blob: node %u (%s): input %u is required", n,
                                           name, s));
        }
        continue;
      }
      if (s >= node.num_inputs || v >= h.num_values) {
        return release(set_error_message(
            Error::InvalidProgram, "cuda blob: node %u (%s): input slot %u holds value %u (%u slots, %u values)",
            n, name, s, v, node.num_inputs, h.num_values));
      }
      if (!available(v)) {
        return release(set_error_message(
            Error::InvalidProgram, "cuda blob: node %u (%s): input %u reads value %u before it is made",
            n, name, s, v));
      }
    }
    const uint32_t o = node.output;
    if (o >= h.num_values || made[o] || values[o].alias_of != kNoValue ||
        (values[o].kind != static_cast<uint32_t>(ValueKind::Internal) &&
         values[o].kind != static_cast<uint32_t>(ValueKind::ExternalOutput))) {
      return release(set_error_message(
          Error::InvalidProgram,
          "cuda blob: node %u (%s): output value %u is out of range, already made, an alias, an "
          "input or a constant",
          n, name, o));
    }
    const uint32_t used_ints = node.op == static_cast<uint32_t>(NodeOp::StridedCopy)
                                   ? kNodeIntParams
                                   : a.int_params;
    for (uint32_t i = used_ints; i < kNodeIntParams; ++i) {
      if (node.params[i] != 0) {
        return release(set_error_message(Error::InvalidProgram,
                                         "cuda blob: node %u (%s): params[%u] = %lld, expected 0",
                                         n, name, i, static_cast<ll>(node.params[i])));
      }
    }
    for (uint32_t i = a.float_params; i < kNodeFloatParams; ++i) {
      if (node.fparams[i] != 0.0f) {
        return release(set_error_message(Error::InvalidProgram,
                                         "cuda blob: node %u (%s): fparams[%u] = %g, expected 0",
                                         n, name, i, static_cast<double>(node.fparams[i])));
      }
    }
    const NodeCheck c{h, values, node, n, name};
    const Error e = check_op(c);
    if (e != Error::Ok) return release(e);
    made[o] = 1;
  }
  for (uint32_t i = 0; i < h.num_values; ++i) {
    if (values[i].kind == static_cast<uint32_t>(ValueKind::ExternalOutput) && !available(i)) {
      return release(set_error_message(Error::InvalidProgram,
                                       "cuda blob: value %u (external output) is never made", i));
    }
  }
  std::free(arg_used);
  std::free(made);
  plan->header = h;
  plan->values = values;
  plan->nodes = nodes;
  return Error::Ok;
}

}  // namespace tern::cuda
