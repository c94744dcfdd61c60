#include "backends/cpu/compile/grouped_matmul.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/quant_lowering.h"
#include "backends/cpu/kernels/quant_weight.h"

namespace tern::compiler::cpu_compile {

namespace {

/// The ends of a grouped product of `groups` experts: a 1-D int32 / int64 tensor of that many
/// elements that no node of the delegate makes; sets a->int32_ends.
void check_ends(const Graph& g, GroupedMatmulAttrs* a) {
  const Value& ends = value_at(g, a->ends);
  if (!ends.is_tensor() || ends.is_constant || ends.sizes.size() != 1 ||
      (ends.dtype != DType::I32 && ends.dtype != DType::I64)) {
    throw Unsupported("the ends are not a 1-D int32 / int64 tensor made at run time");
  }
  if (ends.sizes[0] != a->groups) throw Unsupported("the ends are not [E]");
  a->int32_ends = ends.dtype == DType::I32;
}

}  // namespace

GroupedMatmulAttrs quant_grouped_attrs(const Graph& g, const Node& node) {
  if (node.op != "tern::grouped_linear" || node.args.size() != 3) {
    throw Unsupported("grouped_linear: expected x, w and the group ends");
  }
  GroupedMatmulAttrs a;
  a.x = node.args[0];
  a.w = node.args[1];
  a.ends = node.args[2];
  const Value& x = activation_tensor(g, a.x, "x");
  if (!is_quantized_value(g, a.w)) throw Unsupported("grouped_linear: an f32 w (portable)");
  const QuantBlobWeight qw = quant_blob_weight(g, a.w);  // rank 2, parameters, finite codes
  const Value& w = value_at(g, a.w);
  const Value& ends = value_at(g, a.ends);
  if (x.sizes.size() != 2 || x.sizes[1] != w.sizes[1]) {
    throw Unsupported("grouped_linear: x is not [S, K] with w's K");
  }
  if (!ends.is_tensor() || ends.sizes.size() != 1 || ends.sizes[0] < 1 ||
      w.sizes[0] % ends.sizes[0] != 0) {
    throw Unsupported("grouped_linear: the ends' count does not divide w's rows");
  }
  a.rows = x.sizes[0];
  a.k = x.sizes[1];
  a.groups = ends.sizes[0];
  a.n = w.sizes[0] / a.groups;
  check_ends(g, &a);
  if (!cpu::quant_rows_split_ok(cpu::quant_weight_desc(qw.params), static_cast<uint64_t>(a.n))) {
    throw Unsupported("grouped_linear: " + std::to_string(a.groups) + " experts of " +
                      std::to_string(a.n) +
                      " rows do not split the quantized layout (each a multiple of 8 rows "
                      "starting its blocks, double quantization groups and tiles)");
  }
  if (single_output(g, node).sizes != std::vector<int64_t>{a.rows, a.n}) {
    throw Unsupported("grouped_linear: out shape");
  }
  return a;
}

GroupedMatmulAttrs grouped_matmul_attrs(const Graph& g, const Node& node) {
  if (node.op != "tern::grouped_mm" || node.args.size() != 3) {
    throw Unsupported("grouped_mm: expected x, w and the group ends");
  }
  GroupedMatmulAttrs a;
  a.x = node.args[0];
  a.w = node.args[1];
  a.ends = node.args[2];
  const Value& x = activation_tensor(g, a.x, "x");
  if (is_quantized_value(g, a.w)) throw Unsupported("grouped_mm: a quantized w");
  const Value& w = constant_tensor(g, a.w, "w", 3);
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 2) throw Unsupported("grouped_mm: x is not [S, K]");
  a.rows = x.sizes[0];
  a.k = x.sizes[1];
  a.groups = w.sizes[0];
  a.n = w.sizes[2];
  if (w.sizes[1] != a.k) throw Unsupported("grouped_mm: w's K differs from x's");
  check_ends(g, &a);
  constexpr int64_t kMax = int64_t{1} << 30;
  if (a.k > kMax || a.n > kMax || a.groups > kMax) throw Unsupported("grouped_mm: dims above 2^30");
  if (out.sizes != std::vector<int64_t>{a.rows, a.n}) {
    throw Unsupported("grouped_mm: out shape " + shape_str(out.sizes));
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
