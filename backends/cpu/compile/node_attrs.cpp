#include "backends/cpu/compile/node_attrs.h"

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>

namespace tern::compiler::cpu_compile {
namespace {

/// Largest attribute XNNPACK takes in a uint32_t parameter (kept well inside).
constexpr int64_t kMaxParam = int64_t{1} << 30;

[[noreturn]] void fail(const std::string& why) { throw Unsupported(why); }

bool same_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return a == b; }

}  // namespace

const Value& value_at(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    fail("value id " + std::to_string(id) + " out of range");
  }
  return g.values[static_cast<size_t>(id)];
}

int arg(const Node& node, size_t index, const char* what) {
  if (index >= node.args.size()) {
    fail(std::string("missing argument ") + std::to_string(index) + " (" + what + ")");
  }
  return node.args[index];
}

const Value& f32_tensor(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  if (!v.is_tensor()) fail(std::string(what) + ": not a tensor");
  if (v.dtype != DType::F32) fail(std::string(what) + ": dtype is not f32");
  if (v.quant.scheme != QuantSpec::Scheme::None) fail(std::string(what) + ": quantized");
  if (v.sizes.empty() || v.sizes.size() > kMaxRank) {
    fail(std::string(what) + ": rank " + std::to_string(v.sizes.size()) + " (1..6 taken)");
  }
  for (int64_t d : v.sizes) {
    if (d < 1) fail(std::string(what) + ": empty or negative dim in " + shape_str(v.sizes));
  }
  return v;
}

const Value& activation_tensor(const Graph& g, int id, const char* what) {
  const Value& v = f32_tensor(g, id, what);
  if (v.is_constant) fail(std::string(what) + ": a constant (expected an activation)");
  return v;
}

const Value& constant_tensor(const Graph& g, int id, const char* what, size_t rank) {
  const Value& v = f32_tensor(g, id, what);
  if (!v.is_constant) fail(std::string(what) + ": not a constant");
  if (v.sizes.size() != rank) {
    fail(std::string(what) + ": rank " + std::to_string(v.sizes.size()) + ", expected " +
         std::to_string(rank));
  }
  uint64_t n = 1;
  for (int64_t d : v.sizes) n *= static_cast<uint64_t>(d);
  if (v.data.size() != n * sizeof(float)) fail(std::string(what) + ": constant byte size");
  return v;
}

const Value& single_output(const Graph& g, const Node& node) {
  if (node.outputs.size() != 1) fail("expected one output");
  const int id = node.outputs[0];
  const Value& v = f32_tensor(g, id, "out");
  if (v.is_constant || v.is_state) fail("out: a constant or state tensor");
  for (int a : node.args) {
    if (a == id) fail("out is also an input (in place)");
  }
  return v;
}

const Value& static_value(const Graph& g, int id, const char* what) {
  const Value& v = value_at(g, id);
  for (int in : g.inputs) {
    if (in == id) fail(std::string(what) + ": a method input (known only at run time)");
  }
  return v;
}

double number(const Graph& g, int id, const char* what) {
  const Value& v = static_value(g, id, what);
  if (v.kind == Value::Kind::Int) return static_cast<double>(v.int_value);
  if (v.kind == Value::Kind::Double) return v.double_value;
  fail(std::string(what) + ": expected an Int or Double");
}

bool scalar_constant(const Graph& g, int id, double* out) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  if (v.kind == Value::Kind::Double) {
    *out = v.double_value;
    return true;
  }
  if (v.kind == Value::Kind::Int) {
    *out = static_cast<double>(v.int_value);
    return true;
  }
  if (v.kind == Value::Kind::Tensor && v.is_constant && v.dtype == DType::F32 &&
      v.data.size() == sizeof(float)) {
    float f;
    std::memcpy(&f, v.data.data(), sizeof(f));
    *out = f;
    return true;
  }
  return false;
}

int64_t int_value(const Graph& g, int id, const char* what) {
  const Value& v = static_value(g, id, what);
  if (v.kind != Value::Kind::Int) fail(std::string(what) + ": expected an Int");
  return v.int_value;
}

bool bool_value(const Graph& g, int id, const char* what) {
  const Value& v = static_value(g, id, what);
  if (v.kind != Value::Kind::Bool) fail(std::string(what) + ": expected a Bool");
  return v.bool_value;
}

bool is_none(const Graph& g, int id) {
  return static_value(g, id, "argument").kind == Value::Kind::None;
}

bool made_by_a_node(const Graph& g, int id) {
  for (const Node& node : g.nodes) {
    for (int o : node.outputs) {
      if (o == id) return true;
    }
  }
  return false;
}

void spatial(const Graph& g, int id, const char* what, const int64_t* empty_default,
             int64_t min_value, int64_t out[2]) {
  const Value& v = static_value(g, id, what);
  if (v.kind == Value::Kind::Int) {
    out[0] = out[1] = v.int_value;
  } else if (v.kind == Value::Kind::IntList) {
    if (v.ints.empty()) {
      if (empty_default == nullptr) fail(std::string(what) + ": empty list");
      out[0] = empty_default[0];
      out[1] = empty_default[1];
    } else if (v.ints.size() == 1 || v.ints.size() == 2) {
      out[0] = v.ints[0];
      out[1] = v.ints[v.ints.size() - 1];
    } else {
      fail(std::string(what) + ": expected 1 or 2 values");
    }
  } else {
    fail(std::string(what) + ": expected an Int or IntList");
  }
  for (int d = 0; d < 2; ++d) {
    if (out[d] < min_value || out[d] > kMaxParam) {
      fail(std::string(what) + ": value " + std::to_string(out[d]) + " out of range");
    }
  }
}

