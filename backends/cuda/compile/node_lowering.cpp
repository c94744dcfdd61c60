#include "backends/cuda/compile/node_lowering.h"

#include "backends/cuda/compile/quant_lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tern::compiler::cuda_compile {

using cuda::Activation;
using cuda::BinaryOp;
using cuda::NodeOp;
using cuda::UnaryOp;

namespace {

constexpr size_t kMaxRank = cuda::kMaxDims;

const Value& value_at(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    throw Unsupported("value id " + std::to_string(id) + " out of range");
  }
  return g.values[static_cast<size_t>(id)];
}

int arg(const Node& node, size_t i, const char* what) {
  if (i >= node.args.size()) throw Unsupported(std::string("missing argument ") + what);
  return node.args[i];
}

bool has_arg(const Node& node, size_t i) { return i < node.args.size(); }

bool is_none(const Graph& g, int id) { return value_at(g, id).kind == Value::Kind::None; }

uint64_t numel(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

/// A tensor of `dtype`, rank 0..6, every dim 1..2^31, with no quantization.
const Value& tensor_of(const Graph& g, int id, const char* what, DType dtype) {
  const Value& v = value_at(g, id);
  if (!v.is_tensor()) throw Unsupported(std::string(what) + " is not a tensor");
  if (v.dtype != dtype) {
    throw Unsupported(std::string(what) + " is " + to_string(v.dtype) + ", not " +
                      to_string(dtype));
  }
  if (v.quant.scheme != QuantSpec::Scheme::None) {
    throw Unsupported(std::string(what) + " is quantized");
  }
  if (v.sizes.size() > kMaxRank) throw Unsupported(std::string(what) + ": rank above 6");
  for (int64_t d : v.sizes) {
    if (d < 1 || static_cast<uint64_t>(d) > cuda::kMaxDim) {
      throw Unsupported(std::string(what) + ": empty or huge dim in " + shape_str(v.sizes));
    }
  }
  return v;
}

const Value& f32(const Graph& g, int id, const char* what) {
  return tensor_of(g, id, what, DType::F32);
}

bool movable_dtype(DType d) {
  return d == DType::F32 || d == DType::I64 || d == DType::I32 || d == DType::Bool;
}

/// A tensor of any dtype the delegate moves (f32, i64, i32, bool).
const Value& any_tensor(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (!v.is_tensor()) throw Unsupported(std::string(what) + " is not a tensor");
  if (!movable_dtype(v.dtype)) {
    throw Unsupported(std::string(what) + " is " + to_string(v.dtype) +
                      ", not f32, i64, i32 or bool");
  }
  return tensor_of(g, id, what, v.dtype);
}

/// The node's single output: an f32 tensor (rank 0..6), not constant.
const Value& only_output(const Graph& g, const Node& node, DType dtype = DType::F32) {
  if (node.outputs.size() != 1) throw Unsupported("expected one output");
  const Value& out = tensor_of(g, node.outputs[0], "output", dtype);
  if (out.is_constant || out.is_state) throw Unsupported("output is a constant or state");
  return out;
}

double number(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (v.kind == Value::Kind::Int) return static_cast<double>(v.int_value);
  if (v.kind == Value::Kind::Double) return v.double_value;
  throw Unsupported(std::string(what) + " is not a number");
}

int64_t int_of(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (v.kind != Value::Kind::Int) throw Unsupported(std::string(what) + " is not an Int");
  return v.int_value;
}

bool bool_of(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (v.kind != Value::Kind::Bool) throw Unsupported(std::string(what) + " is not a Bool");
  return v.bool_value;
}

std::vector<int64_t> ints_of(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (v.kind == Value::Kind::IntList) return v.ints;
  if (v.kind == Value::Kind::Int) return {v.int_value};
  throw Unsupported(std::string(what) + " is not an IntList");
}

/// An Int or IntList of 1 or 2 values into out[2] (one repeats); empty gives `empty` (or
/// Unsupported when null); each value >= min_value.
void pair_of(const Graph& g, int id, const char* what, const int64_t* empty, int64_t min_value,
             int64_t out[2]) {
  const std::vector<int64_t> v = ints_of(g, id, what);
  if (v.empty()) {
    if (empty == nullptr) throw Unsupported(std::string(what) + " is empty");
    out[0] = empty[0];
    out[1] = empty[1];
  } else if (v.size() == 1) {
    out[0] = out[1] = v[0];
  } else if (v.size() == 2) {
    out[0] = v[0];
    out[1] = v[1];
  } else {
    throw Unsupported(std::string(what) + " has more than 2 values");
  }
  if (out[0] < min_value || out[1] < min_value || out[0] > (1 << 20) || out[1] > (1 << 20)) {
    throw Unsupported(std::string(what) + " out of range");
  }
}

int64_t norm_dim(int64_t dim, size_t rank, const char* what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) throw Unsupported(std::string(what) + " out of range");
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

void expect_shape(const Value& out, const std::vector<int64_t>& expect, const char* what) {
  if (out.sizes != expect) {
    throw Unsupported(std::string(what) + ": output is " + shape_str(out.sizes) + ", expected " +
                      shape_str(expect));
  }
}

/// NumPy broadcast of two shapes (Unsupported when incompatible).
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) throw Unsupported("shapes do not broadcast");
    out[i] = std::max(da, db);
  }
  return out;
}

PendingNode make(NodeOp op, std::vector<int> inputs, int output) {
  PendingNode n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.output = output;
  return n;
}

NodeLowering single(PendingNode n) {
  NodeLowering l;
  l.nodes.push_back(std::move(n));
  return l;
}

/// A strided copy of x into `out` with element `offset` and per-output-dim `strides`.
PendingNode strided_copy(int x, int out, int64_t offset, const std::vector<int64_t>& strides) {
  PendingNode n = make(NodeOp::StridedCopy, {x}, out);
  n.params[0] = offset;
  for (size_t d = 0; d < strides.size(); ++d) n.params[1 + d] = strides[d];
  return n;
}

// ---- linear algebra ----

/// Gemm node: a [.., M, K] times w, batch and strides as documented in the blob format.
PendingNode gemm(int a, int w, int bias, int out, int64_t m, int64_t n, int64_t k, int64_t batch,
                 bool w_transposed, int64_t stride_a, int64_t stride_w, float alpha) {
  PendingNode p = make(NodeOp::Gemm, {a, w, bias}, out);
  p.params[0] = m;
  p.params[1] = n;
  p.params[2] = k;
  p.params[3] = batch;
  p.params[4] = w_transposed ? 1 : 0;
  p.params[5] = stride_a;
  p.params[6] = stride_w;
  p.params[7] = static_cast<int64_t>(Activation::None);
  p.fparams[0] = alpha;
  return p;
}

