// Data movement: concatenations, permutes, views and strided copies, gathers by constant or
// runtime indices, grid sampling, nearest upsampling and pads.
#include <algorithm>
#include <stdexcept>

#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

/// index_select by a run-time int64 index (index_rows.h): tern's IndexRows (op 45) on x
/// (plain; a constant read in place) and the index bound as an Int64Plain region input.
void Lowering::lower_index_rows(const Node& node) {
  const IndexRowsAttrs a = index_rows_attrs(g_, node);
  const Value& xv = g_.values[static_cast<size_t>(a.x)];
  const uint32_t x = xv.is_constant
                         ? constant_as(a.x, std::vector<uint64_t>(xv.sizes.begin(), xv.sizes.end()))
                         : activation_as(a.x, /*plain=*/true);
  const uint32_t index = typed_input(a.index, ValueLayout::Int64Plain, "a run-time index");
  BlobNode& n = add_node(NodeOp::IndexRows, {x, index}, output(node.outputs[0]));
  n.params[0] = static_cast<uint32_t>(a.dim);
}

/// An embedding of an f32 table by input ids (index_rows.h): IndexRows (op 45) of the table's
/// rows (a constant read in place) into [numel(ids), D], seen as the output's [ids..., D].
void Lowering::lower_f32_embedding(const Node& node) {
  const IndexRowsAttrs a = f32_embedding_attrs(g_, node);
  const Value& table = g_.values[static_cast<size_t>(a.x)];
  const Value& ids = g_.values[static_cast<size_t>(a.index)];
  const uint32_t x = constant_as(a.x, std::vector<uint64_t>(table.sizes.begin(), table.sizes.end()));
  const uint32_t index = typed_input(a.index, ValueLayout::Int64Plain, "an embedding's ids");
  const int y = node.outputs[0];
  if (ids.sizes.size() == 1) {
    add_node(NodeOp::IndexRows, {x, index}, output(y));
    return;
  }
  uint64_t count = 1;
  for (int64_t s : ids.sizes) count *= static_cast<uint64_t>(s);
  const uint32_t rows = internal({count, static_cast<uint64_t>(table.sizes[1])});
  add_node(NodeOp::IndexRows, {x, index}, rows);
  if (!reshape_in_place(rows, y)) add_node(NodeOp::Reshape, {rows}, output(y));
}

