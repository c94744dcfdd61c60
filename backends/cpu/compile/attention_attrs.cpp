#include "backends/cpu/compile/attention_attrs.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

/// Same rank >= 2 and the same dims but the last two.
bool same_batch(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size() || a.size() < 2) return false;
  for (size_t i = 0; i + 2 < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

void check_batch_matmul(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("expected 2 arguments");
  // Either operand may be a constant, not both: b (XLNet's and Funnel's relative-position
  // products: a different matrix per batch entry; one matrix repeated is a linear already, from
  // the exporter) or a (Mask2Former's learned queries times the pixel embeddings, folded by the
  // exporter before the first decoder layer).
  const Value& a = f32_tensor(g, node.args[0], "a");
  const Value& b = f32_tensor(g, node.args[1], "b");
  if (a.is_constant && b.is_constant) throw Unsupported("a and b: both constants");
  if ((a.is_constant && a.quant.scheme != QuantSpec::Scheme::None) ||
      (b.is_constant && b.quant.scheme != QuantSpec::Scheme::None)) {
    throw Unsupported(std::string(a.is_constant ? "a" : "b") + ": a quantized constant");
  }
  const Value& out = single_output(g, node);
  if (!same_batch(a.sizes, b.sizes)) {
    throw Unsupported("operands " + shape_str(a.sizes) + " and " + shape_str(b.sizes) +
                      " (one rank >= 2, the same batch dims, no broadcasting)");
  }
  const size_t r = a.sizes.size();
  if (a.sizes[r - 1] != b.sizes[r - 2]) throw Unsupported("inner dims differ");
  std::vector<int64_t> expect = a.sizes;
  expect[r - 1] = b.sizes[r - 1];
  if (out.sizes != expect) throw Unsupported("out shape");
}

SdpaAttrs sdpa_attrs(const Graph& g, const Node& node) {
  if (node.args.size() != 6)
    throw Unsupported("scaled_dot_product_attention: expected 6 arguments");
  // q may be a constant (DETR's first decoder layer: learned object queries over an all-zero
  // target, its projection folded by the exporter); k and v are activations.
  const Value& q = f32_tensor(g, node.args[0], "q");
  if (q.is_constant && q.quant.scheme != QuantSpec::Scheme::None) {
    throw Unsupported("q: a quantized constant");
  }
  const Value& k = activation_tensor(g, node.args[1], "k");
  const Value& v = activation_tensor(g, node.args[2], "v");
  const Value& out = single_output(g, node);
  const size_t r = q.sizes.size();
  SdpaAttrs a;
  if (r >= 3 && k.sizes.size() == r && v.sizes.size() == r && q.sizes[r - 3] > 1 &&
      k.sizes[r - 3] == 1 && v.sizes[r - 3] == 1) {
    a.group = q.sizes[r - 3];
  }
  // k and v as the batched products see them: the group dim broadcast when grouped.
  std::vector<int64_t> kb = k.sizes, vb = v.sizes;
  if (a.group != 0) kb[r - 3] = vb[r - 3] = a.group;
  if (!same_batch(q.sizes, kb) || !same_batch(q.sizes, vb) || q.sizes[r - 1] != k.sizes[r - 1] ||
      k.sizes[r - 2] != v.sizes[r - 2]) {
    throw Unsupported("scaled_dot_product_attention: q " + shape_str(q.sizes) + ", k " +
                      shape_str(k.sizes) + ", v " + shape_str(v.sizes) +
                      " (one rank >= 2, the same batch dims, no broadcasting but k and v "
                      "shared by a group of query heads)");
  }
  std::vector<int64_t> expect = q.sizes;
  expect[r - 1] = v.sizes[r - 1];
  if (out.sizes != expect) throw Unsupported("scaled_dot_product_attention: out shape");
  const int64_t l = q.sizes[r - 2], s = k.sizes[r - 2];
  const bool causal = bool_value(g, node.args[4], "is_causal");
  a.scale = is_none(g, node.args[5])
                ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.sizes[r - 1])))
                : static_cast<float>(number(g, node.args[5], "scale"));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (causal) {
    if (!is_none(g, node.args[3])) {
      throw Unsupported("scaled_dot_product_attention: is_causal with a mask");
    }
    a.causal = true;
    a.bias_dims.assign(r, 1);
    a.bias_dims[r - 2] = l;
    a.bias_dims[r - 1] = s;
    a.bias.resize(static_cast<size_t>(l * s));
    for (int64_t i = 0; i < l; ++i) {  // top-left aligned: row i attends keys 0..i
      for (int64_t j = 0; j < s; ++j)
        a.bias[static_cast<size_t>(i * s + j)] = j <= i ? 0.0f : kNegInf;
    }
    return a;
  }
  if (is_none(g, node.args[3])) return a;
  const Value& m = value_at(g, node.args[3]);
  if (m.is_tensor() && !m.is_constant && m.dtype == DType::F32) {
    // An activation: the node reads it per head (batch dims of the scores' or 1), per query row
    // (L or 1) and key (S). A row it masks whole gives zeros, as the portable kernel's.
    if (m.sizes.size() > r || r - 2 > 4) {
      throw Unsupported("scaled_dot_product_attention: an activation mask of rank " +
                        std::to_string(m.sizes.size()) + " for scores of rank " +
                        std::to_string(r) + " (at most 4 batch dims)");
    }
    a.bias_dims.assign(r - m.sizes.size(), 1);
    a.bias_dims.insert(a.bias_dims.end(), m.sizes.begin(), m.sizes.end());
    for (size_t i = 0; i + 2 < r; ++i) {
      if (a.bias_dims[i] != 1 && a.bias_dims[i] != q.sizes[i]) {
        throw Unsupported("scaled_dot_product_attention: mask " + shape_str(m.sizes) +
                          " does not broadcast over the heads of q " + shape_str(q.sizes));
      }
    }
    if ((a.bias_dims[r - 2] != 1 && a.bias_dims[r - 2] != l) || a.bias_dims[r - 1] != s) {
      throw Unsupported("scaled_dot_product_attention: an activation mask " +
                        shape_str(m.sizes) + " is not [.., L or 1, S]");
    }
    // Grouped query heads fold into the rows (G * L of them): a mask row per folded row (its
    // [G, L] rows in order: Doge's per-head dynamic mask) or one for all, the same bytes.
    if (a.group != 0 && !(a.bias_dims[r - 3] == a.group && a.bias_dims[r - 2] == l) &&
        !(a.bias_dims[r - 3] == 1 && a.bias_dims[r - 2] == 1)) {
      throw Unsupported("scaled_dot_product_attention: an activation mask " +
                        shape_str(m.sizes) + " over grouped query heads that is neither "
                        "[.., G, L, S] nor [.., 1, 1, S]");
    }
    a.mask_value = node.args[3];
    return a;
  }
  if (!m.is_tensor() || !m.is_constant || m.sizes.size() > r ||
      (m.dtype != DType::Bool && m.dtype != DType::F32)) {
    throw Unsupported(
        "scaled_dot_product_attention: the mask is not a constant bool or f32 "
        "tensor of at most the scores' rank, nor an f32 activation");
  }
  a.bias_dims.assign(r - m.sizes.size(), 1);
  a.bias_dims.insert(a.bias_dims.end(), m.sizes.begin(), m.sizes.end());
  std::vector<int64_t> scores = q.sizes;
  scores[r - 1] = s;
  uint64_t numel = 1;
  for (size_t i = 0; i < r; ++i) {
    if (a.bias_dims[i] != 1 && a.bias_dims[i] != scores[i]) {
      throw Unsupported("scaled_dot_product_attention: mask " + shape_str(m.sizes) +
                        " does not broadcast to the scores " + shape_str(scores));
    }
    numel *= static_cast<uint64_t>(a.bias_dims[i]);
  }
  a.bias.resize(numel);
  const bool is_bool = m.dtype == DType::Bool;
  if (m.data.size() != numel * (is_bool ? 1 : 4)) {
    throw Unsupported("scaled_dot_product_attention: mask bytes");
  }
  for (uint64_t i = 0; i < numel; ++i) {
    if (is_bool) {
      a.bias[i] = m.data[i] != 0 ? 0.0f : kNegInf;
    } else {
      std::memcpy(&a.bias[i], m.data.data() + 4 * i, 4);
      if (std::isnan(a.bias[i]) || a.bias[i] == std::numeric_limits<float>::infinity()) {
        throw Unsupported("scaled_dot_product_attention: a NaN or +inf in the mask");
      }
    }
  }
  const uint64_t width = static_cast<uint64_t>(a.bias_dims[r - 1]);
  for (uint64_t row = 0; row < numel; row += width) {
    bool any = false;
    for (uint64_t j = 0; j < width && !any; ++j) any = a.bias[row + j] != kNegInf;
    if (!any) throw Unsupported("scaled_dot_product_attention: a query row attends nothing");
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
