// Each op the vulkan backend takes, as blob nodes (params by index: backends/vulkan/README.md).
#include "backends/vulkan/compile/node_lowering.h"

#include "backends/vulkan/compile/quant_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

namespace tern::compiler::vulkan_compile {
namespace {

using vulkan::ElementwiseKind;
using vulkan::NodeOp;
using vulkan::UnaryKind;
using Dims = std::vector<int64_t>;

constexpr float kInf = std::numeric_limits<float>::infinity();

const Value& val(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) throw Unsupported("bad value id");
  return g.values[static_cast<size_t>(id)];
}
int arg(const Node& n, size_t i) {
  if (i >= n.args.size()) throw Unsupported("missing argument " + std::to_string(i));
  return n.args[i];
}
bool has_arg(const Node& n, size_t i) { return i < n.args.size(); }
bool is_none(const Graph& g, int id) { return val(g, id).kind == Value::Kind::None; }
const Dims& shape(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (!v.is_tensor()) throw Unsupported("argument is not a tensor");
  return v.sizes;
}
int64_t int_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind != Value::Kind::Int || v.is_tensor()) throw Unsupported("expected an Int");
  return v.int_value;
}
double num_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind == Value::Kind::Int) return static_cast<double>(v.int_value);
  if (v.kind == Value::Kind::Double) return v.double_value;
  throw Unsupported("expected a number");
}
bool bool_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind != Value::Kind::Bool) throw Unsupported("expected a Bool");
  return v.bool_value;
}
std::vector<int64_t> ints_of(const Graph& g, int id) {
  const Value& v = val(g, id);
  if (v.kind == Value::Kind::Int) return {v.int_value};
  if (v.kind != Value::Kind::IntList) throw Unsupported("expected an IntList");
  return v.ints;
}
int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}
Dims contiguous_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}
int64_t norm_dim(int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) throw Unsupported("dim " + std::to_string(dim) + " out of range");
  return dim < 0 ? dim + r : dim;
}
int out_id(const Node& n, size_t i = 0) {
  if (i >= n.outputs.size()) throw Unsupported("missing output");
  return n.outputs[i];
}

/// Pads dims/strides to 6 on the left (index space of the strided shaders).
void pad6(Dims* dims, Dims* strides) {
  if (dims->size() > 6) throw Unsupported("rank > 6");
  while (dims->size() < 6) {
    dims->insert(dims->begin(), 1);
    strides->insert(strides->begin(), 0);
  }
}

/// Strides of `in` broadcast to `out` (right-aligned), 0 where broadcast.
Dims broadcast_strides(const Dims& in, const Dims& out) {
  if (in.size() > out.size()) throw Unsupported("operand of higher rank than the output");
  const Dims s = contiguous_strides(in);
  Dims r(out.size(), 0);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[off + i]) {
      r[off + i] = in[i] == 1 ? 0 : s[i];
    } else if (in[i] != 1) {
      throw Unsupported("shapes do not broadcast");
    }
  }
  return r;
}

/// One strided copy node: `dims` index space, source strides/offset, destination
/// strides/offset.
void copy_node(BlobBuilder& b, uint32_t src, uint32_t dst, Dims dims, Dims src_strides,
               int64_t src_off, Dims dst_strides, int64_t dst_off) {
  Dims d2 = dims;
  pad6(&dims, &src_strides);
  pad6(&d2, &dst_strides);
  std::vector<int32_t> p(21, 0);
  for (int i = 0; i < 6; ++i) {
    p[1 + i] = param(dims[static_cast<size_t>(i)], "copy dim");
    // A source stride may be negative (flip: read backwards; blob version 7).
    const int64_t ss = src_strides[static_cast<size_t>(i)];
    p[7 + i] = ss < 0 ? -param(-ss, "copy stride") : param(ss, "copy stride");
    p[13 + i] = param(dst_strides[static_cast<size_t>(i)], "copy stride");
  }
  p[19] = param(src_off, "copy offset");
  p[20] = param(dst_off, "copy offset");
  b.node(NodeOp::Copy, {src}, dst, p);
}

// ---- linear algebra ----

struct MatMulShape {
  int64_t batch = 1, m = 1, n = 1, k = 1, a_bs = 0, b_bs = 0;
  bool b_transposed = false;
};

void matmul_node(BlobBuilder& b, uint32_t a, uint32_t w, int bias_id, const Dims& bias_shape,
                 uint32_t out, const MatMulShape& s, float alpha, float beta) {
  std::vector<int32_t> p(11, 0);
  p[0] = param(s.batch, "batch");
  p[1] = param(s.m, "M");
  p[2] = param(s.n, "N");
  p[3] = param(s.k, "K");
  p[4] = param(s.a_bs, "a batch stride");
  p[5] = param(s.b_bs, "b batch stride");
  p[6] = s.b_transposed ? 1 : 0;
  std::vector<uint32_t> inputs{a, w};
  if (bias_id >= 0) {
    // bias broadcast to [batch, M, N]
    const Dims st = broadcast_strides(bias_shape, {s.batch, s.m, s.n});
    p[7] = 1;
    p[8] = param(st[0], "bias stride");
    p[9] = param(st[1], "bias stride");
    p[10] = param(st[2], "bias stride");
    inputs.push_back(b.input(bias_id));
  }
  b.node(NodeOp::MatMul, inputs, out, p, {alpha, beta});
}

/// linear (weight [N, K], transposed) or matmul (b [K, N]) with an nf4/fp8 constant weight:
/// op 14, params [0] M, [1] N, [2] K, [3] has bias, [4] weight transposed, the scheme at 16..
void quant_linear_node(BlobBuilder& b, int x_id, int w_id, int bias_id, int out, int64_t m,
                       int64_t nn, int64_t k, bool transposed) {
  const QuantWeightRef w = quant_weight(b, w_id);
  if (transposed ? (w.rows != nn || w.cols != k) : (w.rows != k || w.cols != nn)) {
    throw Unsupported("quantized weight shape");
  }
  std::vector<int32_t> p{param(m, "M"), param(nn, "N"), param(k, "K"), bias_id >= 0 ? 1 : 0,
                         transposed ? 1 : 0};
  put_quant_params(w, &p);
  std::vector<uint32_t> inputs{b.input(x_id), w.value};
  if (bias_id >= 0) inputs.push_back(b.input(bias_id));
  b.node(NodeOp::QuantLinear, inputs, b.output(out), p, {w.dq_offset});
}

