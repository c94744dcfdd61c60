#include "backends/cpu/compile/index_rows.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"

namespace tern::compiler::cpu_compile {

bool is_runtime_index_rows(const Graph& g, const Node& node) {
  size_t at = 0;
  if (node.op == "tern::index_select" && node.args.size() == 3) {
    at = 2;
  } else {
    return false;
  }
  const Value& idx = value_at(g, node.args[at]);
  return idx.is_tensor() && idx.dtype == DType::I64 && !idx.is_constant;
}

IndexRowsAttrs index_rows_attrs(const Graph& g, const Node& node) {
  if (!is_runtime_index_rows(g, node)) {
    throw Unsupported(node.op + ": not indexed by a run-time int64 tensor");
  }
  IndexRowsAttrs a;
  a.embedding = node.op == "tern::embedding";
  a.x = node.args[0];
  a.index = node.args[a.embedding ? 1 : 2];
  const Value& x = f32_tensor(g, a.x, a.embedding ? "weight" : "x");
  if (x.is_constant && x.quant.scheme != QuantSpec::Scheme::None) {
    throw Unsupported("a quantized table (op 24 takes it)");
  }
  const Value& idx = value_at(g, a.index);
  const Value& out = single_output(g, node);
  if (idx.sizes.empty() || idx.sizes.size() > kMaxRank - 1) {
    throw Unsupported("the index's rank " + std::to_string(idx.sizes.size()));
  }
  int64_t count = 1;
  for (int64_t s : idx.sizes) {
    if (s < 1) throw Unsupported("an empty index");
    count *= s;
  }
  std::vector<int64_t> expect;
  if (a.embedding) {
    if (x.sizes.size() != 2) throw Unsupported("embedding: the table is not [rows, dim]");
    expect = idx.sizes;
    expect.push_back(x.sizes[1]);
  } else {
    if (idx.sizes.size() != 1) throw Unsupported("index_select: the index is not 1-D");
    const int64_t rank = static_cast<int64_t>(x.sizes.size());
    a.dim = int_value(g, node.args[1], "dim");
    if (a.dim < 0) a.dim += rank;
    if (a.dim < 0 || a.dim >= rank) throw Unsupported("index_select: dim out of range");
    expect = x.sizes;
    expect[static_cast<size_t>(a.dim)] = count;
  }
  if (out.sizes != expect) throw Unsupported("out shape " + shape_str(out.sizes));
  if (x.sizes.size() == 4 || out.sizes.size() == 4) {
    throw Unsupported("a 4-D x or output (NHWC layouts are not followed through a run-time index)");
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