/// tern::cat along any XNNPACK dim: Concat nodes of up to 3 inputs, nested for more as the
/// tree copying the fewest floats (concat_tree.h; each partial result an internal value), an
/// earlier cat of a prefix of the inputs standing for those when the region has one; a cat of
/// one tensor is a copy (XNNPACK's reshape to the same dims).
void Lowering::lower_concat(const Node& node) {
  const std::vector<int> ins = concat_inputs(g_, node);
  const Value& ov = g_.values[static_cast<size_t>(node.outputs[0])];
  const size_t rank = ov.sizes.size();
  const bool nhwc = is_nhwc(node.outputs[0]);
  // The XNNPACK dims of a value of `sizes`: NHWC for an NHWC 4-D output.
  auto xdims = [&](const std::vector<int64_t>& sizes) {
    std::vector<uint64_t> d(sizes.begin(), sizes.end());
    if (nhwc) d = {d[0], d[2], d[3], d[1]};
    return d;
  };
  int64_t dim = int_value(g_, node.args[1], "dim");
  if (dim < 0) dim += static_cast<int64_t>(rank);
  const size_t cat_dim = static_cast<size_t>(dim);
  // Along another XNNPACK dim than the last: every part seen as [rows, numel / rows].
  static constexpr size_t kNhwcOf[4] = {0, 3, 1, 2};
  const size_t xdim = nhwc ? kNhwcOf[cat_dim] : cat_dim;
  uint64_t rows = 0;
  if (xdim + 1 != rank) {
    const std::vector<uint64_t> od = xdims(ov.sizes);
    rows = 1;
    for (size_t d = 0; d < xdim; ++d) rows *= od[d];
  }
  auto shuffle = shuffle_folds_.find(static_cast<int>(&node - g_.nodes.data()));
  if (shuffle != shuffle_folds_.end()) {  // each part: its channel range of every input
    const ConcatShuffleMatch& m = shuffle->second;
    const int64_t groups = static_cast<int64_t>(ins.size());
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      const int64_t width = g_.values[static_cast<size_t>(m.outputs[i])].sizes[1];
      lower_row_concat(ins, m.outputs[i], 1, m.first_channel[i] / groups, width / groups);
    }
    return;
  }
  if (xdim + 1 == rank && ins.size() >= 2 && ins.size() <= cpu::kMaxConcatInputs) {
    for (int in : ins) {
      RowRead r;
      if (pending_row_read(in, &r)) {  // a slice read in place, not copied first
        lower_row_concat(ins, node.outputs[0], 0);
        lowered_cats_.push_back({ins, node.outputs[0], xdim, rows, nhwc});
        return;
      }
    }
  }
  if (ins.size() == 1) {  // cat([x]) is a copy (DenseNet's first dense layer)
    add_node(NodeOp::Reshape, {cat_part(ins[0], node.outputs[0])}, output(node.outputs[0]));
    return;
  }
  // An earlier cat of a prefix of these inputs (DenseNet: layer k + 1 concatenates layer k's
  // inputs and one more) stands for those parts: one copy of it and the new parts, not every
  // input again. Then a tree of Concat nodes (up to 3 parts each) copying the fewest floats:
  // every node writes all of its parts once, so small parts are joined first (an FPN head's
  // levels, largest first: [big, big, cat(small, small, small)], each big level copied once
  // where a left-to-right chain copied it into every partial result).
  std::vector<int> parts = ins;
  if (const LoweredCat* prefix = longest_cat_prefix(ins, xdim, rows, nhwc)) {
    parts.assign(ins.begin() + static_cast<std::ptrdiff_t>(prefix->inputs.size()), ins.end());
    parts.insert(parts.begin(), prefix->output);
  }
  std::vector<int64_t> widths;
  for (int in : parts) widths.push_back(g_.values[static_cast<size_t>(in)].sizes[cat_dim]);
  const ConcatTree tree = concat_tree(widths, cpu::kMaxConcatInputs);
  emit_concat_tree(tree, tree.root, parts, node.outputs[0], cat_dim, rows, xdims);
  lowered_cats_.push_back({ins, node.outputs[0], xdim, rows, nhwc});
}

/// The blob value of tree node `id` of cat `ins` (tern value `out`, along tern dim `cat_dim`,
/// `rows` as op 22's params[0]): a part as it is, or a Concat node of its children's values
/// (the root writes `out`).
uint32_t Lowering::emit_concat_tree(const ConcatTree& t, size_t id, const std::vector<int>& ins,
                                    int out, size_t cat_dim, uint64_t rows,
                                    const std::function<std::vector<uint64_t>(const std::vector<int64_t>&)>& xdims) {
  const ConcatTree::Node& n = t.nodes[id];
  if (n.children.empty()) return cat_part(ins[n.first], out);
  std::vector<uint32_t> inputs;
  for (size_t c : n.children) inputs.push_back(emit_concat_tree(t, c, ins, out, cat_dim, rows, xdims));
  uint32_t made;
  if (id == t.root) {
    made = output(out);
  } else {
    std::vector<int64_t> sizes = g_.values[static_cast<size_t>(out)].sizes;
    sizes[cat_dim] = 0;
    for (size_t p = n.first; p <= n.last; ++p) {
      sizes[cat_dim] += g_.values[static_cast<size_t>(ins[p])].sizes[cat_dim];
    }
    made = internal(xdims(sizes));
  }
  add_node(NodeOp::Concat, inputs, made).params[0] = static_cast<uint32_t>(rows);
  return made;
}