std::vector<float> constant_floats(const Value& v) {
  std::vector<float> f(v.data.size() / sizeof(float));
  if (!f.empty()) std::memcpy(f.data(), v.data.data(), f.size() * sizeof(float));
  return f;
}

bool layout_sensitive(const std::vector<int64_t>& dims) {
  return dims.size() == 4 && dims[1] != 1 && dims[2] * dims[3] != 1;
}

std::vector<uint64_t> xnn_dims(const std::vector<int64_t>& dims) {
  std::vector<uint64_t> x(dims.begin(), dims.end());
  if (dims.size() == 4) {
    x = {static_cast<uint64_t>(dims[0]), static_cast<uint64_t>(dims[2]),
         static_cast<uint64_t>(dims[3]), static_cast<uint64_t>(dims[1])};
  }
  return x;
}

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = dilation * (k - 1) + 1;
  const int64_t padded = in + 2 * pad;
  if (padded < span) return -1;
  return (padded - span) / stride + 1;
}

namespace {

/// The portable kernel's nearest source index (ATen's nearest_idx with its shortcuts; scale as
/// upsample_scale computes it), replicated: the delegate must pick the same rows.
int64_t portable_nearest_index(int64_t o, int64_t in, int64_t out, bool has_scale,
                               double scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float s = has_scale && scale > 0.0 ? static_cast<float>(1.0 / scale)
                                           : static_cast<float>(in) / static_cast<float>(out);
  const int64_t i = static_cast<int64_t>(std::floor(static_cast<float>(o) * s));
  return i < in - 1 ? i : in - 1;
}

/// The x of an upsample node of `num_args` arguments, checked with its output: both
/// [N, C, H, W] of one N and C.
const Value& upsample_input(const Graph& g, const Node& node, const std::string& op,
                            size_t num_args) {
  if (node.args.size() != num_args) {
    fail(op + ": expected " + std::to_string(num_args) + " arguments");
  }
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 4 || out.sizes.size() != 4 || out.sizes[0] != x.sizes[0] ||
      out.sizes[1] != x.sizes[1]) {
    fail(op + ": x and out are not [N, C, H, W] of one N and C");
  }
  return x;
}

}  // namespace

NearestUpsample nearest_upsample(const Graph& g, const Node& node) {
  // x, scale_h, scale_w -> out
  const Value& x = upsample_input(g, node, "upsample_nearest2d", 3);
  const Value& out = single_output(g, node);
  NearestUpsample u;
  bool by_factors = true;
  std::vector<int64_t> k;
  for (size_t d = 2; d < 4; ++d) {
    const int id = node.args[d - 1];
    const bool has = !is_none(g, id);
    const double scale = has ? number(g, id, "scale") : 0.0;
    const int64_t in = x.sizes[d], o = out.sizes[d];
    std::vector<int64_t>& src = d == 2 ? u.rows : u.cols;
    for (int64_t i = 0; i < o; ++i) src.push_back(portable_nearest_index(i, in, o, has, scale));
    const int64_t f = o % in == 0 ? o / in : 0;
    for (int64_t i = 0; i < o && by_factors; ++i) by_factors = f > 0 && src[i] == i / f;
    k.push_back(f);
  }
  if (by_factors) {
    u.factors = k;
  } else if (out.sizes[0] * out.sizes[2] * out.sizes[3] > (int64_t{1} << 24) ||
             x.sizes[0] * x.sizes[1] * x.sizes[2] * x.sizes[3] >= (int64_t{1} << 30)) {
    fail("upsample_nearest2d: " + shape_str(x.sizes) + " to " + shape_str(out.sizes) +
         " by no integer factor: a map of more than 2^24 pixels, or x of 2^30 elements");
  }
  return u;
}

bool bilinear_upsample_align_corners(const Graph& g, const Node& node) {
  // x, align_corners, scale_h, scale_w -> out
  const Value& x = upsample_input(g, node, "upsample_bilinear2d", 4);
  const Value& out = single_output(g, node);
  if (out.sizes[2] > kMaxParam || out.sizes[3] > kMaxParam) fail("upsample_bilinear2d: size");
  const bool align = bool_value(g, node.args[1], "align_corners");
  for (size_t d = 2; d < 4 && !align; ++d) {
    const int id = node.args[d];
    if (is_none(g, id)) continue;
    const double scale = number(g, id, "scale");
    // The portable kernel's source scale (upsample_scale) against XNNPACK's in / out.
    const float portable = scale > 0.0 ? static_cast<float>(1.0 / scale)
                                       : static_cast<float>(x.sizes[d]) /
                                             static_cast<float>(out.sizes[d]);
    if (portable != static_cast<float>(x.sizes[d]) / static_cast<float>(out.sizes[d])) {
      fail("upsample_bilinear2d: a scale factor other than out / in");
    }
  }
  return align;
}

