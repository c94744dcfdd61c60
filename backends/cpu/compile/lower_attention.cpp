// Softmax and attention: the fused scaled-dot-product node for SDPA calls and for attention
// written out as bmm / softmax / bmm, with grouped query heads and masks.
#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

/// softmax over a dim followed by dims of 1 only (ConvBERT's [N, K, 1] over dim 1; the
/// compile half's check allows no other form but the last dim): XNNPACK's softmax over the
/// last dim of x seen as [.., K] (a reshape, the same bytes), reshaped back. False when the
/// softmax is over the last dim.
bool Lowering::softmax_over_inner_dim(const Node& node) {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
  int64_t dim = int_value(g_, node.args[1], "dim");
  if (dim < 0) dim += static_cast<int64_t>(s.size());
  if (dim == static_cast<int64_t>(s.size()) - 1) return false;
  for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) {
    if (s[d] != 1) {
      lower_softmax_moved(node, static_cast<size_t>(dim));
      return true;
    }
  }
  const std::vector<uint64_t> folded(s.begin(), s.begin() + dim + 1);
  const uint32_t x = internal(folded);
  add_node(NodeOp::Reshape, {activation_as(node.args[0], /*plain=*/true)}, x);
  const uint32_t y = internal(folded);
  add_node(NodeOp::Softmax, {x}, y);
  add_node(NodeOp::Reshape, {y}, output(node.outputs[0]));
  return true;
}

/// softmax over dim `dim` of x followed by dims larger than 1 (ResNeSt's split attention:
/// over the radix): x copied with `dim` swapped to last, XNNPACK's softmax over the last
/// dim, the result copied back with the swap undone (in the output's layout).
void Lowering::lower_softmax_moved(const Node& node, size_t dim) {
  const int y = node.outputs[0];
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
  const std::vector<int64_t> perm = swapped_dims(s.size(), dim, s.size() - 1);  // self-inverse
  std::vector<int64_t> moved;
  for (int64_t p : perm) moved.push_back(s[static_cast<size_t>(p)]);
  const std::vector<uint64_t> dims(moved.begin(), moved.end());
  const uint32_t a = internal(dims);
  emit_copy(permuted(view_of(node.args[0]), perm), /*nhwc=*/false, a);
  const uint32_t b = internal(dims);
  add_node(NodeOp::Softmax, {a}, b);
  emit_copy(permuted(whole_value(b, moved, false), perm), is_nhwc(y), output(y));
}

/// `d` without its dim r - 3 and dim r - 2 multiplied by `rows`.
std::vector<uint64_t> Lowering::group_folded(std::vector<uint64_t> d, uint64_t rows) {
  const size_t r = d.size();
  d[r - 2] *= rows;
  d.erase(d.begin() + static_cast<std::ptrdiff_t>(r - 3));
  return d;
}

/// `x` without its dim r - 3 and dim r - 2 multiplied by `rows` (a grouped attention's
/// operands folded: [.., G, L, E] -> [.., G * L, E] for q and [.., 1, S, E] -> [.., S, E]
/// for k and v, the same bytes), through a Reshape node.
uint32_t Lowering::fold_group_dim(uint32_t x, uint64_t rows) {
  const std::vector<uint64_t> d(values_[x].dims, values_[x].dims + values_[x].rank);
  const uint32_t y = internal(group_folded(d, rows));
  add_node(NodeOp::Reshape, {x}, y);
  return y;
}

/// The mask of a grouped attention over scores [.., G, L, S] (broadcast from `a.bias_dims`)
/// written out over the folded scores [.., G * L, S]: the leading dims and S keep their
/// broadcast, the G * L rows are materialised.
void Lowering::fold_group_bias(SdpaAttrs* a, int64_t l) {
  const size_t r = a->bias_dims.size();
  const std::vector<int64_t> bd = a->bias_dims;
  int64_t lead = 1;
  for (size_t i = 0; i + 3 < r; ++i) lead *= bd[i];
  const int64_t g = a->group, s = bd[r - 1];
  std::vector<float> folded;
  folded.reserve(static_cast<size_t>(lead * g * l * s));
  for (int64_t b = 0; b < lead; ++b) {
    for (int64_t gi = 0; gi < g; ++gi) {
      for (int64_t li = 0; li < l; ++li) {
        const int64_t row =
            (b * bd[r - 3] + (bd[r - 3] == 1 ? 0 : gi)) * bd[r - 2] + (bd[r - 2] == 1 ? 0 : li);
        const float* src = a->bias.data() + row * s;
        folded.insert(folded.end(), src, src + s);
      }
    }
  }
  a->bias = std::move(folded);
  a->bias_dims.erase(a->bias_dims.begin() + static_cast<std::ptrdiff_t>(r - 3));
  a->bias_dims[r - 3] = g * l;
}