void lower_linear(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  if (is_quantized_tensor(g, arg(n, 1))) {
    const Dims& xs = shape(g, arg(n, 0));
    const Dims& ws = shape(g, arg(n, 1));
    if (xs.empty() || ws.size() != 2 || ws[1] != xs.back()) throw Unsupported("linear shapes");
    const bool bias = has_arg(n, 2) && !is_none(g, arg(n, 2));
    if (bias && shape(g, arg(n, 2)) != Dims{ws[0]}) throw Unsupported("linear bias shape");
    Dims os = xs;
    os.back() = ws[0];
    if (shape(g, out_id(n)) != os) throw Unsupported("linear output shape");
    quant_linear_node(b, arg(n, 0), arg(n, 1), bias ? arg(n, 2) : -1, out_id(n),
                      numel(xs) / xs.back(), ws[0], ws[1], true);
    return;
  }
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& ws = shape(g, arg(n, 1));
  if (xs.empty() || ws.size() != 2 || ws[1] != xs.back()) throw Unsupported("linear shapes");
  MatMulShape s;
  s.k = ws[1];
  s.n = ws[0];
  s.m = numel(xs) / s.k;
  s.b_transposed = true;
  const bool bias = has_arg(n, 2) && !is_none(g, arg(n, 2));
  if (bias && shape(g, arg(n, 2)) != Dims{s.n}) throw Unsupported("linear bias shape");
  const uint32_t x = b.input(arg(n, 0)), w = b.input(arg(n, 1));
  matmul_node(b, x, w, bias ? arg(n, 2) : -1, bias ? Dims{1, 1, s.n} : Dims{}, b.output(out_id(n)),
              s, 1.0f, 1.0f);
}

void lower_addmm(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& as = shape(g, arg(n, 1));
  const Dims& bs = shape(g, arg(n, 2));
  if (as.size() != 2 || bs.size() != 2 || as[1] != bs[0]) throw Unsupported("addmm shapes");
  const double beta = has_arg(n, 3) ? num_of(g, arg(n, 3)) : 1.0;
  const double alpha = has_arg(n, 4) ? num_of(g, arg(n, 4)) : 1.0;
  MatMulShape s;
  s.m = as[0];
  s.k = as[1];
  s.n = bs[1];
  Dims bias_shape = shape(g, arg(n, 0));
  if (bias_shape.size() > 2) throw Unsupported("addmm bias rank");
  bias_shape.insert(bias_shape.begin(), 3 - bias_shape.size(), 1);
  const uint32_t a = b.input(arg(n, 1)), w = b.input(arg(n, 2));
  matmul_node(b, a, w, beta != 0.0 ? arg(n, 0) : -1, bias_shape, b.output(out_id(n)), s,
              static_cast<float>(alpha), static_cast<float>(beta));
}

void lower_matmul(BlobBuilder& b, const Node& n, bool bmm) {
  const Graph& g = b.graph();
  Dims as = shape(g, arg(n, 0)), bs = shape(g, arg(n, 1));
  if (!bmm && is_quantized_tensor(g, arg(n, 1))) {
    // a [..., M, K] @ b [K, N] with b a quantized constant (hand-written graphs: the compiler
    // stores such weights transposed, as linear weights).
    if (as.empty() || bs.size() != 2 || as.back() != bs[0]) throw Unsupported("matmul shapes");
    Dims os = as;
    os.back() = bs[1];
    if (as.size() == 1) os.pop_back();
    if (shape(g, out_id(n)) != os) throw Unsupported("matmul output shape");
    quant_linear_node(b, arg(n, 0), arg(n, 1), -1, out_id(n), numel(as) / as.back(), bs[1], bs[0],
                      false);
    return;
  }
  if (bmm && (as.size() != 3 || bs.size() != 3 || as[0] != bs[0])) throw Unsupported("bmm shapes");
  if (as.empty() || bs.empty()) throw Unsupported("0-d matmul");
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  MatMulShape s;
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k) throw Unsupported("matmul inner dims differ");
  const Dims ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const int64_t na = numel(ab), nb = numel(bb);
  if (ab == bb || nb == 1 || na == 1) {
    s.batch = std::max(na, nb);
    s.a_bs = na == 1 ? 0 : s.m * s.k;
    s.b_bs = nb == 1 ? 0 : s.k * s.n;
  } else {
    throw Unsupported("matmul batch dims broadcast partially");
  }
  if (numel(shape(g, out_id(n))) != s.batch * s.m * s.n) throw Unsupported("matmul output size");
  const uint32_t a = b.input(arg(n, 0)), w = b.input(arg(n, 1));
  matmul_node(b, a, w, -1, {}, b.output(out_id(n)), s, 1.0f, 1.0f);
}

// ---- elementwise ----

void lower_binary(BlobBuilder& b, const Node& n, ElementwiseKind kind) {
  const Graph& g = b.graph();
  if (kind == ElementwiseKind::Div && has_arg(n, 2) && !is_none(g, arg(n, 2))) {
    throw Unsupported("div with a rounding mode");
  }
  double alpha = 1.0;
  if ((kind == ElementwiseKind::Add || kind == ElementwiseKind::Sub) && has_arg(n, 2)) {
    alpha = num_of(g, arg(n, 2));
  }
  const Value& av = val(g, arg(n, 0));
  const Value& bv = val(g, arg(n, 1));
  if (!av.is_tensor()) throw Unsupported("scalar first operand");
  const Dims& os = shape(g, out_id(n));
  Dims dims = os, sa = broadcast_strides(av.sizes, os), sb(os.size(), 0), sc(os.size(), 0);
  std::vector<uint32_t> inputs{b.input(arg(n, 0))};
  float scalar = 0.0f;
  const bool has_b = bv.is_tensor();
  if (has_b) {
    sb = broadcast_strides(bv.sizes, os);
    inputs.push_back(b.input(arg(n, 1)));
  } else {
    scalar = static_cast<float>(num_of(g, arg(n, 1)));
  }
  const uint32_t out = b.output(out_id(n));
  Dims d2 = dims, d3 = dims;
  pad6(&dims, &sa);
  pad6(&d2, &sb);
  pad6(&d3, &sc);
  std::vector<int32_t> p(26, 0);
  p[0] = static_cast<int32_t>(kind);
  p[1] = has_b ? 1 : 0;
  for (int i = 0; i < 6; ++i) {
    p[2 + i] = param(dims[static_cast<size_t>(i)], "dim");
    p[8 + i] = param(sa[static_cast<size_t>(i)], "stride");
    p[14 + i] = param(sb[static_cast<size_t>(i)], "stride");
  }
  b.node(NodeOp::Elementwise, inputs, out, p, {static_cast<float>(alpha), scalar});
}