/// Part `vid` of a cat whose output is `out`: an activation, or a constant (a ViT's class
/// token) laid out as the output is (binary_operand: NHWC 4-D parts permuted at prepare).
uint32_t Lowering::cat_part(int vid, int out) {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  if (!v.is_constant) return activation(vid);
  return binary_operand(vid, v.sizes.size(), 1.0, !is_nhwc(out));
}

/// The lowered cat of the most inputs (two or more) that are a proper prefix of `ins`, cut the
/// same way; null when there is none.
const Lowering::LoweredCat* Lowering::longest_cat_prefix(const std::vector<int>& ins, size_t xdim,
                                                         uint64_t rows, bool nhwc) const {
  const LoweredCat* best = nullptr;
  for (const LoweredCat& c : lowered_cats_) {
    if (c.inputs.size() < 2 || c.inputs.size() >= ins.size()) continue;
    if (c.xdim != xdim || c.rows != rows || c.nhwc != nhwc) continue;
    if (!std::equal(c.inputs.begin(), c.inputs.end(), ins.begin())) continue;
    if (best == nullptr || c.inputs.size() > best->inputs.size()) best = &c;
  }
  return best;
}

/// Input `vid` of a concat along the last XNNPACK dim, when it is an index-map result not
/// copied yet whose rows lie in its base at one stride (a channel slice of an NHWC tensor):
/// where they lie. False otherwise (nothing emitted).
bool Lowering::pending_row_read(int vid, RowRead* r) {
  if (lazy_.count(vid) == 0 || ids_.count(vid) != 0) return false;
  const StridedView& v = lazy_.at(vid);
  const std::vector<uint64_t> d = dims_of(vid);
  const int64_t width = static_cast<int64_t>(d.back());
  const CopyPlan p = copy_plan(v, is_nhwc(vid));
  r->base = v.base;
  r->offset = p.offset;
  if (p.extent.size() == 1 && p.stride[0] == 1) {
    r->stride = width;  // rows one after another
  } else if (p.extent.size() == 2 && p.stride[1] == 1 && p.extent[1] == width) {
    r->stride = p.stride[0];
  } else {
    return false;
  }
  return r->offset <= (int64_t{1} << 30) && r->stride >= 0 && r->stride <= (int64_t{1} << 30);
}

/// Concat of `ins` along the last XNNPACK dim into tern value `out` as one RowConcat (op 29):
/// pending slices read in place, other inputs as their blob values; `unit` 1 interleaves the
/// inputs channel by channel (a channel shuffle folded in, concat_shuffle_match.h). With
/// `width` > 0 only `width` floats of each input's rows are read, from float `skip` on (a
/// split after the shuffle folded in too).
void Lowering::lower_row_concat(const std::vector<int>& ins, int out, uint32_t unit, int64_t skip,
                                int64_t width) {
  std::vector<uint32_t> bases;
  std::vector<RowRead> reads;
  std::vector<int64_t> widths;
  for (int in : ins) {
    RowRead r;
    const std::vector<uint64_t> d = dims_of(in);
    const int64_t row = static_cast<int64_t>(d.back());
    if (!pending_row_read(in, &r)) r = {cat_part(in, out), row, 0};
    r.offset += skip;
    widths.push_back(width > 0 ? width : row);
    bases.push_back(r.base);
    reads.push_back(r);
  }
  const std::vector<uint64_t> od = dims_of(out);
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < od.size(); ++i) rows *= od[i];
  BlobNode& n = add_node(NodeOp::RowConcat, bases, output(out));
  n.params[cpu::kRowConcatRows] = static_cast<uint32_t>(rows);
  n.params[cpu::kRowConcatUnit] = unit;
  for (size_t i = 0; i < ins.size(); ++i) {
    n.params[cpu::kRowConcatWidth + i] = static_cast<uint32_t>(widths[i]);
    n.params[cpu::kRowConcatStride + i] = static_cast<uint32_t>(reads[i].stride);
    n.params[cpu::kRowConcatOffset + i] = static_cast<uint32_t>(reads[i].offset);
  }
}