NodeLowering lower_linear(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("linear: expected 3 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& w = f32(g, node.args[1], "weight");
  const Value& out = only_output(g, node);
  if (x.sizes.empty() || w.sizes.size() != 2) throw Unsupported("linear: x rank 0 or weight not 2-D");
  const int64_t k = x.sizes.back(), n = w.sizes[0];
  if (w.sizes[1] != k) throw Unsupported("linear: in features differ");
  int bias = -1;
  if (!is_none(g, node.args[2])) {
    const Value& b = f32(g, node.args[2], "bias");
    if (b.sizes != std::vector<int64_t>{n}) throw Unsupported("linear: bias is not [out]");
    bias = node.args[2];
  }
  std::vector<int64_t> expect = x.sizes;
  expect.back() = n;
  expect_shape(out, expect, "linear");
  const int64_t m = static_cast<int64_t>(numel(x.sizes) / static_cast<uint64_t>(k));
  return single(gemm(node.args[0], node.args[1], bias, node.outputs[0], m, n, k, 1, true, 0, 0,
                     1.0f));
}

/// matmul / bmm: a [..., M, K] · b [..., K, N] with equal batch dims, or a 2-D b shared by
/// every batch (folded into M), or a 2-D a shared by every batch of b.
NodeLowering lower_matmul(const Graph& g, const Node& node, bool bmm) {
  if (node.args.size() != 2) throw Unsupported("matmul: expected 2 arguments");
  const Value& a = f32(g, node.args[0], "a");
  const Value& b = f32(g, node.args[1], "b");
  const Value& out = only_output(g, node);
  if (a.sizes.size() < 2 || b.sizes.size() < 2) throw Unsupported("matmul: 1-D operand");
  if (bmm && (a.sizes.size() != 3 || b.sizes.size() != 3)) throw Unsupported("bmm: not 3-D");
  const int64_t m = a.sizes[a.sizes.size() - 2], k = a.sizes.back();
  const int64_t n = b.sizes.back();
  if (b.sizes[b.sizes.size() - 2] != k) throw Unsupported("matmul: inner dims differ");
  const std::vector<int64_t> a_batch(a.sizes.begin(), a.sizes.end() - 2);
  const std::vector<int64_t> b_batch(b.sizes.begin(), b.sizes.end() - 2);
  if (b.sizes.size() == 2) {
    std::vector<int64_t> expect = a.sizes;
    expect.back() = n;
    expect_shape(out, expect, "matmul");
    const int64_t rows = static_cast<int64_t>(numel(a.sizes) / static_cast<uint64_t>(k));
    return single(gemm(node.args[0], node.args[1], -1, node.outputs[0], rows, n, k, 1, false, 0,
                       0, 1.0f));
  }
  std::vector<int64_t> expect;
  int64_t stride_a = m * k;
  if (a.sizes.size() == 2) {
    stride_a = 0;
    expect = b_batch;
  } else if (a_batch == b_batch) {
    expect = a_batch;
  } else {
    throw Unsupported("matmul: batch dims differ (broadcast batches not taken)");
  }
  const int64_t batch = static_cast<int64_t>(numel(expect));
  expect.push_back(m);
  expect.push_back(n);
  expect_shape(out, expect, "matmul");
  return single(gemm(node.args[0], node.args[1], -1, node.outputs[0], m, n, k, batch, false,
                     stride_a, k * n, 1.0f));
}

NodeLowering lower_addmm(const Graph& g, const Node& node) {
  if (node.args.size() < 3 || node.args.size() > 5) throw Unsupported("addmm: arguments");
  const Value& a = f32(g, node.args[1], "a");
  const Value& b = f32(g, node.args[2], "b");
  const Value& out = only_output(g, node);
  const double beta = has_arg(node, 3) ? number(g, node.args[3], "beta") : 1.0;
  const double alpha = has_arg(node, 4) ? number(g, node.args[4], "alpha") : 1.0;
  if (a.sizes.size() != 2 || b.sizes.size() != 2 || a.sizes[1] != b.sizes[0]) {
    throw Unsupported("addmm: a, b not [n, k], [k, m]");
  }
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  expect_shape(out, {m, n}, "addmm");
  int bias = -1;
  if (beta != 0.0) {
    if (beta != 1.0) throw Unsupported("addmm: beta other than 0 or 1");
    const Value& c = f32(g, node.args[0], "bias");
    if (c.sizes != std::vector<int64_t>{n} && c.sizes != std::vector<int64_t>{1, n}) {
      throw Unsupported("addmm: bias not [m] or [1, m]");
    }
    bias = node.args[0];
  }
  return single(gemm(node.args[1], node.args[2], bias, node.outputs[0], m, n, k, 1, false, 0, 0,
                     static_cast<float>(alpha)));
}

NodeLowering lower_conv2d(const Graph& g, const Node& node) {
  if (node.args.size() != 7) throw Unsupported("conv2d: expected 7 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& w = f32(g, node.args[1], "weight");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 4 || w.sizes.size() != 4) throw Unsupported("conv2d: x or w not 4-D");
  int64_t stride[2], pad[2], dil[2];
  pair_of(g, node.args[3], "stride", nullptr, 1, stride);
  pair_of(g, node.args[4], "padding", nullptr, 0, pad);
  pair_of(g, node.args[5], "dilation", nullptr, 1, dil);
  const int64_t groups = int_of(g, node.args[6], "groups");
  const int64_t n = x.sizes[0], c = x.sizes[1], h = x.sizes[2], wd = x.sizes[3];
  const int64_t o = w.sizes[0], kh = w.sizes[2], kw = w.sizes[3];
  if (groups < 1 || c % groups != 0 || o % groups != 0 || w.sizes[1] != c / groups) {
    throw Unsupported("conv2d: channels and groups disagree");
  }
  const int64_t oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
  const int64_t ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
  if (h + 2 * pad[0] < dil[0] * (kh - 1) + 1 || wd + 2 * pad[1] < dil[1] * (kw - 1) + 1) {
    throw Unsupported("conv2d: window larger than the padded input");
  }
  expect_shape(out, {n, o, oh, ow}, "conv2d");
  int bias = -1;
  if (!is_none(g, node.args[2])) {
    const Value& b = f32(g, node.args[2], "bias");
    if (b.sizes != std::vector<int64_t>{o}) throw Unsupported("conv2d: bias is not [O]");
    bias = node.args[2];
  }
  PendingNode p = make(NodeOp::Conv2d, {node.args[0], node.args[1], bias}, node.outputs[0]);
  p.params[0] = stride[0];
  p.params[1] = stride[1];
  p.params[2] = pad[0];
  p.params[3] = pad[1];
  p.params[4] = dil[0];
  p.params[5] = dil[1];
  p.params[6] = groups;
  p.params[7] = static_cast<int64_t>(Activation::None);
  NodeLowering l = single(p);
  const bool pointwise = kh == 1 && kw == 1 && stride[0] == 1 && stride[1] == 1 && pad[0] == 0 &&
                         pad[1] == 0;
  l.workspace_bytes = 4 * cuda::conv_workspace_floats(static_cast<uint64_t>(c),
                                                      static_cast<uint64_t>(kh),
                                                      static_cast<uint64_t>(kw),
                                                      static_cast<uint64_t>(oh),
                                                      static_cast<uint64_t>(ow),
                                                      static_cast<uint64_t>(groups), pointwise);
  return l;
}

// ---- elementwise ----

NodeLowering lower_binary(const Graph& g, const Node& node, BinaryOp op) {
  const size_t max_args = (op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Div) ? 3 : 2;
  if (node.args.size() < 2 || node.args.size() > max_args) throw Unsupported("binary: arguments");
  const Value& a = f32(g, node.args[0], "a");
  const Value& out = only_output(g, node);
  float alpha = 1.0f;
  if (node.args.size() == 3) {
    if (op == BinaryOp::Div) {
      if (!is_none(g, node.args[2])) throw Unsupported("div: rounding mode");
    } else {
      alpha = static_cast<float>(number(g, node.args[2], "alpha"));
    }
  }
  const Value& bv = value_at(g, node.args[1]);
  if (bv.kind == Value::Kind::Int || bv.kind == Value::Kind::Double) {
    const double s = number(g, node.args[1], "b");
    expect_shape(out, a.sizes, "binary");
    if (op == BinaryOp::Pow) {
      PendingNode p = make(NodeOp::Unary, {node.args[0]}, node.outputs[0]);
      p.params[0] = static_cast<int64_t>(UnaryOp::PowScalar);
      p.fparams[0] = static_cast<float>(s);
      return single(p);
    }
    PendingNode p = make(NodeOp::Binary, {node.args[0], -1}, node.outputs[0]);
    p.params[0] = static_cast<int64_t>(op);
    p.fparams[0] = alpha;
    p.fparams[1] = static_cast<float>(s);
    return single(p);
  }
  const Value& b = f32(g, node.args[1], "b");
  expect_shape(out, broadcast(a.sizes, b.sizes), "binary");
  PendingNode p = make(NodeOp::Binary, {node.args[0], node.args[1]}, node.outputs[0]);
  p.params[0] = static_cast<int64_t>(op);
  p.fparams[0] = alpha;
  return single(p);
}

NodeLowering unary(const Graph& g, const Node& node, UnaryOp op, float f0 = 0.0f,
                   float f1 = 0.0f) {
  const Value& x = f32(g, arg(node, 0, "x"), "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "unary");
  PendingNode p = make(NodeOp::Unary, {node.args[0]}, node.outputs[0]);
  p.params[0] = static_cast<int64_t>(op);
  p.fparams[0] = f0;
  p.fparams[1] = f1;
  return single(p);
}

NodeLowering lower_clamp(const Graph& g, const Node& node, bool hardtanh) {
  if (node.args.size() != 3) throw Unsupported("clamp: expected 3 arguments");
  const float inf = std::numeric_limits<float>::infinity();
  float lo = -inf, hi = inf;
  if (hardtanh || !is_none(g, node.args[1])) lo = static_cast<float>(number(g, node.args[1], "min"));
  if (hardtanh || !is_none(g, node.args[2])) hi = static_cast<float>(number(g, node.args[2], "max"));
  if (std::isnan(lo) || std::isnan(hi)) throw Unsupported("clamp: NaN bound");
  return unary(g, node, UnaryOp::Clamp, lo, hi);
}

// ---- normalisation and reductions ----

NodeLowering lower_softmax(const Graph& g, const Node& node, bool log) {
  if (node.args.size() != 2) throw Unsupported("softmax: expected 2 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "softmax");
  if (x.sizes.empty()) throw Unsupported("softmax: rank 0");
  const int64_t dim = norm_dim(int_of(g, node.args[1], "dim"), x.sizes.size(), "dim");
  if (dim != static_cast<int64_t>(x.sizes.size()) - 1) throw Unsupported("softmax: not the last dim");
  PendingNode p = make(NodeOp::Softmax, {node.args[0]}, node.outputs[0]);
  p.params[0] = log ? 1 : 0;
  return single(p);
}

NodeLowering lower_layer_norm(const Graph& g, const Node& node) {
  if (node.args.size() != 5) throw Unsupported("layer_norm: expected 5 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "layer_norm");
  const std::vector<int64_t> shape = ints_of(g, node.args[1], "normalized_shape");
  if (shape.empty() || shape.size() > x.sizes.size() ||
      !std::equal(shape.begin(), shape.end(), x.sizes.end() - static_cast<long>(shape.size()))) {
    throw Unsupported("layer_norm: normalized_shape is not x's trailing dims");
  }
  const int64_t inner = static_cast<int64_t>(numel(shape));
  int w = -1, b = -1;
  for (int i = 2; i <= 3; ++i) {
    if (is_none(g, node.args[static_cast<size_t>(i)])) continue;
    const Value& t = f32(g, node.args[static_cast<size_t>(i)], i == 2 ? "weight" : "bias");
    if (numel(t.sizes) != static_cast<uint64_t>(inner)) throw Unsupported("layer_norm: affine size");
    (i == 2 ? w : b) = node.args[static_cast<size_t>(i)];
  }
  PendingNode p = make(NodeOp::LayerNorm, {node.args[0], w, b}, node.outputs[0]);
  p.params[0] = inner;
  p.fparams[0] = static_cast<float>(number(g, node.args[4], "eps"));
  return single(p);
}

NodeLowering lower_batch_norm(const Graph& g, const Node& node) {
  if (node.args.size() != 6) throw Unsupported("batch_norm: expected 6 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "batch_norm");
  if (x.sizes.size() < 2) throw Unsupported("batch_norm: x rank below 2");
  const std::vector<int64_t> c{x.sizes[1]};
  std::vector<int> in{node.args[0], -1, -1, node.args[3], node.args[4]};
  for (int i = 1; i <= 4; ++i) {
    if (i <= 2 && is_none(g, node.args[static_cast<size_t>(i)])) continue;
    const Value& t = f32(g, node.args[static_cast<size_t>(i)], "batch_norm parameter");
    if (t.sizes != c) throw Unsupported("batch_norm: a parameter is not [C]");
    in[static_cast<size_t>(i)] = node.args[static_cast<size_t>(i)];
  }
  PendingNode p = make(NodeOp::BatchNorm, in, node.outputs[0]);
  p.fparams[0] = static_cast<float>(number(g, node.args[5], "eps"));
  return single(p);
}

/// sum / mean over a contiguous run of dims.
NodeLowering lower_reduce(const Graph& g, const Node& node, bool mean) {
  if (node.args.size() != 3) throw Unsupported("reduce: expected 3 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  std::vector<int64_t> dims = ints_of(g, node.args[1], "dims");
  const bool keepdim = bool_of(g, node.args[2], "keepdim");
  const size_t rank = x.sizes.size();
  if (dims.empty()) {
    for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
  }
  for (int64_t& d : dims) d = norm_dim(d, rank, "dim");
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) throw Unsupported("reduce: repeated dim");
  if (dims.empty() || dims.back() - dims.front() + 1 != static_cast<int64_t>(dims.size())) {
    throw Unsupported("reduce: dims not one contiguous run");
  }
  int64_t outer = 1, reduce = 1, inner = 1;
  std::vector<int64_t> expect;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t s = x.sizes[d];
    if (static_cast<int64_t>(d) < dims.front()) {
      outer *= s;
      expect.push_back(s);
    } else if (static_cast<int64_t>(d) <= dims.back()) {
      reduce *= s;
      if (keepdim) expect.push_back(1);
    } else {
      inner *= s;
      expect.push_back(s);
    }
  }
  expect_shape(out, expect, "reduce");
  PendingNode p = make(NodeOp::Reduce, {node.args[0]}, node.outputs[0]);
  p.params[0] = outer;
  p.params[1] = reduce;
  p.params[2] = inner;
  p.params[3] = mean ? 1 : 0;
  return single(p);
}

// ---- pooling ----

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return -1;
  int64_t out = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

NodeLowering lower_pool(const Graph& g, const Node& node, bool max) {
  if (node.args.size() != (max ? 6u : 7u)) throw Unsupported("pool: arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 4) throw Unsupported("pool: x not [N, C, H, W]");
  int64_t k[2], s[2], p[2], d[2] = {1, 1};
  pair_of(g, node.args[1], "kernel_size", nullptr, 1, k);
  pair_of(g, node.args[2], "stride", k, 1, s);
  pair_of(g, node.args[3], "padding", nullptr, 0, p);
  bool ceil_mode;
  if (max) {
    pair_of(g, node.args[4], "dilation", nullptr, 1, d);
    ceil_mode = bool_of(g, node.args[5], "ceil_mode");
  } else {
    ceil_mode = bool_of(g, node.args[4], "ceil_mode");
  }
  if (p[0] > k[0] / 2 || p[1] > k[1] / 2) throw Unsupported("pool: padding above half the window");
  const int64_t oh = pool_out(x.sizes[2], k[0], s[0], p[0], d[0], ceil_mode);
  const int64_t ow = pool_out(x.sizes[3], k[1], s[1], p[1], d[1], ceil_mode);
  if (oh < 1 || ow < 1) throw Unsupported("pool: empty output");
  expect_shape(out, {x.sizes[0], x.sizes[1], oh, ow}, "pool");
  PendingNode n = make(max ? NodeOp::MaxPool2d : NodeOp::AvgPool2d, {node.args[0]},
                       node.outputs[0]);
  const int64_t vals[8] = {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
  std::copy(vals, vals + 8, n.params);
  if (!max) {
    n.params[8] = bool_of(g, node.args[5], "count_include_pad") ? 1 : 0;
    if (!is_none(g, node.args[6])) {
      const int64_t div = int_of(g, node.args[6], "divisor_override");
      if (div < 1) throw Unsupported("avg_pool2d: divisor_override below 1");
      n.params[9] = div;
    }
  }
  return single(n);
}

NodeLowering lower_adaptive_avg(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("adaptive_avg_pool2d: arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 4) throw Unsupported("adaptive_avg_pool2d: x not [N, C, H, W]");
  int64_t size[2];
  pair_of(g, node.args[1], "output_size", nullptr, 1, size);
  expect_shape(out, {x.sizes[0], x.sizes[1], size[0], size[1]}, "adaptive_avg_pool2d");
  return single(make(NodeOp::AdaptiveAvgPool2d, {node.args[0]}, node.outputs[0]));
}

// ---- data movement ----

NodeLowering lower_view(const Graph& g, const Node& node) {
  if (node.args.empty()) throw Unsupported("view: no x");
  const Value& xv = value_at(g, node.args[0]);
  const Value& x = tensor_of(g, node.args[0], "x", xv.is_tensor() ? xv.dtype : DType::F32);
  if (!movable_dtype(x.dtype)) throw Unsupported("view: dtype");
  if (x.is_constant) throw Unsupported("view: of a constant");
  const Value& out = only_output(g, node, x.dtype);
  if (numel(out.sizes) != numel(x.sizes)) throw Unsupported("view: element counts differ");
  NodeLowering l;
  l.aliases.push_back({node.outputs[0], node.args[0]});
  return l;
}

NodeLowering lower_permute(const Graph& g, const Node& node, bool transpose) {
  const Value& x = any_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = only_output(g, node, x.dtype);
  const size_t rank = x.sizes.size();
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  if (transpose) {
    if (node.args.size() != 3) throw Unsupported("transpose: arguments");
    if (rank == 0) throw Unsupported("transpose: rank 0");
    const int64_t d0 = norm_dim(int_of(g, node.args[1], "dim0"), rank, "dim0");
    const int64_t d1 = norm_dim(int_of(g, node.args[2], "dim1"), rank, "dim1");
    std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
  } else {
    if (node.args.size() != 2) throw Unsupported("permute: arguments");
    std::vector<int64_t> dims = ints_of(g, node.args[1], "dims");
    if (dims.size() != rank) throw Unsupported("permute: dims");
    std::vector<bool> seen(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      perm[d] = norm_dim(dims[d], rank, "dims");
      if (seen[static_cast<size_t>(perm[d])]) throw Unsupported("permute: repeated dim");
      seen[static_cast<size_t>(perm[d])] = true;
    }
  }
  const std::vector<int64_t> in_strides = row_major_strides(x.sizes);
  std::vector<int64_t> expect(rank), strides(rank);
  for (size_t d = 0; d < rank; ++d) {
    expect[d] = x.sizes[static_cast<size_t>(perm[d])];
    strides[d] = in_strides[static_cast<size_t>(perm[d])];
  }
  expect_shape(out, expect, "permute");
  return single(strided_copy(node.args[0], node.outputs[0], 0, strides));
}

/// flip(x, dims): a strided copy reading each listed dim backwards from its last element
/// (blob version 4).
NodeLowering lower_flip(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("flip: arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const Value& out = only_output(g, node, x.dtype);
  const size_t rank = x.sizes.size();
  std::vector<int64_t> strides = row_major_strides(x.sizes);
  std::vector<bool> seen(rank, false);
  int64_t offset = 0;
  for (int64_t raw : ints_of(g, node.args[1], "dims")) {
    if (rank == 0) throw Unsupported("flip: rank 0");
    const size_t d = static_cast<size_t>(norm_dim(raw, rank, "dims"));
    if (seen[d]) throw Unsupported("flip: repeated dim");
    seen[d] = true;
    offset += (x.sizes[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  expect_shape(out, x.sizes, "flip");
  return single(strided_copy(node.args[0], node.outputs[0], offset, strides));
}

NodeLowering lower_expand(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("expand: arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const Value& out = only_output(g, node, x.dtype);
  const std::vector<int64_t> sizes = ints_of(g, node.args[1], "sizes");
  if (sizes.size() < x.sizes.size()) throw Unsupported("expand: fewer sizes than dims");
  const size_t lead = sizes.size() - x.sizes.size();
  const std::vector<int64_t> in_strides = row_major_strides(x.sizes);
  std::vector<int64_t> expect(sizes.size()), strides(sizes.size(), 0);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d < lead) {
      if (sizes[d] < 1) throw Unsupported("expand: new dim below 1");
      expect[d] = sizes[d];
      continue;
    }
    const int64_t xs = x.sizes[d - lead];
    const int64_t want = sizes[d] == -1 ? xs : sizes[d];
    if (want != xs && xs != 1) throw Unsupported("expand: size mismatch");
    expect[d] = want;
    strides[d] = (xs == 1 && want != 1) ? 0 : in_strides[d - lead];
  }
  expect_shape(out, expect, "expand");
  return single(strided_copy(node.args[0], node.outputs[0], 0, strides));
}

NodeLowering lower_slice(const Graph& g, const Node& node) {
  if (node.args.size() != 5) throw Unsupported("slice: arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const Value& out = only_output(g, node, x.dtype);
  const size_t rank = x.sizes.size();
  if (rank == 0) throw Unsupported("slice: rank 0");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, node.args[1], "dim"), rank, "dim"));
  const int64_t size = x.sizes[dim];
  auto bound = [&](int id, int64_t dflt) {
    if (is_none(g, id)) return dflt;
    int64_t v = int_of(g, id, "slice bound");
    if (v < 0) v = v < -size ? 0 : v + size;
    return std::min(v, size);
  };
  const int64_t start = bound(node.args[2], 0), end = bound(node.args[3], size);
  const int64_t step = int_of(g, node.args[4], "step");
  if (step < 1) throw Unsupported("slice: step below 1");
  const int64_t len = end > start ? (end - start + step - 1) / step : 0;
  if (len < 1) throw Unsupported("slice: empty result");
  std::vector<int64_t> strides = row_major_strides(x.sizes);
  std::vector<int64_t> expect = x.sizes;
  expect[dim] = len;
  expect_shape(out, expect, "slice");
  const int64_t offset = start * strides[dim];
  strides[dim] *= step;
  return single(strided_copy(node.args[0], node.outputs[0], offset, strides));
}

NodeLowering lower_select(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("select: arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const Value& out = only_output(g, node, x.dtype);
  const size_t rank = x.sizes.size();
  if (rank == 0) throw Unsupported("select: rank 0");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, node.args[1], "dim"), rank, "dim"));
  int64_t index = int_of(g, node.args[2], "index");
  if (index < -x.sizes[dim] || index >= x.sizes[dim]) throw Unsupported("select: index out of range");
  if (index < 0) index += x.sizes[dim];
  std::vector<int64_t> strides = row_major_strides(x.sizes);
  const int64_t offset = index * strides[dim];
  std::vector<int64_t> expect = x.sizes;
  expect.erase(expect.begin() + static_cast<long>(dim));
  strides.erase(strides.begin() + static_cast<long>(dim));
  expect_shape(out, expect, "select");
  return single(strided_copy(node.args[0], node.outputs[0], offset, strides));
}

NodeLowering lower_split(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("split: arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const size_t rank = x.sizes.size();
  if (rank == 0) throw Unsupported("split: rank 0");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, node.args[2], "dim"), rank, "dim"));
  std::vector<int64_t> sizes = ints_of(g, node.args[1], "split_sizes");
  if (sizes.size() == 1 && node.outputs.size() != 1) {
    const int64_t chunk = sizes[0];
    if (chunk < 1) throw Unsupported("split: chunk below 1");
    sizes.clear();
    for (int64_t at = 0; at < x.sizes[dim]; at += chunk) sizes.push_back(std::min(chunk, x.sizes[dim] - at));
  }
  if (sizes.size() != node.outputs.size()) throw Unsupported("split: sizes and outputs differ");
  const std::vector<int64_t> strides = row_major_strides(x.sizes);
  NodeLowering l;
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) throw Unsupported("split: empty piece");
    const Value& out = tensor_of(g, node.outputs[i], "output", x.dtype);
    if (out.is_constant || out.is_state) throw Unsupported("split: output is a constant or state");
    std::vector<int64_t> expect = x.sizes;
    expect[dim] = sizes[i];
    expect_shape(out, expect, "split");
    l.nodes.push_back(strided_copy(node.args[0], node.outputs[i], at * strides[dim], strides));
    at += sizes[i];
  }
  if (at != x.sizes[dim]) throw Unsupported("split: sizes do not cover the dim");
  return l;
}

NodeLowering lower_cat(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("cat: arguments");
  const Value& list = value_at(g, node.args[0]);
  if (list.kind != Value::Kind::TensorList) throw Unsupported("cat: not a tensor list");
  if (node.outputs.size() != 1) throw Unsupported("expected one output");
  const Value& out = only_output(g, node, any_tensor(g, node.outputs[0], "output").dtype);
  if (list.tensors.empty() || list.tensors.size() > 1024) {
    throw Unsupported("cat: 1 to 1024 parts taken");
  }
  const size_t rank = out.sizes.size();
  if (rank == 0) throw Unsupported("cat: rank 0");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, node.args[1], "dim"), rank, "dim"));
  int64_t total = 0;
  for (int id : list.tensors) {
    const Value& part = tensor_of(g, id, "cat part", out.dtype);
    if (part.sizes.size() != rank) throw Unsupported("cat: part rank differs");
    for (size_t d = 0; d < rank; ++d) {
      if (d != dim && part.sizes[d] != out.sizes[d]) throw Unsupported("cat: part dims differ");
    }
    total += part.sizes[dim];
  }
  if (total != out.sizes[dim]) throw Unsupported("cat: parts do not sum to the output");
  if (list.tensors.size() == 1) {  // a copy (DenseNet's torch.cat([x], 1))
    return single(strided_copy(list.tensors[0], node.outputs[0], 0, row_major_strides(out.sizes)));
  }
  // Up to 8 parts per Concat node; a longer list is a chain, each link's first part the
  // previous link's result (a temporary).
  NodeLowering l;
  std::vector<int> parts(list.tensors.begin(), list.tensors.end());
  int64_t done = 0;  // the dim's extent of the previous link's result
  int prev = -1;
  size_t at = 0;
  while (at < parts.size()) {
    PendingNode p;
    p.op = NodeOp::Concat;
    p.params[0] = static_cast<int64_t>(dim);
    int64_t extent = done;
    if (prev >= 0) p.inputs.push_back(prev);
    while (at < parts.size() && p.inputs.size() < cuda::kMaxNodeInputs) {
      p.inputs.push_back(parts[at]);
      extent += g.values[static_cast<size_t>(parts[at])].sizes[dim];
      ++at;
    }
    if (at == parts.size()) {
      p.output = node.outputs[0];
    } else {
      TempValue t;
      t.id = kTempBase + static_cast<int>(l.temps.size());
      t.dtype = out.dtype;
      t.sizes = out.sizes;
      t.sizes[dim] = extent;
      l.temps.push_back(t);
      p.output = t.id;
    }
    if (p.inputs.size() < 2) throw Unsupported("cat: a chain link of one part");
    prev = p.output;
    done = extent;
    l.nodes.push_back(p);
  }
  return l;
}