/// The additive mask `bias` over scores of `dims` (each dim 1 or the scores') with its last
/// dim written out to the `keys` when it is 1 (the node reads every key of a mask row).
void Lowering::expand_mask_keys(std::vector<float>* bias, std::vector<int64_t>* dims,
                                int64_t keys) {
  if (dims->back() != 1 || keys == 1) return;
  std::vector<float> out;
  out.reserve(bias->size() * static_cast<size_t>(keys));
  for (float x : *bias) out.insert(out.end(), static_cast<size_t>(keys), x);
  *bias = std::move(out);
  dims->back() = keys;
}

/// Whether the constant mask over [.., L, S] (all leading dims 1) is a causal one: 0 where
/// j <= i, and at most -1e30 (-inf, or the f32 minimum Hugging Face writes) where j > i. Its
/// masked scores' weights are then exactly 0 for finite scores, as when they are skipped.
bool Lowering::is_causal_mask(const std::vector<float>& bias, const std::vector<int64_t>& dims) {
  const size_t r = dims.size();
  for (size_t d = 0; d + 2 < r; ++d) {
    if (dims[d] != 1) return false;
  }
  const int64_t l = dims[r - 2], s = dims[r - 1];
  if (l < 2 || s < 2) return false;
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < s; ++j) {
      const float m = bias[static_cast<size_t>(i * s + j)];
      if (j <= i ? m != 0.0f : !(m <= -1e30f)) return false;
    }
  }
  return true;
}

/// tern's fused Attention node (op 32): q, k (transposed when `k_transposed`), v, and the
/// mask (`mask`, a blob value of the scores' rank, or kNoValue) broadcast over `scores`.
void Lowering::add_attention(uint32_t q, uint32_t k, bool k_transposed, uint32_t v, uint32_t mask,
                             const std::vector<int64_t>& scores, double scale,
                             int64_t causal_period, bool empty_rows_nan, uint32_t out) {
  std::vector<uint32_t> in = {q, k, v};
  if (mask != cpu::kNoValue) in.push_back(mask);
  BlobNode& n = add_node(NodeOp::Attention, in, out);
  n.params[cpu::kAttentionFlags] = (k_transposed ? cpu::kAttentionKTransposed : 0u) |
                                   (empty_rows_nan ? cpu::kAttentionEmptyRowsNan : 0u);
  n.params[cpu::kAttentionCausal] = static_cast<uint32_t>(causal_period);
  if (mask != cpu::kNoValue) {
    const size_t batch_rank = scores.size() - 2;
    n.params[cpu::kAttentionMaskBatchRank] = static_cast<uint32_t>(batch_rank);
    for (size_t d = 0; d < batch_rank; ++d) {
      n.params[cpu::kAttentionMaskBatch + d] = static_cast<uint32_t>(scores[d]);
    }
  }
  n.fparams[0] = static_cast<float>(scale);
  n.fparams[1] = 0.0f;
}

/// scaled_dot_product_attention: tern's fused Attention node (op 32). Grouped query heads
/// (q [.., G, L, E] against k, v [.., 1, S, E]) fold into the rows: one head per key/value
/// head over its G * L query rows (causal rows by their index mod L), the output reshaped
/// back.
void Lowering::lower_sdpa(const Node& node) {
  SdpaAttrs a = sdpa_attrs(g_, node);
  const Value& qv = g_.values[static_cast<size_t>(node.args[0])];
  std::vector<uint64_t> qdims(qv.sizes.begin(), qv.sizes.end());
  const int64_t l = qv.sizes[qv.sizes.size() - 2];
  uint32_t k = activation(node.args[1]);
  uint32_t v = activation(node.args[2]);
  const int64_t s = static_cast<int64_t>(values_[k].dims[values_[k].rank - 2]);
  uint32_t q = cpu::kNoValue;
  if (qv.is_constant) {  // read in place, its grouped heads' rows folded by its dims alone
    if (a.group != 0) qdims = group_folded(qdims, static_cast<uint64_t>(a.group));
    q = constant_as(node.args[0], qdims);
  } else {
    q = activation(node.args[0]);
  }
  if (a.group != 0) {
    if (!a.causal && !a.bias.empty()) fold_group_bias(&a, l);
    if (!qv.is_constant) q = fold_group_dim(q, static_cast<uint64_t>(a.group));
    k = fold_group_dim(k, 1);
    v = fold_group_dim(v, 1);
  }
  std::vector<int64_t> scores(values_[q].dims, values_[q].dims + values_[q].rank);
  scores.back() = s;
  uint32_t mask = cpu::kNoValue;
  if (a.mask_value >= 0) {  // an activation, given the scores' rank
    mask = activation(a.mask_value);
    const std::vector<uint64_t> dims(a.bias_dims.begin(), a.bias_dims.end());
    if (values_[mask].rank != dims.size()) {
      const uint32_t padded = internal(dims);
      add_node(NodeOp::Reshape, {mask}, padded);
      mask = padded;
    }
    if (a.group != 0) {  // [.., G, L, S] -> [.., G * L, S] or [.., 1, 1, S] -> [.., 1, S]
      mask = fold_group_dim(mask, dims[dims.size() - 3]);
    }
  } else if (!a.causal && !a.bias.empty()) {
    expand_mask_keys(&a.bias, &a.bias_dims, s);
    mask = add_constant(std::vector<uint64_t>(a.bias_dims.begin(), a.bias_dims.end()), a.bias);
  }
  if (a.group == 0) {
    add_attention(q, k, false, v, mask, scores, a.scale, a.causal ? l : 0, false,
                  output(node.outputs[0]));
    return;
  }
  std::vector<uint64_t> dims(values_[q].dims, values_[q].dims + values_[q].rank);
  dims.back() = values_[v].dims[values_[v].rank - 1];  // [.., G * L, Ev]
  const uint32_t o = internal(dims);
  add_attention(q, k, false, v, mask, scores, a.scale, a.causal ? l : 0, false, o);
  add_node(NodeOp::Reshape, {o}, output(node.outputs[0]));
}