void lower_where(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Value& cond = val(g, arg(n, 0));
  if (!cond.is_tensor() || !cond.is_constant || cond.dtype != DType::Bool) {
    throw Unsupported("where: the condition must be a bool constant");
  }
  const Dims& os = shape(g, out_id(n));
  const float as_float[2] = {0.0f, 1.0f};
  const uint32_t c = b.input(arg(n, 0), as_float);
  const uint32_t x = b.input(arg(n, 1)), y = b.input(arg(n, 2));
  Dims dims = os, d2 = os, d3 = os;
  Dims sa = broadcast_strides(shape(g, arg(n, 1)), os), sb = broadcast_strides(shape(g, arg(n, 2)), os),
       sc = broadcast_strides(cond.sizes, os);
  pad6(&dims, &sa);
  pad6(&d2, &sb);
  pad6(&d3, &sc);
  std::vector<int32_t> p(26, 0);
  p[0] = static_cast<int32_t>(ElementwiseKind::Where);
  p[1] = 1;
  for (int i = 0; i < 6; ++i) {
    p[2 + i] = param(dims[static_cast<size_t>(i)], "dim");
    p[8 + i] = param(sa[static_cast<size_t>(i)], "stride");
    p[14 + i] = param(sb[static_cast<size_t>(i)], "stride");
    p[20 + i] = param(sc[static_cast<size_t>(i)], "stride");
  }
  b.node(NodeOp::Elementwise, {x, y, c}, b.output(out_id(n)), p, {1.0f, 0.0f});
}

void unary_node(BlobBuilder& b, const Node& n, UnaryKind kind, float lo = 0, float hi = 0) {
  const Dims& xs = shape(b.graph(), arg(n, 0));
  if (shape(b.graph(), out_id(n)) != xs) throw Unsupported("unary output shape");
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Unary, {x}, b.output(out_id(n)),
         {static_cast<int32_t>(kind), param(numel(xs), "numel")}, {lo, hi});
}

void lower_clamp(BlobBuilder& b, const Node& n, bool hardtanh) {
  const Graph& g = b.graph();
  float lo = -kInf, hi = kInf;
  if (hardtanh) {
    lo = has_arg(n, 1) ? static_cast<float>(num_of(g, arg(n, 1))) : -1.0f;
    hi = has_arg(n, 2) ? static_cast<float>(num_of(g, arg(n, 2))) : 1.0f;
  } else {
    if (has_arg(n, 1) && !is_none(g, arg(n, 1))) lo = static_cast<float>(num_of(g, arg(n, 1)));
    if (has_arg(n, 2) && !is_none(g, arg(n, 2))) hi = static_cast<float>(num_of(g, arg(n, 2)));
  }
  unary_node(b, n, UnaryKind::Clamp, lo, hi);
}

void lower_gelu(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  bool tanh_form = false;
  if (has_arg(n, 1) && !is_none(g, arg(n, 1))) {
    const Value& v = val(g, arg(n, 1));
    if (v.kind != Value::Kind::String) throw Unsupported("gelu approximate");
    if (v.string_value == "tanh") {
      tanh_form = true;
    } else if (v.string_value != "none") {
      throw Unsupported("gelu approximate '" + v.string_value + "'");
    }
  }
  unary_node(b, n, tanh_form ? UnaryKind::GeluTanh : UnaryKind::Gelu);
}

void lower_pow(BlobBuilder& b, const Node& n) {
  const Value& e = val(b.graph(), arg(n, 1));
  if (e.is_tensor()) throw Unsupported("pow with a tensor exponent");
  unary_node(b, n, UnaryKind::Pow, static_cast<float>(num_of(b.graph(), arg(n, 1))));
}

void lower_leaky_relu(BlobBuilder& b, const Node& n) {
  const double slope = has_arg(n, 1) ? num_of(b.graph(), arg(n, 1)) : 0.01;
  unary_node(b, n, UnaryKind::LeakyRelu, static_cast<float>(slope));
}

// ---- normalisation ----

void lower_softmax(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (xs.empty()) throw Unsupported("0-d softmax");
  const int64_t d = norm_dim(int_of(g, arg(n, 1)), xs.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= xs[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(d) + 1; i < xs.size(); ++i) inner *= xs[i];
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Softmax, {x}, b.output(out_id(n)),
         {param(outer, "outer"), param(xs[static_cast<size_t>(d)], "n"), param(inner, "inner")});
}

void lower_layer_norm(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const std::vector<int64_t> ns = ints_of(g, arg(n, 1));
  if (ns.empty() || ns.size() > xs.size() || !std::equal(ns.begin(), ns.end(), xs.end() - static_cast<long>(ns.size()))) {
    throw Unsupported("layer_norm normalized_shape");
  }
  const int64_t cols = numel(ns);
  const bool has_w = has_arg(n, 2) && !is_none(g, arg(n, 2));
  const bool has_b = has_arg(n, 3) && !is_none(g, arg(n, 3));
  const double eps = has_arg(n, 4) ? num_of(g, arg(n, 4)) : 1e-5;
  std::vector<uint32_t> inputs{b.input(arg(n, 0))};
  if (has_w) {
    if (numel(shape(g, arg(n, 2))) != cols) throw Unsupported("layer_norm weight");
    inputs.push_back(b.input(arg(n, 2)));
  }
  if (has_b) {
    if (numel(shape(g, arg(n, 3))) != cols) throw Unsupported("layer_norm bias");
    // The shader reads the bias at binding 3: with a bias but no weight, the weight is ones.
    if (!has_w) inputs.push_back(b.constant({cols}, std::vector<float>(static_cast<size_t>(cols), 1.0f)));
    inputs.push_back(b.input(arg(n, 3)));
  }
  b.node(NodeOp::LayerNorm, inputs, b.output(out_id(n)),
         {param(numel(xs) / cols, "rows"), param(cols, "n"), has_w || has_b ? 1 : 0, has_b ? 1 : 0},
         {static_cast<float>(eps)});
}

// group_norm(x [N, C, *], groups, weight [C]?, bias [C]?, eps): in row-major NCHW a group's
// C/G channels are one contiguous row, so the layer_norm shader normalises rows of
// C/G·inner values (no affine there: its weight would be per element of the row); the
// per-channel weight and bias follow as a channel_affine.
void lower_group_norm(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (xs.size() < 2) throw Unsupported("group_norm rank");
  const int64_t groups = int_of(g, arg(n, 1));
  const int64_t c = xs[1];
  if (groups < 1 || c % groups != 0) throw Unsupported("group_norm: channels not divisible by groups");
  const int64_t inner = numel(xs) / (xs[0] * c);
  const bool has_w = !is_none(g, arg(n, 2));
  const bool has_b = !is_none(g, arg(n, 3));
  for (int i : {2, 3}) {
    if (!is_none(g, arg(n, i)) && numel(shape(g, arg(n, i))) != c) throw Unsupported("group_norm weight/bias");
  }
  const double eps = num_of(g, arg(n, 4));
  const uint32_t x = b.input(arg(n, 0));
  const uint32_t normed = has_w || has_b ? b.temp(xs) : b.output(out_id(n));
  b.node(NodeOp::LayerNorm, {x}, normed,
         {param(xs[0] * groups, "rows"), param(c / groups * inner, "n"), 0, 0},
         {static_cast<float>(eps)});
  if (!has_w && !has_b) return;
  const uint32_t scale = has_w ? b.input(arg(n, 2)) : b.constant({c}, std::vector<float>(static_cast<size_t>(c), 1.0f));
  const uint32_t shift = has_b ? b.input(arg(n, 3)) : b.constant({c}, std::vector<float>(static_cast<size_t>(c), 0.0f));
  b.node(NodeOp::ChannelAffine, {normed, scale, shift}, b.output(out_id(n)),
         {param(xs[0], "N"), param(c, "C"), param(inner, "inner")});
}

