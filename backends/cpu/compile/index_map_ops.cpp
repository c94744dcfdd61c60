#include "backends/cpu/compile/index_map_ops.h"

#include <algorithm>

#include "backends/cpu/compile/layout_plan.h"
#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {
namespace {

/// A dim argument wrapped into [0, rank) (Unsupported outside [-rank, rank)).
size_t wrap_dim(const Graph& g, int id, size_t rank, const char* what) {
  int64_t d = int_value(g, id, what);
  if (d < 0) d += static_cast<int64_t>(rank);
  if (d < 0 || d >= static_cast<int64_t>(rank))
    throw Unsupported(std::string(what) + " out of range");
  return static_cast<size_t>(d);
}

/// An Int argument, or `none` when it is None.
int64_t int_or(const Graph& g, int id, int64_t none, const char* what) {
  return is_none(g, id) ? none : int_value(g, id, what);
}

/// What one node does to its input's view (no shape checks).
struct Mapped {
  std::vector<StridedView> outs;
};

Mapped map_node(const Graph& g, const Node& node, const StridedView& x) {
  const std::string& op = node.op;
  const size_t rank = x.sizes.size();
  Mapped m;
  if (op == "tern::clone") {
    m.outs.push_back(x);
  } else if (op == "tern::transpose" || op == "tern::permute") {
    m.outs.push_back(permuted(x, index_map_permutation(g, node, rank)));
  } else if (op == "tern::slice") {
    if (node.args.size() != 5) throw Unsupported("slice: expected 5 arguments");
    const size_t dim = wrap_dim(g, node.args[1], rank, "dim");
    const int64_t size = x.sizes[dim];
    int64_t start = int_or(g, node.args[2], 0, "start");
    int64_t end = int_or(g, node.args[3], size, "end");
    const int64_t step = int_value(g, node.args[4], "step");
    if (step < 1) throw Unsupported("slice: step below 1");
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = std::min(std::max<int64_t>(start, 0), size);
    end = std::min(std::max(end, start), size);
    const int64_t count = (end - start + step - 1) / step;
    if (count < 1) throw Unsupported("slice: empty");
    m.outs.push_back(sliced(x, dim, start, step, count));
  } else if (op == "tern::flip") {  // a bidirectional RNN's reverse direction
    if (node.args.size() != 2) throw Unsupported("flip: expected 2 arguments");
    const Value& dims = static_value(g, node.args[1], "dims");
    if (dims.kind != Value::Kind::IntList) throw Unsupported("flip: dims is not an IntList");
    std::vector<bool> seen(rank, false);
    StridedView v = x;
    for (int64_t raw : dims.ints) {
      int64_t d = raw < 0 ? raw + static_cast<int64_t>(rank) : raw;
      if (d < 0 || d >= static_cast<int64_t>(rank)) throw Unsupported("flip: dim out of range");
      if (seen[static_cast<size_t>(d)]) throw Unsupported("flip: a dim listed twice");
      seen[static_cast<size_t>(d)] = true;
      v = flipped(v, static_cast<size_t>(d));
    }
    m.outs.push_back(v);
  } else if (op == "tern::select") {
    if (node.args.size() != 3) throw Unsupported("select: expected 3 arguments");
    const size_t dim = wrap_dim(g, node.args[1], rank, "dim");
    int64_t index = int_value(g, node.args[2], "index");
    if (index < 0) index += x.sizes[dim];
    if (index < 0 || index >= x.sizes[dim]) throw Unsupported("select: index out of range");
    if (rank < 2) throw Unsupported("select: of a 1-D tensor (a scalar)");
    m.outs.push_back(selected(x, dim, index));
  } else if (op == "tern::expand") {
    if (node.args.size() != 2) throw Unsupported("expand: expected 2 arguments");
    const Value& out = single_output(g, node);
    if (out.sizes.size() < rank) throw Unsupported("expand: fewer dims");
    const size_t lead = out.sizes.size() - rank;
    for (size_t i = 0; i < rank; ++i) {
      if (x.sizes[i] != out.sizes[lead + i] && x.sizes[i] != 1) {
        throw Unsupported("expand: " + shape_str(x.sizes) + " to " + shape_str(out.sizes));
      }
    }
    m.outs.push_back(expanded(x, out.sizes));
  } else if (op == "tern::repeat") {  // of size-1 dims only: an expand (SwiftFormer's query)
    if (node.args.size() != 2) throw Unsupported("repeat: expected 2 arguments");
    const Value& reps = static_value(g, node.args[1], "repeats");
    if (reps.kind != Value::Kind::IntList || reps.ints.size() < rank) {
      throw Unsupported("repeat: repeats is not an IntList of at least x's rank");
    }
    const size_t lead = reps.ints.size() - rank;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < reps.ints.size(); ++i) {
      const int64_t r = reps.ints[i];
      const int64_t s = i < lead ? 1 : x.sizes[i - lead];
      if (r < 1) throw Unsupported("repeat: a repeat count below 1");
      if (r != 1 && s != 1) throw Unsupported("repeat: tiles a dim of size > 1");
      sizes.push_back(s * r);
    }
    m.outs.push_back(expanded(x, sizes));
  } else if (op == "tern::split") {
    if (node.args.size() != 3) throw Unsupported("split: expected 3 arguments");
    const size_t dim = wrap_dim(g, node.args[2], rank, "dim");
    const Value& sizes = static_value(g, node.args[1], "split_sizes");
    if (sizes.kind != Value::Kind::IntList || sizes.ints.empty()) {
      throw Unsupported("split: split_sizes is not an IntList");
    }
    std::vector<int64_t> pieces = sizes.ints;
    if (pieces.size() == 1 && node.outputs.size() != 1) {  // chunks of one size, the last smaller
      const int64_t s = pieces[0];
      pieces.clear();
      for (int64_t at = 0; s > 0 && at < x.sizes[dim]; at += s) {
        pieces.push_back(std::min(s, x.sizes[dim] - at));
      }
    }
    if (pieces.size() != node.outputs.size()) throw Unsupported("split: outputs and sizes differ");
    int64_t at = 0;
    for (int64_t p : pieces) {
      if (p < 1) throw Unsupported("split: an empty piece");
      m.outs.push_back(sliced(x, dim, at, 1, p));
      at += p;
    }
    if (at != x.sizes[dim]) throw Unsupported("split: sizes do not add up");
  } else {
    throw Unsupported("not an index map");
  }
  return m;
}

}  // namespace