NodeLowering lower_embedding(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("embedding: arguments");
  const Value& w = f32(g, node.args[0], "weight");
  const Value& iv = value_at(g, node.args[1]);
  if (!iv.is_tensor() || (iv.dtype != DType::I64 && iv.dtype != DType::I32)) {
    throw Unsupported("embedding: indices not i64/i32");
  }
  const Value& idx = tensor_of(g, node.args[1], "indices", iv.dtype);
  const Value& out = only_output(g, node);
  if (w.sizes.size() != 2 || idx.sizes.size() + 1 > kMaxRank) throw Unsupported("embedding: shapes");
  std::vector<int64_t> expect = idx.sizes;
  expect.push_back(w.sizes[1]);
  expect_shape(out, expect, "embedding");
  return single(make(NodeOp::Embedding, {node.args[0], node.args[1]}, node.outputs[0]));
}

/// tern::grouped_mm: x [S, K], w [E, K, N] (f32), ends [E] (i64 / i32): GroupedMatmul.
NodeLowering lower_grouped_mm(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("grouped_mm: expected x, w and the group ends");
  const Value& x = f32(g, node.args[0], "x");
  const Value& w = f32(g, node.args[1], "w");
  const Value& ev = value_at(g, node.args[2]);
  if (!ev.is_tensor() || (ev.dtype != DType::I64 && ev.dtype != DType::I32)) {
    throw Unsupported("grouped_mm: the ends are not i64/i32");
  }
  const Value& ends = tensor_of(g, node.args[2], "ends", ev.dtype);
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 2 || w.sizes.size() != 3 || ends.sizes.size() != 1 ||
      w.sizes[1] != x.sizes[1] || ends.sizes[0] != w.sizes[0]) {
    throw Unsupported("grouped_mm: x " + shape_str(x.sizes) + ", w " + shape_str(w.sizes) +
                      ", ends " + shape_str(ends.sizes) + " are not [S, K], [E, K, N], [E]");
  }
  if (w.sizes[0] > 65534) throw Unsupported("grouped_mm: more than 65534 experts");
  expect_shape(out, {x.sizes[0], w.sizes[2]}, "grouped_mm");
  return single(make(NodeOp::GroupedMatmul, {node.args[0], node.args[1], node.args[2]},
                     node.outputs[0]));
}

