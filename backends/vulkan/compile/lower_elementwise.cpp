// The vulkan lowerings of elementwise ops (binary with broadcasting, where, the unary kinds,
// clamps, GELU, pow, leaky ReLU), softmax, the norms (layer, group, batch), sum / mean / amax /
// amin and cumsum.
#include "backends/vulkan/compile/lowerings.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tern::compiler::vulkan_compile {

using vulkan::ElementwiseKind;
using vulkan::NodeOp;
using vulkan::UnaryKind;

// ---- elementwise ----

namespace {

/// One elementwise node of `kind` on n's first argument and `other` (a tensor or a number of
/// the graph; -1: the number `scalar`), broadcast to n's output; `alpha` scales b (add, sub).
void binary_node(BlobBuilder& b, const Node& n, ElementwiseKind kind, int other, float scalar,
                 double alpha) {
  const Graph& g = b.graph();
  const Value& av = val(g, arg(n, 0));
  if (!av.is_tensor()) throw Unsupported("scalar first operand");
  const Dims& os = shape(g, out_id(n));
  Dims dims = os, sa = broadcast_strides(av.sizes, os), sb(os.size(), 0), sc(os.size(), 0);
  std::vector<uint32_t> inputs{b.input(arg(n, 0))};
  const bool has_b = other >= 0 && val(g, other).is_tensor();
  if (has_b) {
    sb = broadcast_strides(val(g, other).sizes, os);
    inputs.push_back(b.input(other));
  } else if (other >= 0) {
    scalar = static_cast<float>(num_of(g, other));
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

}  // namespace

void lower_binary(BlobBuilder& b, const Node& n, ElementwiseKind kind) {
  const Graph& g = b.graph();
  if (kind == ElementwiseKind::Div && has_arg(n, 2) && !is_none(g, arg(n, 2))) {
    throw Unsupported("div with a rounding mode");
  }
  double alpha = 1.0;
  if ((kind == ElementwiseKind::Add || kind == ElementwiseKind::Sub) && has_arg(n, 2)) {
    alpha = num_of(g, arg(n, 2));
  }
  binary_node(b, n, kind, arg(n, 1), 0.0f, alpha);
}

void lower_where(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Value& cond = val(g, arg(n, 0));
  if (!cond.is_tensor() || cond.dtype != DType::Bool) {
    throw Unsupported("where: the condition must be a bool tensor");
  }
  const Dims& os = shape(g, out_id(n));
  // The condition: a constant, or computed (a comparison inside the region, or a bool input):
  // 0 / 1 floats either way. x and y: tensors or numbers (a one-element constant).
  const uint32_t c = b.input(arg(n, 0));
  auto operand = [&](int id, Dims* strides) {
    const Value& v = val(g, id);
    if (v.is_tensor()) {
      *strides = broadcast_strides(v.sizes, os);
      return b.input(id);
    }
    *strides = Dims(os.size(), 0);
    return b.constant({}, {static_cast<float>(num_of(g, id))});
  };
  Dims sa, sb;
  const uint32_t x = operand(arg(n, 1), &sa), y = operand(arg(n, 2), &sb);
  Dims dims = os, d2 = os, d3 = os;
  Dims sc = broadcast_strides(cond.sizes, os);
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

void lower_cast(BlobBuilder& b, const Node& n) {
  // Inside the delegate every value the backend takes is the storage's float (bools 0 / 1,
  // integers held as floats), so a cast to f32 is a copy and a cast to bool is x != 0 (NaN is
  // true, as ATen). Other target dtypes (integers, f16, bf16) are not taken: the output's
  // checks refuse them.
  const Dims& xs = shape(b.graph(), arg(n, 0));
  if (xs != shape(b.graph(), out_id(n))) throw Unsupported("cast output shape");
  if (val(b.graph(), out_id(n)).dtype == DType::Bool) {
    binary_node(b, n, ElementwiseKind::Ne, -1, 0.0f, 1.0);
    return;
  }
  lower_view(b, n);  // the same flat copy a view of the same shape is
}

void lower_logical_not(BlobBuilder& b, const Node& n) {
  // x == 0 (a bool's 0 / 1, or a number: NaN is true, so not NaN is false, as ATen).
  if (shape(b.graph(), arg(n, 0)) != shape(b.graph(), out_id(n))) {
    throw Unsupported("logical_not output shape");
  }
  binary_node(b, n, ElementwiseKind::Eq, -1, 0.0f, 1.0);
}

void unary_node(BlobBuilder& b, const Node& n, UnaryKind kind, float lo, float hi) {
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

// softplus(x, beta, threshold): ATen's defaults 1 and 20.
void lower_softplus(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const double beta = has_arg(n, 1) && !is_none(g, arg(n, 1)) ? num_of(g, arg(n, 1)) : 1.0;
  const double threshold = has_arg(n, 2) && !is_none(g, arg(n, 2)) ? num_of(g, arg(n, 2)) : 20.0;
  if (!(beta > 0.0) || !std::isfinite(beta) || !std::isfinite(threshold)) {
    throw Unsupported("softplus: beta not positive and finite, or threshold not finite");
  }
  unary_node(b, n, UnaryKind::Softplus, static_cast<float>(beta), static_cast<float>(threshold));
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

// layer_norm(x, normalized_shape, weight?, bias?, eps) and rms_norm(x, normalized_shape,
// weight?, eps or None) over trailing dims: one LayerNorm node (params[4] = 1: RMS, no mean
// taken out and no bias; eps None is f32's machine epsilon, as ATen).
void lower_row_norm(BlobBuilder& b, const Node& n, bool rms) {
  const Graph& g = b.graph();
  const char* what = rms ? "rms_norm" : "layer_norm";
  const Dims& xs = shape(g, arg(n, 0));
  const std::vector<int64_t> ns = ints_of(g, arg(n, 1));
  if (ns.empty() || ns.size() > xs.size() || !std::equal(ns.begin(), ns.end(), xs.end() - static_cast<long>(ns.size()))) {
    throw Unsupported(std::string(what) + " normalized_shape");
  }
  const int64_t cols = numel(ns);
  const bool has_w = has_arg(n, 2) && !is_none(g, arg(n, 2));
  const bool has_b = !rms && has_arg(n, 3) && !is_none(g, arg(n, 3));
  const int eps_arg = rms ? 3 : 4;
  const double eps = has_arg(n, eps_arg) && !is_none(g, arg(n, eps_arg))
                         ? num_of(g, arg(n, eps_arg))
                         : (rms ? static_cast<double>(FLT_EPSILON) : 1e-5);
  std::vector<uint32_t> inputs{b.input(arg(n, 0))};
  if (has_w) {
    if (numel(shape(g, arg(n, 2))) != cols) throw Unsupported(std::string(what) + " weight");
    inputs.push_back(b.input(arg(n, 2)));
  }
  if (has_b) {
    if (numel(shape(g, arg(n, 3))) != cols) throw Unsupported("layer_norm bias");
    // The shader reads the bias at binding 3: with a bias but no weight, the weight is ones.
    if (!has_w) inputs.push_back(b.constant({cols}, std::vector<float>(static_cast<size_t>(cols), 1.0f)));
    inputs.push_back(b.input(arg(n, 3)));
  }
  b.node(NodeOp::LayerNorm, inputs, b.output(out_id(n)),
         {param(numel(xs) / cols, "rows"), param(cols, "n"), has_w || has_b ? 1 : 0, has_b ? 1 : 0,
          rms ? 1 : 0},
         {static_cast<float>(eps)});
}

void lower_layer_norm(BlobBuilder& b, const Node& n) { lower_row_norm(b, n, false); }
void lower_rms_norm(BlobBuilder& b, const Node& n) { lower_row_norm(b, n, true); }

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

namespace {

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

}  // namespace

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

// ---- reductions ----

void lower_reduce(BlobBuilder& b, const Node& n, ReduceOp op) {
  const bool mean = op == ReduceOp::Mean;
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const bool arg_reduce = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  if ((op == ReduceOp::Sum || op == ReduceOp::Mean) && has_arg(n, 3) && !is_none(g, arg(n, 3))) {
    throw Unsupported("reduce with a dtype");
  }
  // argmax / argmin: one dim, or None (the whole tensor); the others a list (empty: all).
  std::vector<int64_t> dims = is_none(g, arg(n, 1)) ? std::vector<int64_t>{} : ints_of(g, arg(n, 1));
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
  if (arg_reduce && count > vulkan::exact_int_limit(b.storage())) {
    throw Unsupported("argmax / argmin over " + std::to_string(count) +
                      " elements: the indices are held as floats, exact up to " +
                      std::to_string(vulkan::exact_int_limit(b.storage())));
  }
  pad6(&kd, &ks);
  pad6(&rd, &rs);
  std::vector<int32_t> p(26, 0);
  p[0] = static_cast<int32_t>(op == ReduceOp::Max      ? vulkan::ReduceKind::Max
                              : op == ReduceOp::Min    ? vulkan::ReduceKind::Min
                              : op == ReduceOp::ArgMax ? vulkan::ReduceKind::ArgMax
                              : op == ReduceOp::ArgMin ? vulkan::ReduceKind::ArgMin
                                                       : vulkan::ReduceKind::Sum);
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

void lower_cumsum(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  if (shape(g, out_id(n)) != xs) throw Unsupported("cumsum output shape");
  if (val(g, out_id(n)).dtype != DType::F32) throw Unsupported("cumsum to a non-f32 output");
  const size_t dim = xs.empty() ? 0 : static_cast<size_t>(norm_dim(int_of(g, arg(n, 1)), xs.size()));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= xs[d];
  for (size_t d = dim + 1; d < xs.size(); ++d) inner *= xs[d];
  const int64_t size = xs.empty() ? 1 : xs[dim];
  const uint32_t x = b.input(arg(n, 0));
  b.node(NodeOp::Cumsum, {x}, b.output(out_id(n)),
         {param(outer, "outer"), param(size, "size"), param(inner, "inner")});
}

}  // namespace tern::compiler::vulkan_compile