std::vector<int64_t> index_map_permutation(const Graph& g, const Node& node, size_t rank) {
  if (node.op == "tern::transpose") {
    if (node.args.size() != 3) throw Unsupported("transpose: expected 3 arguments");
    return swapped_dims(rank, wrap_dim(g, node.args[1], rank, "dim0"),
                        wrap_dim(g, node.args[2], rank, "dim1"));
  }
  if (node.op != "tern::permute") return {};
  const std::vector<int64_t> perm = permute_dims(g, node);
  std::vector<int64_t> seen = perm;
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < rank; ++i) {
    if (seen[i] != static_cast<int64_t>(i)) throw Unsupported("permute: not a permutation");
  }
  return perm;
}

bool is_index_map_op(const std::string& op) {
  return op == "tern::transpose" || op == "tern::permute" || op == "tern::slice" ||
         op == "tern::select" || op == "tern::expand" || op == "tern::repeat" ||
         op == "tern::clone" || op == "tern::split" || op == "tern::flip";
}

void check_index_map(const Graph& g, const Node& node) {
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const StridedView in = whole_value(0, x.sizes, false);
  const Mapped m = map_node(g, node, in);
  if (m.outs.size() != node.outputs.size()) throw Unsupported("outputs");
  for (size_t i = 0; i < m.outs.size(); ++i) {
    const Value& out = f32_tensor(g, node.outputs[i], "out");
    if (out.is_constant || out.sizes != m.outs[i].sizes) {
      throw Unsupported("out " + shape_str(out.sizes) + ", expected " + shape_str(m.outs[i].sizes));
    }
  }
}

std::vector<StridedView> apply_index_map(const Graph& g, const Node& node, const StridedView& x) {
  return map_node(g, node, x).outs;
}

}  // namespace tern::compiler::cpu_compile
