#include "backends/vulkan/compile/device_integers.h"

#include <algorithm>
#include <string>

#include "backends/vulkan/compile/node_lowering.h"

namespace tern::compiler::vulkan_compile {
namespace {

constexpr int kMaxDepth = 64;  ///< data movement followed back at most this far

const Node* producer(const Graph& g, int id) {
  for (const Node& n : g.nodes) {
    if (std::find(n.outputs.begin(), n.outputs.end(), id) != n.outputs.end()) return &n;
  }
  return nullptr;
}

bool valid(const Graph& g, int id) { return id >= 0 && static_cast<size_t>(id) < g.values.size(); }

/// Whether node `n` reads `id`, directly or inside a tensor list argument.
bool reads(const Graph& g, const Node& n, int id) {
  for (int a : n.args) {
    if (a == id) return true;
    if (!valid(g, a)) continue;
    const Value& l = g.values[static_cast<size_t>(a)];
    if (l.kind == Value::Kind::TensorList &&
        std::find(l.tensors.begin(), l.tensors.end(), id) != l.tensors.end()) {
      return true;
    }
  }
  return false;
}

int64_t bound_at(const Graph& g, int id, int depth) {
  if (!valid(g, id) || depth > kMaxDepth) return 0;
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.is_tensor() || v.dtype != DType::I64 || v.is_constant || v.is_state) return 0;
  const Node* n = producer(g, id);
  if (n == nullptr || n->args.empty()) return 0;
  for (int a : n->args) {
    if (!valid(g, a)) return 0;
  }
  if (n->op == "tern::argmax" || n->op == "tern::argmin") {
    // args: x, dim (an Int, or None: the whole tensor), keepdim.
    const Value& x = g.values[static_cast<size_t>(n->args[0])];
    if (!x.is_tensor()) return 0;
    int64_t count = 1;
    const Value* dim = n->args.size() > 1 ? &g.values[static_cast<size_t>(n->args[1])] : nullptr;
    if (dim != nullptr && dim->kind == Value::Kind::Int) {
      const int64_t rank = static_cast<int64_t>(x.sizes.size());
      if (rank == 0) return 1;
      const int64_t d = dim->int_value < 0 ? dim->int_value + rank : dim->int_value;
      if (d < 0 || d >= rank) return 0;
      count = x.sizes[static_cast<size_t>(d)];
    } else {
      for (int64_t s : x.sizes) count *= s;
    }
    return count;
  }
  if (!is_data_movement(n->op) && n->op != "tern::repeat") return 0;
  const Value& src = g.values[static_cast<size_t>(n->args[0])];
  if (src.kind == Value::Kind::TensorList) {  // cat: every part a device integer
    int64_t b = 0;
    for (int t : src.tensors) {
      const int64_t part = bound_at(g, t, depth + 1);
      if (part == 0) return 0;
      b = std::max(b, part);
    }
    return b;
  }
  return bound_at(g, n->args[0], depth + 1);
}

}  // namespace

int64_t device_integer_bound(const Graph& g, int id) { return bound_at(g, id, 0); }

bool read_only_by_casts(const Graph& g, int id) {
  if (!valid(g, id)) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.is_tensor() || v.dtype != DType::I64 || v.is_constant || v.is_state) return false;
  if (std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end()) return false;
  bool read = false;
  for (const Node& n : g.nodes) {
    if (!reads(g, n, id)) continue;
    if (n.op != "tern::cast" || n.outputs.size() != 1 || !valid(g, n.outputs[0])) return false;
    const DType to = g.values[static_cast<size_t>(n.outputs[0])].dtype;
    if (to != DType::F32 && to != DType::Bool) return false;
    read = true;
  }
  return read;
}

}  // namespace tern::compiler::vulkan_compile