std::vector<float> constant_floats(const Graph& g, int id, int64_t count, const char* what) {
  const Value& v = val(g, id);
  if (!v.is_tensor() || !v.is_constant || v.dtype != DType::F32 || numel(v.sizes) != count ||
      v.data.size() != static_cast<size_t>(count) * 4) {
    throw Unsupported(std::string("batch_norm ") + what + ": an f32 constant of " +
                      std::to_string(count) + " expected");
  }
  std::vector<float> f(static_cast<size_t>(count));
  std::memcpy(f.data(), v.data.data(), f.size() * 4);
  return f;
}

void lower_batch_norm(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (xs.size() < 2) throw Unsupported("batch_norm rank");
  const int64_t c = xs[1];
  const double eps = num_of(g, arg(n, 5));
  const std::vector<float> mean = constant_floats(g, arg(n, 3), c, "running_mean");
  const std::vector<float> var = constant_floats(g, arg(n, 4), c, "running_var");
  std::vector<float> w(static_cast<size_t>(c), 1.0f), bias(static_cast<size_t>(c), 0.0f);
  if (!is_none(g, arg(n, 1))) w = constant_floats(g, arg(n, 1), c, "weight");
  if (!is_none(g, arg(n, 2))) bias = constant_floats(g, arg(n, 2), c, "bias");
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (size_t i = 0; i < scale.size(); ++i) {
    const double s = static_cast<double>(w[i]) / std::sqrt(static_cast<double>(var[i]) + eps);
    scale[i] = static_cast<float>(s);
    shift[i] = static_cast<float>(bias[i] - mean[i] * s);
  }
  const uint32_t x = b.input(arg(n, 0));
  const uint32_t sc = b.constant({c}, scale), sh = b.constant({c}, shift);
  b.node(NodeOp::ChannelAffine, {x, sc, sh}, b.output(out_id(n)),
         {param(xs[0], "N"), param(c, "C"), param(numel(xs) / (xs[0] * c), "inner")});
}

// ---- convolution and pooling ----

void pair(const Graph& g, int id, int64_t out[2], const int64_t* empty_default) {
  std::vector<int64_t> v = ints_of(g, id);
  if (v.empty() && empty_default != nullptr) {
    out[0] = empty_default[0];
    out[1] = empty_default[1];
    return;
  }
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw Unsupported("expected 1 or 2 values");
  out[0] = v[0];
  out[1] = v[1];
}

/// `values` of an IntList argument of a conv with `spatial` (2 or 3) window dims: one value
/// for all of them, or one each.
std::vector<int64_t> window_ints(const Graph& g, int id, size_t spatial, const char* what) {
  std::vector<int64_t> v = ints_of(g, id);
  if (v.size() == 1) v.assign(spatial, v[0]);
  if (v.size() != spatial) {
    throw Unsupported(std::string("conv ") + what + ": expected 1 or " + std::to_string(spatial) +
                      " values");
  }
  return v;
}

/// conv2d (4-D x) and conv3d (5-D x): conv.comp, a 2-D conv as the 3-D one of depth 1.
void lower_conv(BlobBuilder& b, const Node& n, size_t spatial) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& ws = shape(g, arg(n, 1));
  const Dims& os = shape(g, out_id(n));
  const size_t rank = spatial + 2;
  if (xs.size() != rank || ws.size() != rank || os.size() != rank) {
    throw Unsupported(spatial == 2 ? "conv2d: batched 4-D x" : "conv3d: batched 5-D x");
  }
  const std::vector<int64_t> stride = window_ints(g, arg(n, 3), spatial, "stride");
  const std::vector<int64_t> pad = window_ints(g, arg(n, 4), spatial, "padding");
  const std::vector<int64_t> dil = window_ints(g, arg(n, 5), spatial, "dilation");
  const int64_t groups = int_of(g, arg(n, 6));
  if (groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0 || ws[1] * groups != xs[1]) {
    throw Unsupported("conv groups");
  }
  // (depth, height, width) of each window quantity: a 2-D conv is the 3-D one of depth 1.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, pd[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  for (size_t i = 0, d = 3 - spatial; i < spatial; ++i, ++d) {
    in[d] = xs[2 + i], k[d] = ws[2 + i], out[d] = os[2 + i];
    st[d] = stride[i], pd[d] = pad[i], dl[d] = dil[i];
    if (st[d] < 1 || dl[d] < 1 || pd[d] < 0 ||
        (in[d] + 2 * pd[d] - dl[d] * (k[d] - 1) - 1) / st[d] + 1 != out[d]) {
      throw Unsupported("conv window");
    }
  }
  const bool bias = !is_none(g, arg(n, 2));
  const uint32_t x = b.input(arg(n, 0)), w = b.input(arg(n, 1));
  std::vector<uint32_t> inputs{x, w};
  if (bias) inputs.push_back(b.input(arg(n, 2)));
  b.node(NodeOp::Conv, inputs, b.output(out_id(n)),
         {param(xs[0], "N"), param(xs[1], "C"), param(in[1], "H"), param(in[2], "W"),
          param(ws[0], "O"), param(out[1], "OH"), param(out[2], "OW"), param(k[1], "KH"),
          param(k[2], "KW"), param(st[1], "stride"), param(st[2], "stride"), param(pd[1], "pad"),
          param(pd[2], "pad"), param(dl[1], "dilation"), param(dl[2], "dilation"),
          param(groups, "groups"), bias ? 1 : 0, 0, param(in[0], "D"), param(out[0], "OD"),
          param(k[0], "KD"), param(st[0], "stride"), param(pd[0], "pad"),
          param(dl[0], "dilation")});
}