namespace {

/// conv2d (spatial 2) or conv1d (spatial 1, read as a conv2d of height 1: H's stride and
/// dilation 1, no padding).
ConvAttrs conv_nd_attrs(const Graph& g, const Node& node, size_t spatial_rank) {
  // x, w, b, stride, padding, dilation, groups -> out
  const std::string op = spatial_rank == 1 ? "conv1d" : "conv2d";
  if (node.args.size() != 7) fail(op + ": expected 7 arguments");
  const size_t rank = spatial_rank + 2;
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& w = constant_tensor(g, arg(node, 1, "weight"), "weight", rank);
  const Value& out = single_output(g, node);
  if (x.sizes.size() != rank) {
    fail(op + (spatial_rank == 1 ? ": x is not [N, C, L]" : ": x is not [N, C, H, W]"));
  }
  ConvAttrs a{};
  const int64_t one[2] = {1, 1};
  spatial(g, node.args[3], "stride", one, 1, a.stride);
  const Value& pv = static_value(g, node.args[4], "padding");
  if (spatial_rank == 2 && pv.kind == Value::Kind::IntList && pv.ints.size() == 4) {
    // [top, left, bottom, right]: only the cpu backend's own graph writes four (a zero pad
    // folded into the conv, pad_fold.h).
    for (int d = 0; d < 2; ++d) {
      a.pad[d] = pv.ints[static_cast<size_t>(d)];
      a.pad_end[d] = pv.ints[static_cast<size_t>(d) + 2];
      if (a.pad[d] < 0 || a.pad[d] > kMaxParam || a.pad_end[d] < 0 || a.pad_end[d] > kMaxParam) {
        fail("conv2d: padding out of range");
      }
    }
  } else {
    spatial(g, node.args[4], "padding", nullptr, 0, a.pad);
    a.pad_end[0] = a.pad[0];
    a.pad_end[1] = a.pad[1];
  }
  spatial(g, node.args[5], "dilation", one, 1, a.dilation);
  if (spatial_rank == 1) {
    for (int d = 3; d <= 5; ++d) {
      const Value& v = static_value(g, node.args[static_cast<size_t>(d)], "conv1d argument");
      if (v.kind == Value::Kind::IntList && v.ints.size() > 1) {
        fail("conv1d: stride, padding and dilation take one value");
      }
    }
    a.stride[0] = a.dilation[0] = 1;
    a.pad[0] = a.pad_end[0] = 0;
  }
  a.groups = int_value(g, node.args[6], "groups");
  const int64_t n = x.sizes[0], c = x.sizes[1], o = w.sizes[0];
  if (a.groups < 1 || a.groups > kMaxParam || c % a.groups != 0 || o % a.groups != 0) {
    fail(op + ": groups " + std::to_string(a.groups) + " do not divide channels");
  }
  if (w.sizes[1] != c / a.groups) fail(op + ": weight " + shape_str(w.sizes) + " vs x " + shape_str(x.sizes));
  if (!is_none(g, node.args[2])) {
    const Value& b = constant_tensor(g, node.args[2], "bias", 1);
    if (b.sizes[0] != o) fail(op + ": bias size");
  }
  // Each dim's padding both ends as window_out's symmetric pad: the odd one out added to the
  // input instead (window_out(in + e, ..., p) with e = end - start padding).
  auto out_dim = [&](size_t xd, int d) {
    const int64_t extra = a.pad_end[d] - a.pad[d];
    const int64_t lo = std::min(a.pad[d], a.pad_end[d]);
    return window_out(x.sizes[xd] + std::abs(extra), w.sizes[xd], a.stride[d], lo, a.dilation[d]);
  };
  std::vector<int64_t> expect{n, o};
  if (spatial_rank == 2) expect.push_back(out_dim(2, 0));
  expect.push_back(out_dim(rank - 1, 1));
  if (!same_dims(out.sizes, expect)) {
    fail(op + ": out " + shape_str(out.sizes) + " is not " + shape_str(expect));
  }
  a.depthwise = a.groups > 1 && a.groups == c && w.sizes[1] == 1;
  return a;
}

}  // namespace

ConvAttrs conv_attrs(const Graph& g, const Node& node) { return conv_nd_attrs(g, node, 2); }

ConvAttrs conv1d_attrs(const Graph& g, const Node& node) { return conv_nd_attrs(g, node, 1); }

namespace {

/// A conv3d's stride, padding or dilation: an Int, or an IntList of 1 or 3 values, each in
/// [min_value, 2^30].
void spatial3(const Graph& g, int id, const char* what, int64_t min_value, int64_t out[3]) {
  const Value& v = static_value(g, id, what);
  if (v.kind == Value::Kind::Int) {
    out[0] = out[1] = out[2] = v.int_value;
  } else if (v.kind == Value::Kind::IntList && (v.ints.size() == 1 || v.ints.size() == 3)) {
    for (size_t d = 0; d < 3; ++d) out[d] = v.ints[v.ints.size() == 1 ? 0 : d];
  } else {
    fail(std::string("conv3d: ") + what + ": expected an Int or 1 or 3 values");
  }
  for (int d = 0; d < 3; ++d) {
    if (out[d] < min_value || out[d] > kMaxParam) {
      fail(std::string("conv3d: ") + what + ": value " + std::to_string(out[d]) + " out of range");
    }
  }
}

}  // namespace

