#include "backends/cpu/compile/index_rows.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

bool is_runtime_index_rows(const Graph& g, const Node& node) {
  if (node.op != "tern::index_select" || node.args.size() != 3) return false;
  const Value& idx = value_at(g, node.args[2]);
  return idx.is_tensor() && idx.dtype == DType::I64 && !idx.is_constant;
}

IndexRowsAttrs index_rows_attrs(const Graph& g, const Node& node) {
  if (!is_runtime_index_rows(g, node)) {
    throw Unsupported(node.op + ": not indexed by a run-time int64 tensor");
  }
  IndexRowsAttrs a;
  a.x = node.args[0];
  a.index = node.args[2];
  const Value& x = f32_tensor(g, a.x, "x");
  const Value& idx = value_at(g, a.index);
  const Value& out = single_output(g, node);
  if (idx.sizes.size() != 1) throw Unsupported("index_select: the index is not 1-D");
  if (idx.sizes[0] < 1) throw Unsupported("an empty index");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  a.dim = int_value(g, node.args[1], "dim");
  if (a.dim < 0) a.dim += rank;
  if (a.dim < 0 || a.dim >= rank) throw Unsupported("index_select: dim out of range");
  std::vector<int64_t> expect = x.sizes;
  expect[static_cast<size_t>(a.dim)] = idx.sizes[0];
  if (out.sizes != expect) throw Unsupported("out shape " + shape_str(out.sizes));
  if (x.sizes.size() == 4) {
    throw Unsupported("a 4-D x or output (NHWC layouts are not followed through a run-time index)");
  }
  return a;
}

bool is_f32_embedding(const Graph& g, const Node& node) {
  if (node.op != "tern::embedding" || node.args.size() != 2) return false;
  const Value& table = value_at(g, node.args[0]);
  return table.is_tensor() && table.dtype == DType::F32;
}

IndexRowsAttrs f32_embedding_attrs(const Graph& g, const Node& node) {
  if (!is_f32_embedding(g, node)) throw Unsupported("embedding: not of an f32 table");
  IndexRowsAttrs a;
  a.x = node.args[0];
  a.index = node.args[1];
  a.dim = 0;
  const Value& table = constant_tensor(g, a.x, "table", 2);
  const Value& ids = value_at(g, a.index);
  if (!ids.is_tensor() || ids.dtype != DType::I64 || ids.is_constant) {
    throw Unsupported("embedding: f32 table by ids that are not a run-time int64 tensor");
  }
  if (ids.is_dynamic()) throw Unsupported("embedding: bounded-dynamic ids");
  if (ids.sizes.empty() || ids.sizes.size() > 3) {
    throw Unsupported("embedding: ids of rank " + std::to_string(ids.sizes.size()) +
                      " (1 to 3 taken)");
  }
  for (int64_t s : ids.sizes) {
    if (s < 1) throw Unsupported("embedding: empty ids");
  }
  if (made_by_a_node(g, a.index)) {
    throw Unsupported("embedding: f32 table by ids made in the program (only a method input's "
                      "ids are taken)");
  }
  std::vector<int64_t> expect = ids.sizes;
  expect.push_back(table.sizes[1]);
  if (single_output(g, node).sizes != expect) throw Unsupported("embedding: out shape");
  return a;
}

}  // namespace tern::compiler::cpu_compile