/// upsample_nearest2d (x, scale_h, scale_w) and upsample_bilinear2d (x, align_corners, scale_h,
/// scale_w) of [N, C, H, W]: upsample2d.comp with the portable kernels' source steps (1 / scale
/// for a positive scale, else in / out; (in - 1) / (out - 1) with align_corners).
void lower_upsample(BlobBuilder& b, const Node& n, bool bilinear) {
  const Graph& g = b.graph();
  if (n.args.size() != (bilinear ? 4u : 3u)) throw Unsupported("upsample: arguments");
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  if (xs.size() != 4 || os.size() != 4 || xs[0] != os[0] || xs[1] != os[1]) {
    throw Unsupported("upsample: x and out not [N, C, H, W] of one N and C");
  }
  if (xs[2] > (int64_t{1} << 24) || xs[3] > (int64_t{1} << 24)) {
    throw Unsupported("upsample: input over 2^24 rows or columns");
  }
  const bool align = bilinear && bool_of(g, arg(n, 1));
  float step[2];
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = xs[2 + d], out = os[2 + d];
    const int scale_id = arg(n, (bilinear ? 2 : 1) + d);
    const double scale = is_none(g, scale_id) ? 0.0 : num_of(g, scale_id);
    if (align) {
      step[d] = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    } else {
      step[d] = scale > 0.0 ? static_cast<float>(1.0 / scale)
                            : static_cast<float>(in) / static_cast<float>(out);
    }
    if (!(step[d] >= 0.0f && step[d] <= 3.0e38f)) throw Unsupported("upsample: scale");
  }
  b.node(NodeOp::Upsample2d, {b.input(arg(n, 0))}, b.output(out_id(n)),
         {param(xs[0] * xs[1], "planes"), param(xs[2], "H"), param(xs[3], "W"),
          param(os[2], "OH"), param(os[3], "OW"), bilinear ? 1 : 0, align ? 1 : 0},
         {step[0], step[1]});
}

void lower_pool(BlobBuilder& b, const Node& n, int mode) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  if ((xs.size() != 4 && xs.size() != 3) || os.size() != xs.size()) throw Unsupported("pool rank");
  const size_t r = xs.size();
  const int64_t nc = numel(xs) / (xs[r - 2] * xs[r - 1]);
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  bool include_pad = true;
  int64_t divisor = 0;
  if (mode != 2) {
    pair(g, arg(n, 1), k, nullptr);
    pair(g, arg(n, 2), s, k);
    pair(g, arg(n, 3), pad, nullptr);
    if (mode == 0) {
      pair(g, arg(n, 4), dil, nullptr);
    } else {
      include_pad = has_arg(n, 5) ? bool_of(g, arg(n, 5)) : true;
      if (has_arg(n, 6) && !is_none(g, arg(n, 6))) divisor = int_of(g, arg(n, 6));
      if (has_arg(n, 6) && !is_none(g, arg(n, 6)) && divisor == 0) throw Unsupported("divisor 0");
    }
    for (int i = 0; i < 2; ++i) {
      if (pad[i] * 2 > k[i]) throw Unsupported("pool padding above half the window");
    }
  } else {
    const std::vector<int64_t> o = ints_of(g, arg(n, 1));
    if (o.size() != 2 || o[0] != os[r - 2] || o[1] != os[r - 1]) throw Unsupported("adaptive output size");
  }
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Pool2d, {x}, b.output(out_id(n)),
         {param(nc, "NC"), param(xs[r - 2], "H"), param(xs[r - 1], "W"), param(os[r - 2], "OH"),
          param(os[r - 1], "OW"), param(k[0], "kernel"), param(k[1], "kernel"),
          param(s[0], "stride"), param(s[1], "stride"), param(pad[0], "pad"),
          param(pad[1], "pad"), param(dil[0], "dilation"), param(dil[1], "dilation"), mode,
          include_pad ? 1 : 0, param(divisor, "divisor")});
}

// ---- data movement ----

void lower_view(BlobBuilder& b, const Node& n) {
  const Dims& xs = shape(b.graph(), arg(n, 0));
  const Dims& os = shape(b.graph(), out_id(n));
  if (numel(xs) != numel(os)) throw Unsupported("view changes the element count");
  const uint32_t x = b.input(arg(n, 0));
  const int64_t count = numel(xs);
  copy_node(b, x, b.output(out_id(n)), {count}, {1}, 0, {1}, 0);
}

void lower_permute(BlobBuilder& b, const Node& n, bool transpose) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  std::vector<int64_t> perm(xs.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  if (transpose) {
    std::swap(perm[static_cast<size_t>(norm_dim(int_of(g, arg(n, 1)), xs.size()))],
              perm[static_cast<size_t>(norm_dim(int_of(g, arg(n, 2)), xs.size()))]);
  } else {
    const std::vector<int64_t> p = ints_of(g, arg(n, 1));
    if (p.size() != xs.size()) throw Unsupported("permute dims");
    for (size_t i = 0; i < p.size(); ++i) perm[i] = norm_dim(p[i], xs.size());
  }
  const Dims xst = contiguous_strides(xs);
  Dims dims, src;
  for (int64_t d : perm) {
    dims.push_back(xs[static_cast<size_t>(d)]);
    src.push_back(xst[static_cast<size_t>(d)]);
  }
  if (dims != shape(g, out_id(n))) throw Unsupported("permute output shape");
  const uint32_t x = b.input(arg(n, 0));
  copy_node(b, x, b.output(out_id(n)), dims, src, 0, contiguous_strides(dims), 0);
}

/// flip(x, dims): a copy reading each listed dim backwards (a negative source stride from the
/// dim's last element; blob version 7).
void lower_flip(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (shape(g, out_id(n)) != xs) throw Unsupported("flip output shape");
  Dims src = contiguous_strides(xs);
  std::vector<bool> seen(xs.size(), false);
  int64_t offset = 0;
  for (int64_t raw : ints_of(g, arg(n, 1))) {
    const size_t d = static_cast<size_t>(norm_dim(raw, xs.size()));
    if (seen[d]) throw Unsupported("flip: a dim listed twice");
    seen[d] = true;
    offset += (xs[d] - 1) * src[d];
    src[d] = -src[d];
  }
  const uint32_t x = b.input(arg(n, 0));
  copy_node(b, x, b.output(out_id(n)), xs, src, offset, contiguous_strides(xs), 0);
}

void lower_expand(BlobBuilder& b, const Node& n) {
  const Dims& xs = shape(b.graph(), arg(n, 0));
  const Dims& os = shape(b.graph(), out_id(n));
  const Dims src = broadcast_strides(xs, os);
  const uint32_t x = b.input(arg(n, 0));
  copy_node(b, x, b.output(out_id(n)), os, src, 0, contiguous_strides(os), 0);
}

/// A slice of x along `dim` starting at `start` with `step`, `len` long, into `out`.
void slice_copy(BlobBuilder& b, uint32_t x, const Dims& xs, int64_t dim, int64_t start,
                int64_t step, uint32_t out, const Dims& out_dims) {
  const Dims xst = contiguous_strides(xs);
  Dims src = xst;
  src[static_cast<size_t>(dim)] *= step;
  copy_node(b, x, out, out_dims, src, start * xst[static_cast<size_t>(dim)],
            contiguous_strides(out_dims), 0);
}