/// Whether permute `node` is a layout change only: (0, 2, 3, 1) of an NHWC tensor to a plain
/// one, or (0, 3, 1, 2) of a plain one to an NHWC one (layout_plan.h).
bool Lowering::is_layout_permute(const Node& node) const {
  const int x = node.args[0], y = node.outputs[0];
  if (g_.values[static_cast<size_t>(x)].sizes.size() != 4) return false;
  const std::vector<int64_t> d = permute_dims(g_, node);
  return (is_nhwc(x) && !is_nhwc(y) && d == std::vector<int64_t>{0, 2, 3, 1}) ||
         (!is_nhwc(x) && is_nhwc(y) && d == std::vector<int64_t>{0, 3, 1, 2});
}

/// permute(0, 2, 3, 1) of an NHWC tensor or (0, 3, 1, 2) of a channels-last one: the same
/// bytes in the delegate (layout_plan.h), so the output is the input's blob value (an alias,
/// shared()), or a copy when it leaves the region (its blob value must be its own).
void Lowering::lower_permute(const Node& node) {
  const uint32_t x = activation(node.args[0]);
  const int y = node.outputs[0];
  if (output_arg_.count(y) == 0) {
    ids_.emplace(y, x);
    aliased_.insert(x);
    return;
  }
  add_node(NodeOp::Reshape, {x}, output(y));
}

/// Whether tern value `vid` is NHWC inside the delegate (a 4-D tensor that is not plain).
bool Lowering::is_nhwc(int vid) const {
  return g_.values[static_cast<size_t>(vid)].sizes.size() == 4 && !is_plain_4d(vid);
}

/// Tern value `vid` as a strided view: its pending index maps, or its blob value as it is.
StridedView Lowering::view_of(int vid) {
  auto it = lazy_.find(vid);
  if (it != lazy_.end() && ids_.count(vid) == 0) return it->second;
  const uint32_t id = activation(vid);
  StridedView v = whole_value(id, g_.values[static_cast<size_t>(vid)].sizes, is_nhwc(vid));
  read_through_view(id, &v);
  return v;
}

/// Writes view `v` into blob value `out` in the order `nhwc` says: a plain copy (XNNPACK's
/// reshape) when it is the whole base in order, else tern's StridedCopy (op 27).
void Lowering::emit_copy(const StridedView& v, bool nhwc, uint32_t out) {
  const CopyPlan p = copy_plan(v, nhwc);
  if (p.identity) {
    add_node(NodeOp::Reshape, {v.base}, out);
    return;
  }
  if (p.extent.size() > cpu::kMaxDims || p.offset > (int64_t{1} << 30)) {
    throw std::invalid_argument("cpu backend: internal error: a copy of rank " +
                                std::to_string(p.extent.size()) + " or offset " +
                                std::to_string(p.offset));
  }
  BlobNode& n = add_node(NodeOp::StridedCopy, {v.base}, out);
  n.params[cpu::kCopyRank] = static_cast<uint32_t>(p.extent.size());
  for (size_t d = 0; d < p.extent.size(); ++d) {
    if (p.stride[d] > (int64_t{1} << 30) || p.stride[d] < -(int64_t{1} << 30)) {
      throw std::invalid_argument("cpu backend: a copy stride beyond 2^30");
    }
    n.params[cpu::kCopyExtent + d] = static_cast<uint32_t>(p.extent[d]);
    // Two's complement: a negative stride (a flip) reads backwards (since version 17).
    n.params[cpu::kCopyStride + d] = static_cast<uint32_t>(static_cast<int32_t>(p.stride[d]));
  }
  n.params[cpu::kCopyOffset] = static_cast<uint32_t>(p.offset);
}

