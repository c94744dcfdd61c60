// The vulkan lowerings that move data: views, permutes, flips, expands, slices, selects,
// splits, cats and pads (strided copies), embedding lookups (f32 and nf4 / fp8 tables) and
// index_select (the embedding node with an outer count).
#include "backends/vulkan/compile/lowerings.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/compile/device_integers.h"
#include "backends/vulkan/compile/quant_weight.h"

namespace tern::compiler::vulkan_compile {

using vulkan::ElementwiseKind;
using vulkan::NodeOp;
using vulkan::UnaryKind;

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

// repeat(x, reps): the output [reps[i] * d[i]] read as [reps[0], d[0], reps[1], d[1], ...]
// (x padded with leading 1s to len(reps) dims) is x broadcast along the reps dims: one strided
// copy (copy_node drops its dims of 1 and merges the contiguous runs).
void lower_repeat(BlobBuilder& b, const Node& n) {
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& os = shape(g, out_id(n));
  const std::vector<int64_t> reps = ints_of(g, arg(n, 1));
  if (reps.size() < xs.size()) throw Unsupported("repeat: fewer repeats than dims");
  Dims d(reps.size() - xs.size(), 1);
  d.insert(d.end(), xs.begin(), xs.end());
  const Dims xst = contiguous_strides(d);
  Dims dims, src;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 1) throw Unsupported("repeat: a count below 1");
    if (os.size() != reps.size() || os[i] != reps[i] * d[i]) throw Unsupported("repeat: output shape");
    if (reps[i] > 1) dims.push_back(reps[i]), src.push_back(0);
    if (d[i] > 1) dims.push_back(d[i]), src.push_back(xst[i]);
  }
  if (dims.empty()) dims.push_back(1), src.push_back(0);
  const uint32_t x = b.input(arg(n, 0));
  copy_node(b, x, b.output(out_id(n)), dims, src, 0, contiguous_strides(dims), 0);
}

namespace {

/// A slice of x along `dim` starting at `start` with `step`, `len` long, into `out`.
void slice_copy(BlobBuilder& b, uint32_t x, const Dims& xs, int64_t dim, int64_t start,
                int64_t step, uint32_t out, const Dims& out_dims) {
  const Dims xst = contiguous_strides(xs);
  Dims src = xst;
  src[static_cast<size_t>(dim)] *= step;
  copy_node(b, x, out, out_dims, src, start * xst[static_cast<size_t>(dim)],
            contiguous_strides(out_dims), 0);
}

}  // namespace

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

/// The values of a constant int64 / int32 tensor.
static std::vector<int64_t> constant_ints(const Value& v) {
  const size_t width = v.dtype == DType::I64 ? 8 : 4;
  std::vector<int64_t> out(v.data.size() / width);
  for (size_t k = 0; k < out.size(); ++k) {
    if (width == 8) {
      std::memcpy(&out[k], v.data.data() + 8 * k, 8);
    } else {
      int32_t i = 0;
      std::memcpy(&i, v.data.data() + 4 * k, 4);
      out[k] = i;
    }
  }
  return out;
}