/// k [.., S, E] row-major for `kt`, a bmm's right operand [.., E, S], when kt is a pending
/// view (Whisper's and BERT's key.transpose(-1, -2) of the key heads): kt's transpose undone,
/// read in place when that is the whole of a value in order, else copied in k's order (runs
/// of E features, not a gather of single floats). kNoValue when kt is a value of its own.
uint32_t Lowering::untransposed_key(int kt) {
  auto it = lazy_.find(kt);
  if (it == lazy_.end() || ids_.count(kt) != 0) return cpu::kNoValue;
  return in_place_or_copy(last_two_transposed(it->second));
}

/// View `x` of rank r as a row-major operand of a node that reads its last two dims: the
/// base's bytes when x is the whole base in order with the same last two dims (the node reads
/// the base's batch dims as x's), else a copy into a new value of x's dims.
uint32_t Lowering::in_place_or_copy(const StridedView& x) {
  const size_t r = x.sizes.size();
  const std::vector<uint64_t> dims(x.sizes.begin(), x.sizes.end());
  const BlobValue& base = values_[x.base];
  if (copy_plan(x, false).identity && base.rank >= 2 && base.dims[base.rank - 1] == dims[r - 1] &&
      base.dims[base.rank - 2] == dims[r - 2]) {
    return x.base;
  }
  const uint32_t out = internal(dims);
  emit_copy(x, false, out);
  return out;
}

/// Attention written out (attention_match.h): one fused Attention node. Its mask, a constant
/// or an activation, is given the scores' rank; a constant causal mask becomes the node's
/// causal limit.
void Lowering::lower_eager_attention(const AttentionMatch& m) {
  const uint32_t q = activation_or_constant(m.q);  // a constant q since version 20
  uint32_t k = untransposed_key(m.kt);
  const bool k_transposed = k == cpu::kNoValue;
  if (k_transposed) k = activation(m.kt);
  const uint32_t v = m.transposed ? transposed_copy(m.v) : activation(m.v);
  const std::vector<int64_t>& scores = m.scores_dims;
  uint32_t mask = cpu::kNoValue;
  int64_t causal = 0;
  if (m.mask >= 0) {
    const Value& mv = g_.values[static_cast<size_t>(m.mask)];
    std::vector<uint64_t> dims(scores.size() - mv.sizes.size(), 1);
    dims.insert(dims.end(), mv.sizes.begin(), mv.sizes.end());
    if (mv.is_constant) {
      const std::vector<float> data = constant_floats(mv);
      const std::vector<int64_t> sdims(dims.begin(), dims.end());
      if (is_causal_mask(data, sdims)) {
        causal = scores[scores.size() - 2];
      } else {
        mask = add_constant(dims, data);
      }
    } else {
      mask = activation(m.mask);
      if (values_[mask].rank != dims.size()) {
        const uint32_t padded = internal(dims);
        add_node(NodeOp::Reshape, {mask}, padded);
        mask = padded;
      }
    }
  }
  if (!m.transposed) {
    add_attention(q, k, k_transposed, v, mask, scores, m.scale, causal, true, output(m.out));
    return;
  }
  // bmm(v, sᵀ): the node's output o [.., L, Ev], and m.out [.., Ev, L] a pending transpose of
  // it (copied where a reader needs its bytes, or composed with the views after it: LeViT's
  // heads back into NHWC channels).
  std::vector<int64_t> dims = g_.values[static_cast<size_t>(m.out)].sizes;
  std::swap(dims[dims.size() - 2], dims[dims.size() - 1]);
  const uint32_t o = internal(std::vector<uint64_t>(dims.begin(), dims.end()));
  add_attention(q, k, k_transposed, v, mask, scores, m.scale, causal, true, o);
  lazy_[m.out] = last_two_transposed(whole_value(o, dims, false));
}

/// `x` [.., A, B] transposed into a row-major blob value [.., B, A]: x's bytes in place when
/// x is a pending transpose of a whole value in order, else one copy (of runs of A floats
/// when x is such a transpose of a strided view).
uint32_t Lowering::transposed_copy(int x) {
  return in_place_or_copy(last_two_transposed(view_of(x)));
}

}  // namespace tern::compiler::cpu_compile::lowering