NodeLowering lower_attention(const Graph& g, const Node& node) {
  if (node.args.size() != 6) throw Unsupported("attention: expected 6 arguments");
  const Value& q = f32(g, node.args[0], "q");
  const Value& k = f32(g, node.args[1], "k");
  const Value& v = f32(g, node.args[2], "v");
  const Value& out = only_output(g, node);
  const size_t rank = q.sizes.size();
  if (rank < 2 || k.sizes.size() != rank || v.sizes.size() != rank) {
    throw Unsupported("attention: q, k, v ranks differ or below 2");
  }
  const std::vector<int64_t> batch_dims(q.sizes.begin(), q.sizes.end() - 2);
  if (!std::equal(batch_dims.begin(), batch_dims.end(), k.sizes.begin()) ||
      !std::equal(batch_dims.begin(), batch_dims.end(), v.sizes.begin())) {
    throw Unsupported("attention: batch dims differ (broadcast not taken)");
  }
  const int64_t l = q.sizes[rank - 2], e = q.sizes[rank - 1];
  const int64_t s = k.sizes[rank - 2], ev = v.sizes[rank - 1];
  if (k.sizes[rank - 1] != e || v.sizes[rank - 2] != s) throw Unsupported("attention: q, k, v dims");
  std::vector<int64_t> expect = batch_dims;
  expect.push_back(l);
  expect.push_back(ev);
  expect_shape(out, expect, "attention");
  const bool causal = bool_of(g, node.args[4], "is_causal");
  const double scale = is_none(g, node.args[5]) ? 1.0 / std::sqrt(static_cast<double>(e))
                                                : number(g, node.args[5], "scale");
  const int64_t batch = static_cast<int64_t>(numel(batch_dims));
  PendingNode p = make(NodeOp::Attention, {node.args[0], node.args[1], node.args[2], -1},
                       node.outputs[0]);
  p.params[0] = batch;
  p.params[1] = l;
  p.params[2] = s;
  p.params[3] = e;
  p.params[4] = ev;
  p.params[5] = causal ? 1 : 0;
  p.params[7] = batch_dims.empty() ? 1 : batch_dims.back();
  p.fparams[0] = static_cast<float>(scale);
  if (!is_none(g, node.args[3])) {
    if (causal) throw Unsupported("attention: a mask with is_causal");
    if (batch_dims.size() > 2) throw Unsupported("attention: a mask with more than 2 batch dims");
    const Value& mv = value_at(g, node.args[3]);
    if (!mv.is_tensor() || (mv.dtype != DType::F32 && mv.dtype != DType::Bool)) {
      throw Unsupported("attention: mask not f32 or bool");
    }
    const Value& m = tensor_of(g, node.args[3], "mask", mv.dtype);
    if (m.sizes.size() > batch_dims.size() + 2) throw Unsupported("attention: mask rank");
    // The mask right-aligned to [outer, inner, L, S]; its broadcast dims get stride 0.
    std::vector<int64_t> full(4 - m.sizes.size(), 1);
    full.insert(full.end(), m.sizes.begin(), m.sizes.end());
    std::vector<int64_t> target(4 - batch_dims.size() - 2, 1);
    target.insert(target.end(), batch_dims.begin(), batch_dims.end());
    target.push_back(l);
    target.push_back(s);
    const std::vector<int64_t> ms = row_major_strides(full);
    for (size_t d = 0; d < 4; ++d) {
      if (full[d] != target[d] && full[d] != 1) throw Unsupported("attention: mask does not broadcast");
      p.params[8 + d] = full[d] == 1 ? 0 : ms[d];
    }
    p.params[6] = static_cast<int64_t>(mv.dtype == DType::Bool ? cuda::MaskKind::Bool
                                                               : cuda::MaskKind::Additive);
    p.inputs[3] = node.args[3];
  }
  NodeLowering lw = single(p);
  lw.workspace_bytes = 4 * static_cast<uint64_t>(batch) * static_cast<uint64_t>(l) *
                       static_cast<uint64_t>(s);
  return lw;
}