/// tern::index_copy(x, dim, index, source) with a constant index: out = x, then source's slice
/// k copied to slice index[k] of dim — one strided copy when the index is a run start + k·step
/// (YOLO's keypoint head: y[:, 2::3] = y[:, 2::3].sigmoid()), else one per index (at most
/// kMaxIndexCopies). The later of two equal indices wins, as the portable kernel's order.
void lower_index_copy(BlobBuilder& b, const Node& n) {
  constexpr size_t kMaxIndexCopies = 64;
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Value& index = val(g, arg(n, 2));
  const Dims& ss = shape(g, arg(n, 3));
  if (xs.empty()) throw Unsupported("index_copy of a 0-D tensor");
  if (shape(g, out_id(n)) != xs) throw Unsupported("index_copy output shape");
  if (!index.is_tensor() || !index.is_constant || index.sizes.size() > 1 ||
      (index.dtype != DType::I64 && index.dtype != DType::I32)) {
    throw Unsupported("index_copy: the index must be a constant 0-D or 1-D integer tensor");
  }
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, arg(n, 1)), xs.size()));
  const std::vector<int64_t> idx = constant_ints(index);
  for (int64_t i : idx) {
    if (i < 0 || i >= xs[dim]) {
      throw Unsupported("index_copy: constant index " + std::to_string(i) + " outside [0, " +
                        std::to_string(xs[dim]) + ")");
    }
  }
  Dims expect = xs;
  expect[dim] = static_cast<int64_t>(idx.size());
  if (idx.empty() || ss != expect) throw Unsupported("index_copy source shape");
  const int64_t step = idx.size() > 1 ? idx[1] - idx[0] : 1;
  bool run = step >= 1;
  for (size_t k = 1; run && k < idx.size(); ++k) run = idx[k] - idx[k - 1] == step;
  if (!run && idx.size() > kMaxIndexCopies) {
    throw Unsupported("index_copy: " + std::to_string(idx.size()) +
                      " indices that are not a run (at most " + std::to_string(kMaxIndexCopies) +
                      " copies)");
  }
  const uint32_t x = b.input(arg(n, 0));
  const uint32_t src = b.input(arg(n, 3));
  const uint32_t out = b.output(out_id(n));
  const Dims xst = contiguous_strides(xs);
  copy_node(b, x, out, {numel(xs)}, {1}, 0, {1}, 0);
  const Dims sst = contiguous_strides(ss);
  if (run) {
    Dims dst = xst;
    dst[dim] *= step;
    copy_node(b, src, out, ss, sst, 0, dst, idx[0] * xst[dim]);
    return;
  }
  Dims slice = ss;
  slice[dim] = 1;
  for (size_t k = 0; k < idx.size(); ++k) {
    copy_node(b, src, out, slice, sst, static_cast<int64_t>(k) * sst[dim], xst,
              idx[k] * xst[dim]);
  }
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

/// A constant index must pick one of `size` rows (ATen's index_select and embedding refuse
/// anything else; the portable kernels fail the execute naming it): Unsupported otherwise, so
/// the node stays on the portable kernels and the error comes from them.
static void check_constant_indices(const Graph& g, int id, int64_t size) {
  const Value& v = val(g, id);
  if (!v.is_constant) return;
  for (int64_t i : constant_ints(v)) {
    if (i < 0 || i >= size) {
      throw Unsupported("constant index " + std::to_string(i) + " outside [0, " +
                        std::to_string(size) + ")");
    }
  }
}

/// The indices of an embedding node over `rows` rows and its params[4]: an argmax's indices
/// (device_integers.h: floats on the device, every one below their bound, which must not pass
/// `rows`), else an i64 input or constant (checked against `rows` when constant).
static std::pair<uint32_t, int32_t> node_indices(BlobBuilder& b, int id, int64_t rows) {
  const int64_t bound = device_integer_bound(b.graph(), id);
  if (bound > 0) {
    if (bound > rows) {
      throw Unsupported("indices from an argmax over " + std::to_string(bound) +
                        " elements into " + std::to_string(rows) + " rows");
    }
    return {b.input(id), 1};
  }
  const uint32_t idx = b.index_input(id);
  check_constant_indices(b.graph(), id, rows);
  return {idx, 0};
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
  const auto idx = node_indices(b, arg(n, 1), ws[0]);
  b.node(NodeOp::Embedding, {w, idx.first}, b.output(out_id(n)),
         {param(ws[0], "V"), param(ws[1], "D"), param(numel(is), "count"), 1, idx.second});
}

void lower_index_select(BlobBuilder& b, const Node& n) {
  // x [outer, S, inner] along dim: out[o, k, :] = x[o, index[k], :], the embedding node with
  // an outer count (a table per o).
  const Graph& g = b.graph();
  const Dims& xs = shape(g, arg(n, 0));
  const Dims& is = shape(g, arg(n, 2));
  if (xs.empty()) throw Unsupported("index_select of a 0-D tensor");
  if (is.size() > 1) throw Unsupported("index_select index of rank > 1");
  const size_t dim = static_cast<size_t>(norm_dim(int_of(g, arg(n, 1)), xs.size()));
  Dims os = xs;
  os[dim] = numel(is);
  if (shape(g, out_id(n)) != os) throw Unsupported("index_select output shape");
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= xs[d];
  for (size_t d = dim + 1; d < xs.size(); ++d) inner *= xs[d];
  const uint32_t x = b.input(arg(n, 0));
  const auto idx = node_indices(b, arg(n, 2), xs[dim]);
  b.node(NodeOp::Embedding, {x, idx.first}, b.output(out_id(n)),
         {param(xs[dim], "size"), param(inner, "inner"), param(numel(is), "count"),
          param(outer, "outer"), idx.second});
}

}  // namespace tern::compiler::vulkan_compile