/// The blob value of index-map result `vid`: a View value reading its base in place when
/// the view is one contiguous run of an internal value and stays inside the region (a
/// split's chunk, a step of an unrolled recurrent layer: no copy and no stage boundary),
/// else copied from its view once.
uint32_t Lowering::materialize(int vid) {
  const StridedView v = lazy_.at(vid);
  const CopyPlan p = copy_plan(v, is_nhwc(vid));
  const bool contiguous =
      p.identity || p.extent.empty() || (p.extent.size() == 1 && p.stride[0] == 1);
  const BlobValue& base = values_[v.base];
  if (contiguous && p.offset >= 0 && output_arg_.count(vid) == 0 &&
      base.kind == static_cast<uint32_t>(ValueKind::Internal) && base.dynamic_mask == 0 &&
      dynamic_dim_of(vid) == cpu::kNoValue) {
    const uint32_t id = add_view(v.base, static_cast<uint64_t>(p.offset), dims_of(vid));
    ids_.emplace(vid, id);
    return id;
  }
  const uint32_t out = output(vid);
  emit_copy(v, is_nhwc(vid), out);
  return out;
}

/// transpose, permute, slice, select, expand, clone, split: nothing yet, each output a view
/// of the input's (index_map_ops.h), copied where it is read.
void Lowering::lower_index_map(const Node& node) {
  const std::vector<StridedView> outs = apply_index_map(g_, node, view_of(node.args[0]));
  for (size_t i = 0; i < outs.size(); ++i) lazy_[node.outputs[i]] = outs[i];
}

/// index_select by an affine walk (affine_index.h): x's view with the selected dim replaced
/// by the walk's dims (strides its steps times the dim's own), written row-major into the
/// output by one copy (an unfold's windows: ConvBERT).
void Lowering::lower_index_select(const Node& node) {
  size_t dim = 0;
  const AffineIndex walk = index_select_walk(g_, node, &dim);
  StridedView v = view_of(node.args[0]);
  const int64_t stride = v.strides[dim];
  v.offset += walk.start * stride;
  v.sizes.erase(v.sizes.begin() + static_cast<std::ptrdiff_t>(dim));
  v.strides.erase(v.strides.begin() + static_cast<std::ptrdiff_t>(dim));
  for (size_t j = walk.sizes.size(); j-- > 0;) {
    v.sizes.insert(v.sizes.begin() + static_cast<std::ptrdiff_t>(dim), walk.sizes[j]);
    v.strides.insert(v.strides.begin() + static_cast<std::ptrdiff_t>(dim), walk.steps[j] * stride);
  }
  emit_copy(v, false, output(node.outputs[0]));
}

/// gather / index_select by a constant index that is no affine walk: tern's GatherMap (op
/// 42) reading x's bytes row-major through one folded block of int32 offsets
/// (gather_map_plan.h: SEW-D's relative-position gathers).
void Lowering::lower_gather_map(const Node& node) {
  emit_gather_map(gather_map_plan(g_, node), activation(node.args[0]), output(node.outputs[0]));
}

/// tern's GatherMap (op 42) of `plan` from blob value x to blob value y.
void Lowering::emit_gather_map(const GatherMapPlan& plan, uint32_t x, uint32_t y) {
  const uint32_t map = add_constant_words({static_cast<uint64_t>(plan.map.size())}, plan.map.data(),
                                          plan.map.size());
  BlobNode& n = add_node(NodeOp::GatherMap, {x, map}, y);
  n.params[0] = static_cast<uint32_t>(plan.outer);
  n.params[1] = static_cast<uint32_t>(plan.step);
  n.params[2] = plan.run > 1 ? static_cast<uint32_t>(plan.run) : 0u;
}