// ---- added in blob version 2: norms, resampling, padding, transposed and 1-D convolution,
// masks (compare / logical / where / cast), index_select ----

NodeLowering lower_group_norm(const Graph& g, const Node& node) {
  if (node.args.size() != 5) throw Unsupported("group_norm: expected 5 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "group_norm");
  if (x.sizes.size() < 2) throw Unsupported("group_norm: x not [N, C, *]");
  const int64_t groups = int_of(g, node.args[1], "num_groups");
  if (groups < 1 || x.sizes[1] % groups != 0) throw Unsupported("group_norm: groups do not divide C");
  int w = -1, b = -1;
  for (int i = 2; i <= 3; ++i) {
    if (is_none(g, node.args[static_cast<size_t>(i)])) continue;
    const Value& t = f32(g, node.args[static_cast<size_t>(i)], i == 2 ? "weight" : "bias");
    if (t.sizes != std::vector<int64_t>{x.sizes[1]}) throw Unsupported("group_norm: affine not [C]");
    (i == 2 ? w : b) = node.args[static_cast<size_t>(i)];
  }
  PendingNode p = make(NodeOp::GroupNorm, {node.args[0], w, b}, node.outputs[0]);
  p.params[0] = groups;
  p.fparams[0] = static_cast<float>(number(g, node.args[4], "eps"));
  return single(p);
}

NodeLowering lower_rms_norm(const Graph& g, const Node& node) {
  if (node.args.size() != 4) throw Unsupported("rms_norm: expected 4 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  expect_shape(out, x.sizes, "rms_norm");
  const std::vector<int64_t> shape = ints_of(g, node.args[1], "normalized_shape");
  if (shape.empty() || shape.size() > x.sizes.size() ||
      !std::equal(shape.begin(), shape.end(), x.sizes.end() - static_cast<long>(shape.size()))) {
    throw Unsupported("rms_norm: normalized_shape is not x's trailing dims");
  }
  const int64_t inner = static_cast<int64_t>(numel(shape));
  int w = -1;
  if (!is_none(g, node.args[2])) {
    const Value& t = f32(g, node.args[2], "weight");
    if (numel(t.sizes) != static_cast<uint64_t>(inner)) throw Unsupported("rms_norm: weight size");
    w = node.args[2];
  }
  PendingNode p = make(NodeOp::RmsNorm, {node.args[0], w}, node.outputs[0]);
  p.params[0] = inner;
  // None: f32 machine epsilon (docs/ops.md).
  p.fparams[0] = is_none(g, node.args[3]) ? std::numeric_limits<float>::epsilon()
                                          : static_cast<float>(number(g, node.args[3], "eps"));
  return single(p);
}

/// The portable kernels' source step: 1/scale when a positive scale is given, else in/out.
float upsample_step(const Graph& g, int id, int64_t in, int64_t out) {
  if (!is_none(g, id)) {
    const double scale = number(g, id, "scale");
    if (scale > 0.0) return static_cast<float>(1.0 / scale);
  }
  return static_cast<float>(in) / static_cast<float>(out);
}

NodeLowering lower_upsample(const Graph& g, const Node& node, bool bilinear) {
  if (node.args.size() != (bilinear ? 4u : 3u)) throw Unsupported("upsample: arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 4 || out.sizes.size() != 4 || out.sizes[0] != x.sizes[0] ||
      out.sizes[1] != x.sizes[1]) {
    throw Unsupported("upsample: x and output not [N, C, H, W] of equal N, C");
  }
  const bool align = bilinear && bool_of(g, node.args[1], "align_corners");
  const size_t first_scale = bilinear ? 2 : 1;
  PendingNode p = make(NodeOp::Upsample2d, {node.args[0]}, node.outputs[0]);
  p.params[0] = bilinear ? 1 : 0;
  p.params[1] = align ? 1 : 0;
  for (int a = 0; a < 2; ++a) {
    const int64_t in = x.sizes[2 + a], o = out.sizes[2 + a];
    p.fparams[a] = align ? (o > 1 ? static_cast<float>(in - 1) / static_cast<float>(o - 1) : 0.0f)
                         : upsample_step(g, node.args[first_scale + a], in, o);
  }
  return single(p);
}

NodeLowering lower_pad(const Graph& g, const Node& node) {
  if (node.args.size() != 4) throw Unsupported("pad: expected 4 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& out = only_output(g, node);
  const std::vector<int64_t> pads = ints_of(g, node.args[1], "pad");
  const Value& mode = value_at(g, node.args[2]);
  if (mode.kind != Value::Kind::String) throw Unsupported("pad: mode not a String");
  const bool reflect = mode.string_value == "reflect";
  if (!reflect && mode.string_value != "constant") {
    throw Unsupported("pad: mode '" + mode.string_value + "'");
  }
  const double value = is_none(g, node.args[3]) ? 0.0 : number(g, node.args[3], "value");
  if (reflect && value != 0.0) throw Unsupported("pad: a fill value with reflect");
  const size_t rank = x.sizes.size();
  if (rank == 0 || pads.size() % 2 != 0 || pads.size() / 2 > rank) throw Unsupported("pad: pad list");
  PendingNode p = make(NodeOp::Pad, {node.args[0]}, node.outputs[0]);
  p.params[0] = reflect ? 1 : 0;
  p.fparams[0] = static_cast<float>(value);
  std::vector<int64_t> expect = x.sizes;
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const size_t d = rank - 1 - k;
    const int64_t before = pads[2 * k], after = pads[2 * k + 1];
    if (std::llabs(before) > (1 << 30) || std::llabs(after) > (1 << 30)) throw Unsupported("pad: huge");
    if (reflect && (before < 0 || after < 0 || before >= x.sizes[d] || after >= x.sizes[d])) {
      throw Unsupported("pad: reflect padding not in [0, size)");
    }
    expect[d] = x.sizes[d] + before + after;
    if (expect[d] < 1) throw Unsupported("pad: empty result");
    p.params[1 + d] = before;
  }
  expect_shape(out, expect, "pad");
  return single(p);
}

NodeLowering lower_conv1d(const Graph& g, const Node& node) {
  if (node.args.size() != 7) throw Unsupported("conv1d: expected 7 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& w = f32(g, node.args[1], "weight");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 3 || w.sizes.size() != 3) throw Unsupported("conv1d: x or w not 3-D");
  auto one = [&](int id, const char* what, int64_t min_value) {
    const std::vector<int64_t> v = ints_of(g, id, what);
    if (v.size() != 1 || v[0] < min_value || v[0] > (1 << 20)) {
      throw Unsupported(std::string("conv1d: ") + what + " not one value in range");
    }
    return v[0];
  };
  const int64_t stride = one(node.args[3], "stride", 1), pad = one(node.args[4], "padding", 0);
  const int64_t dil = one(node.args[5], "dilation", 1);
  const int64_t groups = int_of(g, node.args[6], "groups");
  const int64_t n = x.sizes[0], c = x.sizes[1], len = x.sizes[2];
  const int64_t o = w.sizes[0], k = w.sizes[2];
  if (groups < 1 || c % groups != 0 || o % groups != 0 || w.sizes[1] != c / groups) {
    throw Unsupported("conv1d: channels and groups disagree");
  }
  if (len + 2 * pad < dil * (k - 1) + 1) throw Unsupported("conv1d: window larger than the input");
  const int64_t ol = (len + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  expect_shape(out, {n, o, ol}, "conv1d");
  int bias = -1;
  if (!is_none(g, node.args[2])) {
    const Value& b = f32(g, node.args[2], "bias");
    if (b.sizes != std::vector<int64_t>{o}) throw Unsupported("conv1d: bias is not [O]");
    bias = node.args[2];
  }
  PendingNode p = make(NodeOp::Conv2d, {node.args[0], node.args[1], bias}, node.outputs[0]);
  const int64_t vals[8] = {1, stride, 0, pad, 1, dil, groups, 0};
  std::copy(vals, vals + 8, p.params);
  NodeLowering l = single(p);
  const bool pointwise = k == 1 && stride == 1 && pad == 0;
  l.workspace_bytes = 4 * cuda::conv_workspace_floats(
                              static_cast<uint64_t>(c), 1, static_cast<uint64_t>(k), 1,
                              static_cast<uint64_t>(ol), static_cast<uint64_t>(groups), pointwise);
  return l;
}

NodeLowering lower_conv_transpose2d(const Graph& g, const Node& node) {
  if (node.args.size() != 8) throw Unsupported("conv_transpose2d: expected 8 arguments");
  const Value& x = f32(g, node.args[0], "x");
  const Value& w = f32(g, node.args[1], "weight");
  const Value& out = only_output(g, node);
  if (x.sizes.size() != 4 || w.sizes.size() != 4) throw Unsupported("conv_transpose2d: not 4-D");
  int64_t stride[2], pad[2], outpad[2], dil[2];
  pair_of(g, node.args[3], "stride", nullptr, 1, stride);
  pair_of(g, node.args[4], "padding", nullptr, 0, pad);
  pair_of(g, node.args[5], "output_padding", nullptr, 0, outpad);
  const int64_t groups = int_of(g, node.args[6], "groups");
  pair_of(g, node.args[7], "dilation", nullptr, 1, dil);
  const int64_t c = x.sizes[1];
  if (groups < 1 || c % groups != 0 || w.sizes[0] != c) {
    throw Unsupported("conv_transpose2d: channels and groups disagree");
  }
  const int64_t o = w.sizes[1] * groups;
  std::vector<int64_t> expect{x.sizes[0], o, 0, 0};
  for (int a = 0; a < 2; ++a) {
    if (outpad[a] >= stride[a] && outpad[a] >= dil[a]) {
      throw Unsupported("conv_transpose2d: output_padding not below stride or dilation");
    }
    expect[2 + a] = (x.sizes[2 + a] - 1) * stride[a] - 2 * pad[a] + dil[a] * (w.sizes[2 + a] - 1) +
                    outpad[a] + 1;
    if (expect[2 + a] < 1) throw Unsupported("conv_transpose2d: empty output");
  }
  expect_shape(out, expect, "conv_transpose2d");
  int bias = -1;
  if (!is_none(g, node.args[2])) {
    const Value& b = f32(g, node.args[2], "bias");
    if (b.sizes != std::vector<int64_t>{o}) throw Unsupported("conv_transpose2d: bias is not [O]");
    bias = node.args[2];
  }
  PendingNode p = make(NodeOp::ConvTranspose2d, {node.args[0], node.args[1], bias},
                       node.outputs[0]);
  const int64_t vals[9] = {stride[0], stride[1], pad[0], pad[1], outpad[0], outpad[1],
                           dil[0], dil[1], groups};
  std::copy(vals, vals + 9, p.params);
  return single(p);
}

/// The broadcast shape of tensors `shapes`, which must be `out`'s.
void expect_broadcast(const Value& out, const std::vector<std::vector<int64_t>>& shapes,
                      const char* what) {
  std::vector<int64_t> b;
  for (const auto& s : shapes) b = broadcast(b, s);
  expect_shape(out, b, what);
}

/// A scalar operand that is exactly a float (Int, Double or Bool).
float exact_scalar(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  double d;
  if (v.kind == Value::Kind::Bool) {
    d = v.bool_value ? 1.0 : 0.0;
  } else {
    d = number(g, id, what);
  }
  const float f = static_cast<float>(d);
  if (v.kind == Value::Kind::Int && static_cast<double>(f) != d) {
    throw Unsupported(std::string(what) + ": an Int scalar not exact in f32");
  }
  return f;
}

NodeLowering lower_compare(const Graph& g, const Node& node, cuda::CompareOp op, bool logical) {
  if (node.args.size() != 2) throw Unsupported("compare: expected 2 arguments");
  const Value& a = any_tensor(g, node.args[0], "a");
  const Value& out = only_output(g, node, DType::Bool);
  if (logical && a.dtype != DType::Bool) throw Unsupported("logical op on a non-bool tensor");
  PendingNode p = make(NodeOp::Compare, {node.args[0], -1}, node.outputs[0]);
  p.params[0] = static_cast<int64_t>(op);
  const Value& bv = value_at(g, node.args[1]);
  if (bv.is_tensor()) {
    const Value& b = any_tensor(g, node.args[1], "b");
    if (b.dtype != a.dtype) throw Unsupported("compare: a and b of different dtypes");
    expect_broadcast(out, {a.sizes, b.sizes}, "compare");
    p.inputs[1] = node.args[1];
  } else {
    if (logical) throw Unsupported("logical op with a scalar");
    expect_shape(out, a.sizes, "compare");
    p.fparams[0] = exact_scalar(g, node.args[1], "b");
  }
  return single(p);
}

NodeLowering lower_logical_not(const Graph& g, const Node& node) {
  if (node.args.size() != 1) throw Unsupported("logical_not: expected 1 argument");
  const Value& x = tensor_of(g, node.args[0], "x", DType::Bool);
  const Value& out = only_output(g, node, DType::Bool);
  expect_shape(out, x.sizes, "logical_not");
  PendingNode p = make(NodeOp::Compare, {node.args[0], -1}, node.outputs[0]);
  p.params[0] = static_cast<int64_t>(cuda::CompareOp::Eq);  // !x == (x == 0)
  return single(p);
}

NodeLowering lower_where(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("where: expected 3 arguments");
  const Value& cond = tensor_of(g, node.args[0], "cond", DType::Bool);
  const Value& out = only_output(g, node);
  PendingNode p = make(NodeOp::Where, {node.args[0], -1, -1}, node.outputs[0]);
  std::vector<std::vector<int64_t>> shapes{cond.sizes};
  for (int i = 0; i < 2; ++i) {
    const int id = node.args[static_cast<size_t>(1 + i)];
    if (value_at(g, id).is_tensor()) {
      shapes.push_back(f32(g, id, i == 0 ? "a" : "b").sizes);
      p.inputs[static_cast<size_t>(1 + i)] = id;
    } else {
      p.fparams[i] = static_cast<float>(number(g, id, i == 0 ? "a" : "b"));
    }
  }
  expect_broadcast(out, shapes, "where");
  return single(p);
}

NodeLowering lower_cast(const Graph& g, const Node& node) {
  if (node.args.size() != 1) throw Unsupported("cast: expected 1 argument");
  const Value& x = any_tensor(g, node.args[0], "x");
  if (node.outputs.size() != 1) throw Unsupported("expected one output");
  const Value& out = only_output(g, node, any_tensor(g, node.outputs[0], "output").dtype);
  expect_shape(out, x.sizes, "cast");
  return single(make(NodeOp::Cast, {node.args[0]}, node.outputs[0]));
}

NodeLowering lower_index_select(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("index_select: expected 3 arguments");
  const Value& x = any_tensor(g, node.args[0], "x");
  const Value& out = only_output(g, node, x.dtype);
  const Value& iv = value_at(g, node.args[2]);
  if (!iv.is_tensor() || (iv.dtype != DType::I64 && iv.dtype != DType::I32)) {
    throw Unsupported("index_select: index not i64/i32");
  }
  const Value& idx = tensor_of(g, node.args[2], "index", iv.dtype);
  if (idx.sizes.size() != 1) throw Unsupported("index_select: index not 1-D");
  const size_t rank = x.sizes.size();
  if (rank == 0) throw Unsupported("index_select: rank 0");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, node.args[1], "dim"), rank, "dim"));
  std::vector<int64_t> expect = x.sizes;
  expect[dim] = idx.sizes[0];
  expect_shape(out, expect, "index_select");
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= x.sizes[d];
  for (size_t d = dim + 1; d < rank; ++d) inner *= x.sizes[d];
  PendingNode p = make(NodeOp::IndexSelect, {node.args[0], node.args[2]}, node.outputs[0]);
  p.params[0] = outer;
  p.params[1] = x.sizes[dim];
  p.params[2] = inner;
  return single(p);
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

NodeLowering lower_node(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  if (reads_quantized_weight(g, node)) {
    if (op == "tern::grouped_linear") return lower_quant_grouped_linear(g, node);
    return op == "tern::embedding" ? lower_quant_embedding(g, node) : lower_quant_linear(g, node);
  }
  if (op == "tern::linear") return lower_linear(g, node);
  if (op == "tern::matmul") return lower_matmul(g, node, false);
  if (op == "tern::bmm") return lower_matmul(g, node, true);
  if (op == "tern::addmm") return lower_addmm(g, node);
  if (op == "tern::conv2d") return lower_conv2d(g, node);
  if (op == "tern::add") return lower_binary(g, node, BinaryOp::Add);
  if (op == "tern::sub") return lower_binary(g, node, BinaryOp::Sub);
  if (op == "tern::mul") return lower_binary(g, node, BinaryOp::Mul);
  if (op == "tern::div") return lower_binary(g, node, BinaryOp::Div);
  if (op == "tern::pow") return lower_binary(g, node, BinaryOp::Pow);
  if (op == "tern::maximum") return lower_binary(g, node, BinaryOp::Maximum);
  if (op == "tern::minimum") return lower_binary(g, node, BinaryOp::Minimum);
  if (op == "tern::relu") {
    if (node.args.size() != 1) throw Unsupported("relu: arguments");
    return unary(g, node, UnaryOp::Relu);
  }
  if (op == "tern::hardtanh") return lower_clamp(g, node, true);
  if (op == "tern::clamp") return lower_clamp(g, node, false);
  if (op == "tern::gelu") {
    if (node.args.size() > 2) throw Unsupported("gelu: arguments");
    std::string form = "none";
    if (node.args.size() == 2 && !is_none(g, node.args[1])) {
      const Value& a = value_at(g, node.args[1]);
      if (a.kind != Value::Kind::String) throw Unsupported("gelu: approximate not a String");
      form = a.string_value;
    }
    if (form != "none" && form != "tanh") throw Unsupported("gelu: approximate '" + form + "'");
    return unary(g, node, form == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu);
  }
  struct Simple {
    const char* name;
    UnaryOp op;
  };
  static const Simple kSimple[] = {
      {"tern::silu", UnaryOp::Silu},         {"tern::sigmoid", UnaryOp::Sigmoid},
      {"tern::hardswish", UnaryOp::Hardswish}, {"tern::hardsigmoid", UnaryOp::Hardsigmoid},
      {"tern::tanh", UnaryOp::Tanh},         {"tern::exp", UnaryOp::Exp},
      {"tern::log", UnaryOp::Log},           {"tern::sqrt", UnaryOp::Sqrt},
      {"tern::rsqrt", UnaryOp::Rsqrt},       {"tern::neg", UnaryOp::Neg},
      {"tern::abs", UnaryOp::Abs},           {"tern::reciprocal", UnaryOp::Reciprocal},
      {"tern::clone", UnaryOp::Copy},
  };
  for (const Simple& s : kSimple) {
    if (op == s.name) {
      if (node.args.size() != 1) throw Unsupported(op + ": expected 1 argument");
      return unary(g, node, s.op);
    }
  }
  if (op == "tern::softmax") return lower_softmax(g, node, false);
  if (op == "tern::log_softmax") return lower_softmax(g, node, true);
  if (op == "tern::layer_norm") return lower_layer_norm(g, node);
  if (op == "tern::batch_norm") return lower_batch_norm(g, node);
  if (op == "tern::mean") return lower_reduce(g, node, true);
  if (op == "tern::sum") return lower_reduce(g, node, false);
  if (op == "tern::max_pool2d") return lower_pool(g, node, true);
  if (op == "tern::avg_pool2d") return lower_pool(g, node, false);
  if (op == "tern::adaptive_avg_pool2d") return lower_adaptive_avg(g, node);
  if (is_view_op(op)) return lower_view(g, node);
  if (op == "tern::permute") return lower_permute(g, node, false);
  if (op == "tern::transpose") return lower_permute(g, node, true);
  if (op == "tern::flip") return lower_flip(g, node);
  if (op == "tern::expand") return lower_expand(g, node);
  if (op == "tern::slice") return lower_slice(g, node);
  if (op == "tern::select") return lower_select(g, node);
  if (op == "tern::split") return lower_split(g, node);
  if (op == "tern::cat") return lower_cat(g, node);
  if (op == "tern::embedding") return lower_embedding(g, node);
  if (op == "tern::grouped_mm") return lower_grouped_mm(g, node);
  if (op == "tern::scaled_dot_product_attention") return lower_attention(g, node);
  if (op == "tern::group_norm") return lower_group_norm(g, node);
  if (op == "tern::rms_norm") return lower_rms_norm(g, node);
  if (op == "tern::upsample_nearest2d") return lower_upsample(g, node, false);
  if (op == "tern::upsample_bilinear2d") return lower_upsample(g, node, true);
  if (op == "tern::pad") return lower_pad(g, node);
  if (op == "tern::conv1d") return lower_conv1d(g, node);
  if (op == "tern::conv_transpose2d") return lower_conv_transpose2d(g, node);
  struct Cmp {
    const char* name;
    cuda::CompareOp op;
    bool logical;
  };
  static const Cmp kCompare[] = {
      {"tern::eq", cuda::CompareOp::Eq, false}, {"tern::ne", cuda::CompareOp::Ne, false},
      {"tern::lt", cuda::CompareOp::Lt, false}, {"tern::le", cuda::CompareOp::Le, false},
      {"tern::gt", cuda::CompareOp::Gt, false}, {"tern::ge", cuda::CompareOp::Ge, false},
      {"tern::logical_and", cuda::CompareOp::LogicalAnd, true},
      {"tern::logical_or", cuda::CompareOp::LogicalOr, true},
  };
  for (const Cmp& c : kCompare) {
    if (op == c.name) return lower_compare(g, node, c.op, c.logical);
  }
  if (op == "tern::logical_not") return lower_logical_not(g, node);
  if (op == "tern::where") return lower_where(g, node);
  if (op == "tern::cast") return lower_cast(g, node);
  if (op == "tern::index_select") return lower_index_select(g, node);
  throw Unsupported("op not taken by the cuda backend");
}

}  // namespace tern::compiler::cuda_compile