void lower_slice(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  const int64_t dim = norm_dim(int_of(g, arg(n, 1)), xs.size());
  const int64_t size = xs[static_cast<size_t>(dim)];
  int64_t start = is_none(g, arg(n, 2)) ? 0 : int_of(g, arg(n, 2));
  int64_t end = is_none(g, arg(n, 3)) ? size : int_of(g, arg(n, 3));
  const int64_t step = has_arg(n, 4) ? int_of(g, arg(n, 4)) : 1;
  if (step < 1) throw Unsupported("slice step");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::min(std::max(start, int64_t{0}), size);
  end = std::min(std::max(end, start), size);
  Dims expect = xs;
  expect[static_cast<size_t>(dim)] = (end - start + step - 1) / step;
  if (expect != os) throw Unsupported("slice output shape");
  const uint32_t x = b.input(arg(n, 0));
  slice_copy(b, x, xs, dim, start, step, b.output(out_id(n)), os);
}

void lower_select(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const int64_t dim = norm_dim(int_of(g, arg(n, 1)), xs.size());
  int64_t index = int_of(g, arg(n, 2));
  const int64_t size = xs[static_cast<size_t>(dim)];
  if (index < -size || index >= size) throw Unsupported("select index");
  if (index < 0) index += size;
  Dims dims = xs;
  dims[static_cast<size_t>(dim)] = 1;
  const uint32_t x = b.input(arg(n, 0));
  if (numel(shape(g, out_id(n))) != numel(dims)) throw Unsupported("select output shape");
  slice_copy(b, x, xs, dim, index, 1, b.output(out_id(n)), dims);
}

void lower_split(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const int64_t dim = norm_dim(int_of(g, arg(n, 2)), xs.size());
  const uint32_t x = b.input(arg(n, 0));
  int64_t start = 0;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Dims& os = shape(g, n.outputs[i]);
    Dims expect = xs;
    expect[static_cast<size_t>(dim)] = os.size() == xs.size() ? os[static_cast<size_t>(dim)] : -1;
    if (os != expect) throw Unsupported("split output shape");
    slice_copy(b, x, xs, dim, start, 1, b.output(n.outputs[i]), os);
    start += os[static_cast<size_t>(dim)];
  }
  if (start != xs[static_cast<size_t>(dim)]) throw Unsupported("split sizes");
}

void lower_cat(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Value& list = val(g, arg(n, 0));
  if (list.kind != Value::Kind::TensorList || list.tensors.empty()) throw Unsupported("cat list");
  const Dims& os = shape(g, out_id(n));
  const int64_t dim = norm_dim(int_of(g, arg(n, 1)), os.size());
  std::vector<uint32_t> parts;
  for (int t : list.tensors) parts.push_back(b.input(t));
  const uint32_t out = b.output(out_id(n));
  const Dims ost = contiguous_strides(os);
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Dims& ps = shape(g, list.tensors[i]);
    Dims expect = os;
    expect[static_cast<size_t>(dim)] = ps.size() == os.size() ? ps[static_cast<size_t>(dim)] : -1;
    if (ps != expect) throw Unsupported("cat part shape");
    copy_node(b, parts[i], out, ps, contiguous_strides(ps), 0, ost,
              offset * ost[static_cast<size_t>(dim)]);
    offset += ps[static_cast<size_t>(dim)];
  }
  if (offset != os[static_cast<size_t>(dim)]) throw Unsupported("cat sizes");
}

/// tern::pad(x, pad, mode, value): constant (negative pads crop) or reflect padding of the
/// trailing dims, pads listed last dim first (torch.nn.functional.pad).
void lower_pad(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  const std::vector<int64_t> pads = ints_of(g, arg(n, 1));
  const Value& mode = val(g, arg(n, 2));
  if (mode.kind != Value::Kind::String) throw Unsupported("pad mode: expected a string");
  const bool reflect = mode.string_value == "reflect";
  if (!reflect && mode.string_value != "constant") {
    throw Unsupported("pad mode '" + mode.string_value + "' (constant and reflect are taken)");
  }
  const double value = has_arg(n, 3) && !is_none(g, arg(n, 3)) ? num_of(g, arg(n, 3)) : 0.0;
  if (xs.empty() || xs.size() > 6) throw Unsupported("pad rank");
  if (pads.size() % 2 != 0 || pads.size() / 2 > xs.size()) {
    throw Unsupported("pad: " + std::to_string(pads.size()) + " entries for rank " +
                      std::to_string(xs.size()));
  }
  Dims before(xs.size(), 0), expect = xs;
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const size_t d = xs.size() - 1 - k;
    const int64_t lo = pads[2 * k], hi = pads[2 * k + 1];
    if (std::abs(lo) > (int64_t{1} << 30) || std::abs(hi) > (int64_t{1} << 30)) {
      throw Unsupported("pad too large");
    }
    if (reflect && (lo < 0 || hi < 0 || lo >= xs[d] || hi >= xs[d])) {
      throw Unsupported("reflect pad (" + std::to_string(lo) + ", " + std::to_string(hi) +
                        ") of a dim of " + std::to_string(xs[d]));
    }
    before[d] = lo;
    expect[d] = xs[d] + lo + hi;
  }
  if (expect != os) throw Unsupported("pad output shape");
  Dims od = os, id = xs, unused = xs;
  pad6(&od, &before);  // the leading dims (1) are not padded (0)
  pad6(&id, &unused);
  std::vector<int32_t> p(19, 0);
  p[0] = reflect ? 1 : 0;
  for (size_t i = 0; i < 6; ++i) {
    p[1 + i] = param(od[i], "pad output dim");
    p[7 + i] = param(id[i], "pad input dim");
    p[13 + i] = static_cast<int32_t>(before[i]);
  }
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Pad, {x}, b.output(out_id(n)), p, {static_cast<float>(value)});
}

void lower_reduce(BlobBuilder& b, const Node& n, bool mean) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (has_arg(n, 3) && !is_none(g, arg(n, 3))) throw Unsupported("reduce with a dtype");
  std::vector<int64_t> dims = ints_of(g, arg(n, 1));
  std::vector<bool> reduced(xs.size(), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(norm_dim(d, xs.size()))] = true;
  const Dims xst = contiguous_strides(xs);
  Dims kd, ks, rd, rs;
  int64_t count = 1;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (reduced[i]) {
      rd.push_back(xs[i]);
      rs.push_back(xst[i]);
      count *= xs[i];
    } else {
      kd.push_back(xs[i]);
      ks.push_back(xst[i]);
    }
  }
  if (numel(kd) != numel(shape(g, out_id(n)))) throw Unsupported("reduce output shape");
  pad6(&kd, &ks);
  pad6(&rd, &rs);
  std::vector<int32_t> p(26, 0);
  for (int i = 0; i < 6; ++i) {
    p[1 + i] = param(kd[static_cast<size_t>(i)], "dim");
    p[7 + i] = param(ks[static_cast<size_t>(i)], "stride");
    p[14 + i] = param(rd[static_cast<size_t>(i)], "dim");
    p[20 + i] = param(rs[static_cast<size_t>(i)], "stride");
  }
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Reduce, {x}, b.output(out_id(n)), p,
         {mean ? static_cast<float>(1.0 / static_cast<double>(count)) : 1.0f});
}