/// grid_sample2d: tern's grid-sample node (op 43) over x in NHWC (a plain x copied into that
/// order) and the grid's row-major (x, y) pairs (an NHWC grid copied back; a constant read in
/// place), writing the NHWC output.
void Lowering::lower_grid_sample(const Node& node) {
  const GridSampleAttrs a = grid_sample_attrs(g_, node);
  const uint32_t x = activation_as(node.args[0], false);
  const Value& gv = g_.values[static_cast<size_t>(node.args[1])];
  const uint32_t grid =
      gv.is_constant ? activation_or_constant(node.args[1]) : activation_as(node.args[1], true);
  BlobNode& n = add_node(NodeOp::GridSample, {x, grid}, output(node.outputs[0]));
  n.params[0] = static_cast<uint32_t>(a.mode);
  n.params[1] = static_cast<uint32_t>(a.padding);
  n.params[2] = a.align_corners ? 1 : 0;
}

/// NHWC value `y`, a view of `v` that strides cannot express (ShuffleNet's channel shuffle:
/// [N, C/2, 2, H, W] -> [N, C, H, W]), written by one copy straight in y's byte order: v's
/// dims regrouped onto y's, the groups taken in N, H, W, C order. A row-major copy instead
/// would put y in NCHW order, and every NHWC reader would transpose it again. False (nothing
/// emitted) when v's dims do not regroup onto y's.
bool Lowering::copy_in_nhwc_order(const StridedView& v, int y) {
  StridedView split;
  std::vector<size_t> groups;
  if (!regrouped(v, g_.values[static_cast<size_t>(y)].sizes, &split, &groups)) return false;
  StridedView ordered = split;
  ordered.sizes.clear();
  ordered.strides.clear();
  for (size_t j : {0, 2, 3, 1}) {
    for (size_t d = groups[j]; d < groups[j + 1]; ++d) {
      ordered.sizes.push_back(split.sizes[d]);
      ordered.strides.push_back(split.strides[d]);
    }
  }
  emit_copy(ordered, false, output(y));
  return true;
}

/// A view: XNNPACK's reshape (a copy) when the bytes stay in order and the input is no view;
/// else a view of the input's view (copied once where it is read), or of a row-major copy of
/// the input when strides cannot express it.
void Lowering::lower_view(const Node& node) {
  const int x = node.args[0], y = node.outputs[0];
  const Value& xv = g_.values[static_cast<size_t>(x)];
  const Value& yv = g_.values[static_cast<size_t>(y)];
  const bool reorders = xv.sizes != yv.sizes && ((is_nhwc(x) && layout_sensitive(xv.sizes)) ||
                                                 (is_nhwc(y) && layout_sensitive(yv.sizes)));
  const bool pending = lazy_.count(x) != 0 && ids_.count(x) == 0;
  if (!reorders && !pending) {
    const uint32_t in = activation(x);
    if (!reshape_in_place(in, y)) add_node(NodeOp::Reshape, {in}, output(y));
    return;
  }
  StridedView out;
  if (!reshaped(view_of(x), yv.sizes, &out)) {
    if (is_nhwc(y) && copy_in_nhwc_order(view_of(x), y)) return;
    const uint32_t flat = internal(std::vector<uint64_t>(xv.sizes.begin(), xv.sizes.end()));
    emit_copy(view_of(x), false, flat);
    (void)reshaped(whole_value(flat, xv.sizes, false), yv.sizes, &out);  // row-major: always
  }
  lazy_[y] = out;
}

/// Tern value `y`, a reshape of blob value `in` in the same byte order, made a View of `in`'s
/// bytes (no copy) when `in` is a view already or an internal value made by one of tern's
/// kernels (in the workspace anyway: a view of it breaks no XNNPACK runtime) and `y` stays
/// inside the region. False (nothing made) otherwise.
bool Lowering::reshape_in_place(uint32_t in, int y) {
  if (output_arg_.count(y) != 0 || dynamic_dim_of(y) != cpu::kNoValue) return false;
  const BlobValue& v = values_[in];
  uint32_t base = in;
  uint64_t offset = 0;
  if (v.kind == static_cast<uint32_t>(ValueKind::View)) {
    base = v.view_base;
    offset = v.data_offset;
  } else if (v.kind != static_cast<uint32_t>(ValueKind::Internal) || v.dynamic_mask != 0 ||
             !made_by_own_kernel(in)) {
    return false;
  }
  ids_.emplace(y, add_view(base, offset, dims_of(y)));
  return true;
}