Conv3dAttrs conv3d_attrs(const Graph& g, const Node& node) {
  // x, w, b, stride, padding, dilation, groups -> out
  if (node.args.size() != 7) fail("conv3d: expected 7 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& w = constant_tensor(g, arg(node, 1, "weight"), "weight", 5);
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 5) fail("conv3d: x is not [N, C, D, H, W]");
  Conv3dAttrs a{};
  spatial3(g, node.args[3], "stride", 1, a.stride);
  spatial3(g, node.args[4], "padding", 0, a.pad);
  spatial3(g, node.args[5], "dilation", 1, a.dilation);
  a.groups = int_value(g, node.args[6], "groups");
  const int64_t c = x.sizes[1], o = w.sizes[0];
  if (a.groups < 1 || a.groups > kMaxParam || c % a.groups != 0 || o % a.groups != 0) {
    fail("conv3d: groups " + std::to_string(a.groups) + " do not divide channels");
  }
  if (w.sizes[1] != c / a.groups) {
    fail("conv3d: weight " + shape_str(w.sizes) + " vs x " + shape_str(x.sizes));
  }
  if (!is_none(g, node.args[2])) {
    const Value& b = constant_tensor(g, node.args[2], "bias", 1);
    if (b.sizes[0] != o) fail("conv3d: bias size");
  }
  std::vector<int64_t> expect{x.sizes[0], o};
  for (size_t d = 0; d < 3; ++d) {
    expect.push_back(window_out(x.sizes[2 + d], w.sizes[2 + d], a.stride[d], a.pad[d],
                                a.dilation[d]));
  }
  if (!same_dims(out.sizes, expect)) {
    fail("conv3d: out " + shape_str(out.sizes) + " is not " + shape_str(expect));
  }
  // The implicit GEMM's K (KD·KH·KW·C/G) and the packed weight must stay in the blob's range.
  if (w.sizes[2] * w.sizes[3] * w.sizes[4] * w.sizes[1] > kMaxParam) fail("conv3d: window too large");
  return a;
}

PoolAttrs pool_attrs(const Graph& g, const Node& node, bool is_max) {
  // max: x, kernel, stride, padding, dilation, ceil_mode -> out
  // avg: x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override -> out
  if (node.args.size() != (is_max ? 6u : 7u)) fail("pool: wrong argument count");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 4) fail("pool: x is not [N, C, H, W]");
  PoolAttrs a{};
  spatial(g, node.args[1], "kernel_size", nullptr, 1, a.kernel);
  spatial(g, node.args[2], "stride", a.kernel, 1, a.stride);
  // [top, left, bottom, right] with bottom >= top and right >= left: only the cpu backend's
  // own graph writes four (a zero pad folded into a max pool, floor mode, pad_fold.h); the
  // bottom / right excess is extra_pad.
  int64_t end_excess[2] = {0, 0};
  const Value& pv = static_value(g, node.args[3], "padding");
  if (is_max && pv.kind == Value::Kind::IntList && pv.ints.size() == 4) {
    for (int d = 0; d < 2; ++d) {
      a.pad[d] = pv.ints[static_cast<size_t>(d)];
      end_excess[d] = pv.ints[static_cast<size_t>(d) + 2] - a.pad[d];
      if (a.pad[d] < 0 || end_excess[d] < 0 || a.pad[d] + end_excess[d] > kMaxParam) {
        fail("max_pool2d: padding out of range");
      }
    }
  } else {
    spatial(g, node.args[3], "padding", nullptr, 0, a.pad);
  }
  a.dilation[0] = a.dilation[1] = 1;
  bool ceil_mode = false;
  if (is_max) {
    const int64_t one[2] = {1, 1};
    spatial(g, node.args[4], "dilation", one, 1, a.dilation);
    ceil_mode = bool_value(g, node.args[5], "ceil_mode");
  } else {
    ceil_mode = bool_value(g, node.args[4], "ceil_mode");
    const bool count_include_pad = bool_value(g, node.args[5], "count_include_pad");
    if (!is_none(g, node.args[6])) fail("avg_pool2d: divisor_override");
    // XNNPACK divides by the number of input pixels in the window (padding not counted), so
    // padding that counts becomes zeros in the input (lowered as a constant pad first).
    a.zero_pad_first = (a.pad[0] > 0 || a.pad[1] > 0) && count_include_pad;
  }
  a.subsample = a.kernel[0] * a.kernel[1] == 1;
  for (int d = 0; d < 2; ++d) {
    if (2 * a.pad[d] > a.kernel[d]) fail("pool: padding over half the window");
  }
  // ceil_mode: PyTorch's size is ceil((in + 2p - span) / s) + 1, one less when the last window
  // would start in the right/bottom padding. XNNPACK has no ceil mode, so the extra windows come
  // from extra bottom/right padding. That is exact for max pooling (XNNPACK's padded taps repeat
  // an edge pixel, which never changes the max; every window starts inside the input or the left
  // padding, so it holds an input pixel) and for average pooling as taken here (no padding, or
  // count_include_pad=False): PyTorch then divides by the window's pixels inside the input
  // (with no padding, count_include_pad's clip to in + 2p = in counts the same pixels), which is
  // what XNNPACK's pixelwise average pooling (used whenever any padding is non-zero) divides by.
  // With count_include_pad=True and padding, the padding is zeros in a padded input (in + 2p
  // pixels): PyTorch divides by the window clipped to in + p at the end, i.e. to the padded
  // input, which is again what XNNPACK's pool over the padded input divides by.
  int64_t osz[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.sizes[2 + d];
    const int64_t span = a.dilation[d] * (a.kernel[d] - 1) + 1;
    const int64_t padded = in + 2 * a.pad[d] + end_excess[d];
    if (padded < span) fail("pool: window larger than the padded input");
    int64_t o = (padded - span) / a.stride[d] + 1;
    a.extra_pad[d] = end_excess[d];
    if (ceil_mode) {
      int64_t oc = (padded - span + a.stride[d] - 1) / a.stride[d] + 1;
      if ((oc - 1) * a.stride[d] >= in + a.pad[d]) --oc;
      if (oc > o) {
        a.extra_pad[d] = (oc - 1) * a.stride[d] + span - padded;
        o = oc;
      }
    }
    osz[d] = o;
  }
  if (!same_dims(out.sizes, {x.sizes[0], x.sizes[1], osz[0], osz[1]})) {
    fail("pool: out " + shape_str(out.sizes) + " is not " +
         shape_str({x.sizes[0], x.sizes[1], osz[0], osz[1]}));
  }
  return a;
}