void lower_embedding(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& ws = shape(g, arg(n, 0));
  const Dims& is = shape(g, arg(n, 1));
  if (ws.size() != 2) throw Unsupported("embedding weight rank");
  if (is_quantized_tensor(g, arg(n, 0))) {
    // op 15: params [0] V, [1] D, [2] count, the scheme at 16..
    Dims os = is;
    os.push_back(ws[1]);
    if (shape(g, out_id(n)) != os) throw Unsupported("embedding output shape");
    const QuantWeightRef q = quant_weight(b, arg(n, 0));
    const uint32_t idx = b.index_input(arg(n, 1));
    std::vector<int32_t> p{param(ws[0], "V"), param(ws[1], "D"), param(numel(is), "count")};
    put_quant_params(q, &p);
    b.node(NodeOp::QuantEmbedding, {q.value, idx}, b.output(out_id(n)), p, {q.dq_offset});
    return;
  }
  const uint32_t w = b.input(arg(n, 0));
  const uint32_t idx = b.index_input(arg(n, 1));
  b.node(NodeOp::Embedding, {w, idx}, b.output(out_id(n)),
         {param(ws[0], "V"), param(ws[1], "D"), param(numel(is), "count")});
}

/// grouped_mm (x [S, K], w [E, K, N] f32) and grouped_linear (x [S, K], w [E·N, K] f32 or
/// nf4 / fp8), the ends [E] an int32 / int64 input of the region (a mixture of experts'
/// routing): op 17 (f32 w; params [0] S, [1] K, [2] N, [3] E, [4] words per end, [5] w
/// [E·N, K]) or op 18 (quantized w; the scheme at 16..).
void lower_grouped(BlobBuilder& b, const Node& n, bool linear) {
  const Graph& g = b.graph();
  if (n.args.size() != 3) throw Unsupported("expected x, w and the group ends");
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& ws = shape(g, arg(n, 1));
  const Dims& es = shape(g, arg(n, 2));
  if (xs.size() != 2) throw Unsupported("x is not [S, K]");
  if (es.size() != 1) throw Unsupported("the ends are not 1-D");
  const int64_t s = xs[0], k = xs[1], e = es[0];
  int64_t nn = 0;
  if (linear) {
    if (ws.size() != 2 || ws[1] != k || e < 1 || ws[0] % e != 0) {
      throw Unsupported("w is not [E N, K] with x's K and the ends' E");
    }
    nn = ws[0] / e;
  } else {
    if (ws.size() != 3 || ws[1] != k || ws[0] != e) {
      throw Unsupported("w is not [E, K, N] with x's K and the ends' E");
    }
    nn = ws[2];
  }
  if (shape(g, out_id(n)) != Dims{s, nn}) throw Unsupported("out is not [S, N]");
  const Value& ends = val(g, arg(n, 2));
  std::vector<int32_t> p{param(s, "S"), param(k, "K"), param(nn, "N"), param(e, "E"),
                         ends.dtype == DType::I32 ? 1 : 2};
  if (linear && is_quantized_tensor(g, arg(n, 1))) {
    const QuantWeightRef w = quant_weight(b, arg(n, 1));
    const uint32_t x = b.input(arg(n, 0));
    const uint32_t idx = b.group_ends_input(arg(n, 2));
    put_quant_params(w, &p);
    b.node(NodeOp::QuantGroupedLinear, {x, w.value, idx}, b.output(out_id(n)), p, {w.dq_offset});
    return;
  }
  p.push_back(linear ? 1 : 0);
  const uint32_t x = b.input(arg(n, 0));
  const uint32_t w = b.input(arg(n, 1));
  const uint32_t idx = b.group_ends_input(arg(n, 2));
  b.node(NodeOp::GroupedMatmul, {x, w, idx}, b.output(out_id(n)), p);
}

void lower_attention(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& qs = shape(g, arg(n, 0));
  const Dims& ks = shape(g, arg(n, 1));
  const Dims& vs = shape(g, arg(n, 2));
  if (qs.size() < 2 || ks.size() != qs.size() || vs.size() != qs.size()) throw Unsupported("sdpa ranks");
  const size_t r = qs.size();
  const Dims batch(qs.begin(), qs.end() - 2);
  const Dims kv_batch(ks.begin(), ks.end() - 2);
  if (Dims(vs.begin(), vs.end() - 2) != kv_batch) throw Unsupported("sdpa k and v batch dims differ");
  // Grouped-query attention: k/v's batch dims are q's with a trailing run of 1s (q [.., Hkv, rep],
  // k/v [.., Hkv, 1]), so query batch z reads key/value batch z / group.
  size_t lead = 0;
  while (lead < batch.size() && kv_batch[lead] == batch[lead]) ++lead;
  int64_t group = 1;
  for (size_t i = lead; i < batch.size(); ++i) {
    if (kv_batch[i] != 1) throw Unsupported("sdpa batch dims broadcast other than a trailing run");
    group *= batch[i];
  }
  const int64_t L = qs[r - 2], E = qs[r - 1], S = ks[r - 2], Ev = vs[r - 1];
  if (ks[r - 1] != E || vs[r - 2] != S) throw Unsupported("sdpa shapes");
  if (S > 2048) throw Unsupported("sdpa with more than 2048 keys");
  const int64_t B = numel(batch);
  const bool causal = bool_of(g, arg(n, 4));
  const bool has_mask = !is_none(g, arg(n, 3));
  if (causal && has_mask) throw Unsupported("sdpa with both a mask and is_causal");
  double scale = 1.0 / std::sqrt(static_cast<double>(E));
  if (has_arg(n, 5) && !is_none(g, arg(n, 5))) scale = num_of(g, arg(n, 5));
  std::vector<uint32_t> inputs{b.input(arg(n, 0)), b.input(arg(n, 1)), b.input(arg(n, 2))};
  int64_t mb = 0, mr = 0, mc = 0, mask_group = 1;
  if (has_mask) {
    const Value& m = val(g, arg(n, 3));
    if (!m.is_tensor()) throw Unsupported("sdpa mask");
    const Dims full_batch = batch;
    Dims target = full_batch;
    target.push_back(L);
    target.push_back(S);
    const Dims st = broadcast_strides(m.sizes, target);
    // The flattened batch needs one stride: the mask's batch dims are a leading run it holds
    // (laid out one after the other) and a trailing run it broadcasts, so query batch z reads
    // mask batch z / mask group (like k and v above).
    size_t held = 0;
    while (held < batch.size() && (st[held] != 0 || target[held] == 1)) ++held;
    for (size_t i = held; i < batch.size(); ++i) {
      if (st[i] != 0 && target[i] != 1) throw Unsupported("sdpa mask broadcasts a batch dim before one it holds");
      mask_group *= target[i];
    }
    int64_t unit = 0;  // the held dims' flattened stride: that of the last one of size > 1
    for (size_t i = held; i-- > 0;) {
      if (target[i] == 1) continue;
      if (unit == 0) {
        unit = st[i];
        mb = st[i];
      } else if (st[i] != unit) {
        throw Unsupported("sdpa mask batch layout");
      }
      unit *= target[i];
    }
    mr = st[r - 2];
    mc = st[r - 1];
    if (m.dtype == DType::Bool) {
      const float as_float[2] = {-kInf, 0.0f};
      inputs.push_back(b.input(arg(n, 3), as_float));
    } else {
      inputs.push_back(b.input(arg(n, 3)));
    }
  }
  b.node(NodeOp::Attention, inputs, b.output(out_id(n)),
         {param(B, "batch"), param(L, "L"), param(S, "S"), param(E, "E"), param(Ev, "Ev"),
          causal ? 1 : 0, has_mask ? 1 : 0, param(L * E, "q stride"), param(S * E, "k stride"),
          param(S * Ev, "v stride"), param(mb, "mask stride"), param(mr, "mask stride"),
          param(mc, "mask stride"), param(group, "kv group"), param(mask_group, "mask group")},
         {static_cast<float>(scale)});
}

