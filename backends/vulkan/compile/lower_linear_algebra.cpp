// The vulkan lowerings of linear, addmm, matmul / bmm (f32 and nf4 / fp8 weights), the
// experts' grouped products and scaled-dot-product attention.
#include "backends/vulkan/compile/lowerings.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/vulkan/compile/quant_weight.h"

namespace tern::compiler::vulkan_compile {

using vulkan::ElementwiseKind;
using vulkan::NodeOp;
using vulkan::UnaryKind;

// ---- linear algebra ----
namespace {

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

}  // namespace

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

}  // namespace tern::compiler::vulkan_compile