std::vector<int> concat_inputs(const Graph& g, const Node& node) {
  // tensors, dim -> out
  if (node.args.size() != 2) fail("cat: expected 2 arguments");
  const Value& list = g.values[static_cast<size_t>(arg(node, 0, "tensors"))];
  if (list.kind != Value::Kind::TensorList) fail("cat: tensors is not a tensor list");
  if (list.tensors.empty()) fail("cat: no tensors");
  const Value& out = single_output(g, node);
  const int64_t rank = static_cast<int64_t>(out.sizes.size());
  int64_t dim = int_value(g, node.args[1], "dim");
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) fail("cat: dim " + std::to_string(dim) + " out of range");
  std::vector<int64_t> expect;
  bool any_activation = false;
  for (const int id : list.tensors) {
    const Value& x = f32_tensor(g, id, "cat input");
    any_activation = any_activation || !x.is_constant;
    if (static_cast<int64_t>(x.sizes.size()) != rank) fail("cat: inputs of another rank");
    if (expect.empty()) {
      expect = x.sizes;
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        if (d != dim && x.sizes[static_cast<size_t>(d)] != expect[static_cast<size_t>(d)]) {
          fail("cat: input " + shape_str(x.sizes) + " does not match " + shape_str(expect));
        }
      }
      expect[static_cast<size_t>(dim)] += x.sizes[static_cast<size_t>(dim)];
    }
  }
  if (!same_dims(out.sizes, expect)) fail("cat: out " + shape_str(out.sizes) + " is not " + shape_str(expect));
  if (!any_activation) fail("cat: of constants only");
  // The first Concat node of a chain takes up to 3 parts; one of them must be data.
  bool first_data = false;
  for (size_t i = 0; i < list.tensors.size() && i < 3; ++i) {
    first_data = first_data || !g.values[static_cast<size_t>(list.tensors[i])].is_constant;
  }
  if (!first_data) fail("cat: its first three parts are constants");
  return list.tensors;
}