using Lowering = std::function<void(BlobBuilder&, const Node&)>;

const std::map<std::string, Lowering>& table() {
  static const std::map<std::string, Lowering> t = {
      {"tern::linear", lower_linear},
      {"tern::addmm", lower_addmm},
      {"tern::matmul", [](BlobBuilder& b, const Node& n) { lower_matmul(b, n, false); }},
      {"tern::bmm", [](BlobBuilder& b, const Node& n) { lower_matmul(b, n, true); }},
      {"tern::add", [](BlobBuilder& b, const Node& n) { lower_binary(b, n, ElementwiseKind::Add); }},
      {"tern::sub", [](BlobBuilder& b, const Node& n) { lower_binary(b, n, ElementwiseKind::Sub); }},
      {"tern::mul", [](BlobBuilder& b, const Node& n) { lower_binary(b, n, ElementwiseKind::Mul); }},
      {"tern::div", [](BlobBuilder& b, const Node& n) { lower_binary(b, n, ElementwiseKind::Div); }},
      {"tern::where", lower_where},
      {"tern::relu", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Clamp, 0.0f, kInf); }},
      {"tern::hardtanh", [](BlobBuilder& b, const Node& n) { lower_clamp(b, n, true); }},
      {"tern::clamp", [](BlobBuilder& b, const Node& n) { lower_clamp(b, n, false); }},
      {"tern::gelu", lower_gelu},
      {"tern::silu", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Silu); }},
      {"tern::sigmoid", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Sigmoid); }},
      {"tern::hardswish", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Hardswish); }},
      {"tern::hardsigmoid", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Hardsigmoid); }},
      {"tern::tanh", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Tanh); }},
      {"tern::neg", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Neg); }},
      {"tern::abs", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Abs); }},
      {"tern::exp", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Exp); }},
      {"tern::log", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Log); }},
      {"tern::sqrt", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Sqrt); }},
      {"tern::rsqrt", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Rsqrt); }},
      {"tern::reciprocal", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Reciprocal); }},
      {"tern::erf", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Erf); }},
      {"tern::floor", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Floor); }},
      {"tern::ceil", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Ceil); }},
      {"tern::round", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Round); }},
      {"tern::pow", lower_pow},
      {"tern::leaky_relu", lower_leaky_relu},
      {"tern::softmax", lower_softmax},
      {"tern::layer_norm", lower_layer_norm},
      {"tern::batch_norm", lower_batch_norm},
      {"tern::group_norm", lower_group_norm},
      {"tern::conv2d", [](BlobBuilder& b, const Node& n) { lower_conv(b, n, 2); }},
      {"tern::conv3d", [](BlobBuilder& b, const Node& n) { lower_conv(b, n, 3); }},
      {"tern::upsample_nearest2d", [](BlobBuilder& b, const Node& n) { lower_upsample(b, n, false); }},
      {"tern::upsample_bilinear2d", [](BlobBuilder& b, const Node& n) { lower_upsample(b, n, true); }},
      {"tern::max_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 0); }},
      {"tern::avg_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 1); }},
      {"tern::adaptive_avg_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 2); }},
      {"tern::view", lower_view},
      {"tern::reshape", lower_view},
      {"tern::flatten", lower_view},
      {"tern::squeeze", lower_view},
      {"tern::unsqueeze", lower_view},
      {"tern::clone", lower_view},
      {"tern::permute", [](BlobBuilder& b, const Node& n) { lower_permute(b, n, false); }},
      {"tern::transpose", [](BlobBuilder& b, const Node& n) { lower_permute(b, n, true); }},
      {"tern::expand", lower_expand},
      {"tern::flip", lower_flip},
      {"tern::slice", lower_slice},
      {"tern::select", lower_select},
      {"tern::split", lower_split},
      {"tern::cat", lower_cat},
      {"tern::pad", lower_pad},
      {"tern::mean", [](BlobBuilder& b, const Node& n) { lower_reduce(b, n, true); }},
      {"tern::sum", [](BlobBuilder& b, const Node& n) { lower_reduce(b, n, false); }},
      {"tern::embedding", lower_embedding},
      {"tern::grouped_mm", [](BlobBuilder& b, const Node& n) { lower_grouped(b, n, false); }},
      {"tern::grouped_linear", [](BlobBuilder& b, const Node& n) { lower_grouped(b, n, true); }},
      {"tern::scaled_dot_product_attention", lower_attention},
  };
  return t;
}

}  // namespace

void lower_node(BlobBuilder& b, const Node& node) {
  auto it = table().find(node.op);
  if (it == table().end()) throw Unsupported("op " + node.op + " is not taken");
  for (int o : node.outputs) {
    if (!val(b.graph(), o).is_tensor()) throw Unsupported("non-tensor output");
  }
  if (node.op != "tern::split" && node.outputs.size() != 1) throw Unsupported("several outputs");
  it->second(b, node);
}

bool is_data_movement(const std::string& op) {
  static const char* const kOps[] = {"tern::view", "tern::reshape", "tern::flatten",
                                     "tern::squeeze", "tern::unsqueeze", "tern::clone",
                                     "tern::permute", "tern::transpose", "tern::expand",
                                     "tern::slice", "tern::select", "tern::split", "tern::cat",
                                     "tern::pad", "tern::flip"};
  for (const char* k : kOps) {
    if (op == k) return true;
  }
  return false;
}

}  // namespace tern::compiler::vulkan_compile