/// upsample_nearest2d by integer factors kh, kw (YOLO's and U-Net's upsampling): x viewed as
/// [N, C, H, 1, W, 1], broadcast to [N, C, H, kh, W, kw] (strides 0) and written in one
/// StridedCopy in the output's NHWC order.
void Lowering::lower_nearest_upsample(const Node& node) {
  const NearestUpsample u = nearest_upsample(g_, node);
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(node.args[0])].sizes;
  if (u.factors.empty()) {        // no integer factor: a GatherMap of NHWC pixels
    std::vector<int64_t> pixels;  // each output pixel's source pixel, in pixels
    pixels.reserve(static_cast<size_t>(s[0]) * u.rows.size() * u.cols.size());
    for (int64_t b = 0; b < s[0]; ++b) {
      for (int64_t r : u.rows) {
        for (int64_t col : u.cols) pixels.push_back((b * s[2] + r) * s[3] + col);
      }
    }
    const std::vector<int64_t>& ys = g_.values[static_cast<size_t>(node.outputs[0])].sizes;
    GatherMapPlan plan = fold_map(pixels, {ys[0], ys[2], ys[3]});
    const int64_t c = s[1];  // pixels to elements: each copies its C channels
    for (int32_t& m : plan.map) m = static_cast<int32_t>(m * c);
    plan.step *= c;
    plan.run *= c;
    emit_gather_map(plan, activation_as(node.args[0], /*plain=*/false), output(node.outputs[0]));
    return;
  }
  const std::vector<int64_t>& k = u.factors;
  StridedView v;
  (void)reshaped(view_of(node.args[0]), {s[0], s[1], s[2], 1, s[3], 1}, &v);  // dims of 1
  v = expanded(v, {s[0], s[1], s[2], k[0], s[3], k[1]});
  if (!copy_in_nhwc_order(v, node.outputs[0])) {
    throw std::invalid_argument(
        "cpu backend: upsample_nearest2d: the broadcast view does not "
        "regroup onto the output");
  }
}

void Lowering::lower_pad(const Node& node) {
  const Value& xv = g_.values[static_cast<size_t>(node.args[0])];
  const size_t rank = xv.sizes.size();
  std::vector<int64_t> pre, post;
  float value;
  bool reflect;
  pad_amounts(g_, node, rank, &pre, &post, &value, &reflect);
  if (reflect) {  // a GatherMap over x's bytes as they lie (TResNet's blur pool)
    std::vector<size_t> order(rank);
    for (size_t d = 0; d < rank; ++d) order[d] = d;
    if (is_nhwc(node.args[0])) order = {0, 2, 3, 1};
    emit_gather_map(reflect_pad_plan(xv.sizes, pre, post, order), activation(node.args[0]),
                    output(node.outputs[0]));
    return;
  }
  if (is_nhwc(node.args[0])) {  // tern dims N C H W -> XNNPACK dims N H W C
    pre = {pre[0], pre[2], pre[3], pre[1]};
    post = {post[0], post[2], post[3], post[1]};
  }
  const uint32_t x = activation(node.args[0]);
  BlobNode& n = add_node(NodeOp::ConstantPad, {x}, output(node.outputs[0]));
  for (size_t d = 0; d < rank; ++d) {
    n.params[d] = static_cast<uint32_t>(pre[d]);
    n.params[cpu::kMaxDims + d] = static_cast<uint32_t>(post[d]);
  }
  n.fparams[0] = value;
  n.fparams[1] = 0.0f;
}

}  // namespace tern::compiler::cpu_compile::lowering