BatchNormAffine batch_norm_affine(const Graph& g, const Node& node) {
  // x, weight?, bias?, running_mean, running_var, eps -> out
  if (node.args.size() != 6) fail("batch_norm: expected 6 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (x.sizes.size() < 2 || x.sizes.size() > 4) fail("batch_norm: x rank (2..4 taken)");
  if (out.sizes != x.sizes) fail("batch_norm: out shape differs from x");
  const int64_t c = x.sizes[1];
  auto param = [&](int id, const char* what, bool optional) -> std::vector<float> {
    if (optional && is_none(g, id)) return {};
    const Value& v = constant_tensor(g, id, what, 1);
    if (v.sizes[0] != c) fail(std::string("batch_norm: ") + what + " size");
    return constant_floats(v);
  };
  const std::vector<float> w = param(node.args[1], "weight", true);
  const std::vector<float> b = param(node.args[2], "bias", true);
  const std::vector<float> mean = param(node.args[3], "running_mean", false);
  const std::vector<float> var = param(node.args[4], "running_var", false);
  const double eps = number(g, node.args[5], "eps");
  BatchNormAffine a;
  for (int64_t ch = 0; ch < c; ++ch) {
    const size_t i = static_cast<size_t>(ch);
    const double scale = (w.empty() ? 1.0 : w[i]) / std::sqrt(static_cast<double>(var[i]) + eps);
    if (!std::isfinite(scale)) fail("batch_norm: running_var + eps is not positive");
    a.scale.push_back(static_cast<float>(scale));
    a.shift.push_back(static_cast<float>((b.empty() ? 0.0 : b[i]) - mean[i] * scale));
  }
  return a;
}

ChannelAffineBinary channel_affine_binary(const Graph& g, const Node& node, double alpha) {
  ChannelAffineBinary r;
  const std::string& op = node.op;
  if (op != "tern::add" && op != "tern::sub" && op != "tern::mul" && op != "tern::div") return r;
  if (node.args.size() < 2 || node.outputs.size() != 1) return r;
  const auto tensor = [&](int id) -> const Value& { return g.values[static_cast<size_t>(id)]; };
  const Value& a = tensor(node.args[0]);
  const Value& b = tensor(node.args[1]);
  const bool x_first = !a.is_constant;
  const Value& x = x_first ? a : b;
  const Value& k = x_first ? b : a;
  const Value& out = tensor(node.outputs[0]);
  if (!x.is_tensor() || !k.is_tensor() || x.is_constant || !k.is_constant) return r;
  if (x.dtype != DType::F32 || k.dtype != DType::F32 || out.sizes != x.sizes || x.sizes.size() != 4) return r;
  const int64_t c = x.sizes[1];
  if (c < 2 || k.sizes.size() < 3 || k.sizes.size() > 4 || k.data.size() != static_cast<size_t>(c) * 4) return r;
  for (size_t d = 0; d < k.sizes.size(); ++d) {  // [1,] C, 1, 1
    if (k.sizes[d] != (d + 3 == k.sizes.size() ? c : 1)) return r;
  }
  if (op == "tern::div" && !x_first) return r;  // k / x is not affine
  const std::vector<float> kv = constant_floats(k);
  std::vector<float>& scale = r.affine.scale;
  std::vector<float>& shift = r.affine.shift;
  scale.assign(static_cast<size_t>(c), 1.0f);
  shift.assign(static_cast<size_t>(c), 0.0f);
  for (size_t i = 0; i < kv.size(); ++i) {
    const double v = kv[i];
    if (op == "tern::mul") {
      scale[i] = kv[i];
    } else if (op == "tern::div") {
      scale[i] = static_cast<float>(1.0 / v);
    } else if (op == "tern::add") {  // x + alpha k, or k + alpha x
      if (x_first) shift[i] = static_cast<float>(alpha * v); else { scale[i] = static_cast<float>(alpha); shift[i] = kv[i]; }
    } else {  // x - alpha k, or k - alpha x
      if (x_first) shift[i] = static_cast<float>(-alpha * v); else { scale[i] = static_cast<float>(-alpha); shift[i] = kv[i]; }
    }
  }
  r.x = x_first ? node.args[0] : node.args[1];
  return r;
}

namespace {

/// A norm's weight (arg 2), bias (arg 3) and eps (arg 4): gamma / beta the constants [c], or
/// ones / zeros where None; eps a finite number > 0. `op` names the node in refusals.
void norm_affine_attrs(const Graph& g, const Node& node, int64_t c, const std::string& op,
                       std::vector<float>* gamma, std::vector<float>* beta, float* eps) {
  gamma->assign(static_cast<size_t>(c), 1.0f);
  beta->assign(static_cast<size_t>(c), 0.0f);
  if (!is_none(g, node.args[2])) {
    const Value& w = constant_tensor(g, node.args[2], "weight", 1);
    if (w.sizes[0] != c) fail(op + ": weight size");
    *gamma = constant_floats(w);
  }
  if (!is_none(g, node.args[3])) {
    const Value& b = constant_tensor(g, node.args[3], "bias", 1);
    if (b.sizes[0] != c) fail(op + ": bias size");
    *beta = constant_floats(b);
  }
  const double e = number(g, node.args[4], "eps");
  if (!(static_cast<float>(e) > 0.0f) || !std::isfinite(static_cast<float>(e))) {
    fail(op + ": eps");
  }
  *eps = static_cast<float>(e);
}

}  // namespace

LayerNormAttrs layer_norm_attrs(const Graph& g, const Node& node) {
  // x, normalized_shape, weight?, bias?, eps -> out
  if (node.args.size() != 5) fail("layer_norm: expected 5 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (out.sizes != x.sizes) fail("layer_norm: out shape differs from x");
  const int64_t c = x.sizes.back();
  const Value& shape = static_value(g, node.args[1], "normalized_shape");
  if (shape.kind != Value::Kind::IntList || shape.ints != std::vector<int64_t>{c}) {
    fail("layer_norm: not over the last dim alone");
  }
  LayerNormAttrs a;
  norm_affine_attrs(g, node, c, "layer_norm", &a.gamma, &a.beta, &a.eps);
  return a;
}

LayerNormAttrs rms_norm_attrs(const Graph& g, const Node& node) {
  // x, normalized_shape, weight?, eps? -> out (eps None: f32's machine epsilon, as ATen)
  if (node.args.size() != 4) fail("rms_norm: expected 4 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (out.sizes != x.sizes) fail("rms_norm: out shape differs from x");
  const int64_t c = x.sizes.back();
  const Value& shape = static_value(g, node.args[1], "normalized_shape");
  if (shape.kind != Value::Kind::IntList || shape.ints != std::vector<int64_t>{c}) {
    fail("rms_norm: not over the last dim alone");
  }
  LayerNormAttrs a;
  a.gamma.assign(static_cast<size_t>(c), 1.0f);
  a.beta.assign(static_cast<size_t>(c), 0.0f);
  if (!is_none(g, node.args[2])) {
    const Value& w = constant_tensor(g, node.args[2], "weight", 1);
    if (w.sizes[0] != c) fail("rms_norm: weight size");
    a.gamma = constant_floats(w);
  }
  const double e = is_none(g, node.args[3]) ? static_cast<double>(FLT_EPSILON)
                                            : number(g, node.args[3], "eps");
  if (!(static_cast<float>(e) > 0.0f) || !std::isfinite(static_cast<float>(e))) {
    fail("rms_norm: eps");
  }
  a.eps = static_cast<float>(e);
  return a;
}

GroupNormAttrs group_norm_attrs(const Graph& g, const Node& node) {
  // x, num_groups, weight?, bias?, eps -> out
  if (node.args.size() != 5) fail("group_norm: expected 5 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (x.sizes.size() < 3 || x.sizes.size() > 5) {
    fail("group_norm: x is not [N, C, L], [N, C, H, W] nor [N, C, D, H, W]");
  }
  if (out.sizes != x.sizes) fail("group_norm: out shape differs from x");
  const int64_t c = x.sizes[1];
  GroupNormAttrs a;
  a.groups = int_value(g, node.args[1], "num_groups");
  if (a.groups < 1 || c % a.groups != 0) fail("group_norm: num_groups does not divide C");
  norm_affine_attrs(g, node, c, "group_norm", &a.gamma, &a.beta, &a.eps);
  return a;
}

float leaky_relu_slope(const Graph& g, const Node& node) {
  if (node.args.size() != 2) fail("leaky_relu: expected 2 arguments");
  const double slope = number(g, node.args[1], "negative_slope");
  if (!std::isfinite(slope) || slope < 0.0) fail("leaky_relu: a negative or non-finite slope");
  return static_cast<float>(slope);
}

void clamp_bounds(const Graph& g, const Node& node, float* lo, float* hi) {
  const float inf = std::numeric_limits<float>::infinity();
  double l = -inf, h = inf;
  if (node.op == "tern::relu") {
    if (node.args.size() != 1) fail("relu: expected 1 argument");
    l = 0.0;
  } else if (node.op == "tern::hardtanh") {
    if (node.args.size() != 3) fail("hardtanh: expected 3 arguments");
    l = number(g, node.args[1], "min_val");
    h = number(g, node.args[2], "max_val");
  } else {  // clamp
    if (node.args.size() < 1 || node.args.size() > 3) fail("clamp: expected 1 to 3 arguments");
    if (node.args.size() > 1 && !is_none(g, node.args[1])) l = number(g, node.args[1], "min");
    if (node.args.size() > 2 && !is_none(g, node.args[2])) h = number(g, node.args[2], "max");
  }
  if (std::isnan(l) || std::isnan(h) || !(l <= h)) fail("clamp: bounds not ordered");
  *lo = static_cast<float>(l);
  *hi = static_cast<float>(h);
}

void pad_amounts(const Graph& g, const Node& node, size_t rank, std::vector<int64_t>* pre,
                 std::vector<int64_t>* post, float* value, bool* reflect) {
  // x, pad, mode, value -> out
  if (node.args.size() != 4) fail("pad: expected 4 arguments");
  const Value& p = static_value(g, node.args[1], "pad");
  if (p.kind != Value::Kind::IntList || p.ints.size() % 2 != 0 || p.ints.size() > 2 * rank) {
    fail("pad: pad list");
  }
  const Value& mode = static_value(g, node.args[2], "mode");
  if (mode.kind != Value::Kind::String ||
      (mode.string_value != "constant" && mode.string_value != "reflect")) {
    fail("pad: mode is neither \"constant\" nor \"reflect\"");
  }
  *reflect = mode.string_value == "reflect";
  double v = 0.0;
  if (!*reflect && !is_none(g, node.args[3])) v = number(g, node.args[3], "value");
  pre->assign(rank, 0);
  post->assign(rank, 0);
  for (size_t i = 0; i < p.ints.size() / 2; ++i) {
    const int64_t a = p.ints[2 * i], b = p.ints[2 * i + 1];
    if (a < 0 || b < 0 || a > kMaxParam || b > kMaxParam) fail("pad: negative or huge pad");
    (*pre)[rank - 1 - i] = a;
    (*post)[rank - 1 - i] = b;
  }
  *value = static_cast<float>(v);
}

double binary_alpha(const Graph& g, const Node& node) {
  const bool has_alpha = node.op == "tern::add" || node.op == "tern::sub";  // not max / min
  const size_t max_args = (has_alpha || node.op == "tern::div") ? 3 : 2;
  if (node.args.size() < 2 || node.args.size() > max_args) fail("binary: argument count");
  double alpha = 1.0;
  if (node.args.size() == 3) {
    if (has_alpha) {
      alpha = number(g, node.args[2], "alpha");
    } else if (!is_none(g, node.args[2])) {
      fail("div: rounding_mode");
    }
  }
  const Value& out = single_output(g, node);
  const size_t r = out.sizes.size();
  bool any_activation = false;
  std::vector<int64_t> bcast(r, 1);
  for (int k = 0; k < 2; ++k) {
    const Value& v = value_at(g, node.args[k]);
    const char* what = k == 0 ? "a" : "b";
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Double) {
      if (k == 0) fail("binary: a is a scalar");
      static_value(g, node.args[k], what);
      continue;
    }
    // A 0-D f32 constant (DeBERTa's scores / sqrt(d · factor) as a tensor, DiffLlama's λ
    // times the second attention map) is a scalar too: binary_operand broadcasts its one value
    // like any constant, on either side.
    if (v.is_tensor() && v.is_constant && v.sizes.empty() && v.dtype == DType::F32 &&
        v.quant.scheme == QuantSpec::Scheme::None) {
      continue;
    }
    f32_tensor(g, node.args[k], what);
    const size_t vr = v.sizes.size();
    if (vr > r) fail("binary: operand rank above out rank");
    for (size_t i = 0; i < vr; ++i) {
      const int64_t d = v.sizes[i];
      int64_t& o = bcast[r - vr + i];
      if (d != 1) {
        if (o != 1 && o != d) fail("binary: operands do not broadcast");
        o = d;
      }
    }
    if (!v.is_constant) {
      any_activation = true;
      // An activation keeps the layout of its own rank: NHWC at rank 4, plain otherwise.
      if ((vr == 4) != (r == 4)) fail("binary: activation rank differs across the NHWC rule");
    }
  }
  if (!any_activation) fail("binary: no activation operand");
  if (alpha != 1.0) {  // folded into a constant or scalar b at compile time
    const Value& b = value_at(g, node.args[1]);
    if (b.is_tensor() && !b.is_constant) fail("binary: alpha with an activation b");
  }
  if (bcast != out.sizes) fail("binary: out " + shape_str(out.sizes) + " is not the broadcast");
  return alpha;
}

UnaryMathAttrs unary_math_attrs(const Graph& g, const Node& node) {
  UnaryMathAttrs a;
  const bool softplus = node.op == "tern::softplus";
  if (node.op == "tern::sin") a.fn = 3;
  if (node.op == "tern::cos") a.fn = 4;
  if (node.op == "tern::log") a.fn = 5;
  if (node.op == "tern::expm1") a.fn = 6;
  if (node.op == "tern::log1p") a.fn = 7;
  if (node.op == "tern::acos") a.fn = 8;
  if (node.op == "tern::asin") a.fn = 9;
  if (node.op == "tern::atan") a.fn = 10;
  if (!softplus && node.op != "tern::exp" && a.fn == 1) {
    throw Unsupported("not exp, softplus, sin, cos, log, expm1, log1p, acos, asin or atan");
  }
  if (node.args.empty() || node.args.size() > (softplus ? 3u : 1u)) {
    throw Unsupported(node.op + ": expected " + (softplus ? "1 to 3 arguments" : "1 argument"));
  }
  const Value& x = activation_tensor(g, node.args[0], "x");
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("out shape differs from x");
  if (!softplus) return a;
  a.fn = 2;
  if (node.args.size() > 1 && !is_none(g, node.args[1])) {
    a.beta = static_cast<float>(number(g, node.args[1], "beta"));
  }
  if (node.args.size() > 2 && !is_none(g, node.args[2])) {
    a.threshold = static_cast<float>(number(g, node.args[2], "threshold"));
  }
  if (!std::isfinite(a.beta) || a.beta == 0.0f || !std::isfinite(a.threshold)) {
    throw Unsupported("softplus: beta must be finite and non-zero, threshold finite");
  }
  return a;
}

int64_t cumsum_dim(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("cumsum: expected 2 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  if (single_output(g, node).sizes != x.sizes) throw Unsupported("out shape differs from x");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  int64_t d = int_value(g, node.args[1], "dim");
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) throw Unsupported("cumsum: dim out of range");
  return d;
}

bool gelu_tanh_form(const Graph& g, const Node& node) {
  if (node.args.empty() || node.args.size() > 2) {
    throw Unsupported("gelu: expected 1 or 2 arguments");
  }
  if (node.args.size() == 1 || node.args[1] < 0) return false;
  const Value& a = g.values[static_cast<size_t>(node.args[1])];
  if (a.kind == Value::Kind::None) return false;
  if (a.kind != Value::Kind::String || (a.string_value != "none" && a.string_value != "tanh")) {
    throw Unsupported("gelu: approximate is not \"none\" or \"tanh\"");
  }
  return a.string_value == "tanh";
}

bool global_mean_keepdim(const Graph& g, const Node& node) {
  // x, dims, keepdim -> out
  if (node.args.size() != 3) fail("mean: expected 3 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 4) fail("mean: x is not [N, C, H, W]");
  const Value& dims = static_value(g, node.args[1], "dims");
  if (dims.kind != Value::Kind::IntList || dims.ints.size() != 2) fail("mean: not over 2 dims");
  bool seen[4] = {false, false, false, false};
  for (int64_t d : dims.ints) {
    if (d < 0) d += 4;
    if (d < 2 || d > 3 || seen[d]) fail("mean: not over the spatial dims (2, 3)");
    seen[d] = true;
  }
  const bool keepdim = bool_value(g, node.args[2], "keepdim");
  const std::vector<int64_t> expect = keepdim ? std::vector<int64_t>{x.sizes[0], x.sizes[1], 1, 1}
                                              : std::vector<int64_t>{x.sizes[0], x.sizes[1]};
  if (out.sizes != expect) fail("mean: out shape");
  return keepdim;
}

bool is_cpu_view_op(const std::string& op) {
  return op == "tern::reshape" || op == "tern::view" || op == "tern::flatten" ||
         op == "tern::squeeze" || op == "tern::unsqueeze";
}

}  // namespace tern::compiler::cpu_compile
