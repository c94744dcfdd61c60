#include "backends/cpu/compile/grouped_matmul.h"

#include <string>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/quant_lowering.h"

namespace tern::compiler::cpu_compile {

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
  const Value& ends = value_at(g, a.ends);
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 2) throw Unsupported("grouped_mm: x is not [S, K]");
  if (!ends.is_tensor() || ends.is_constant || ends.sizes.size() != 1 ||
      (ends.dtype != DType::I32 && ends.dtype != DType::I64)) {
    throw Unsupported("grouped_mm: the ends are not a 1-D int32 / int64 tensor made at run time");
  }
  a.rows = x.sizes[0];
  a.k = x.sizes[1];
  a.groups = w.sizes[0];
  a.n = w.sizes[2];
  a.int32_ends = ends.dtype == DType::I32;
  if (w.sizes[1] != a.k) throw Unsupported("grouped_mm: w's K differs from x's");
  if (ends.sizes[0] != a.groups) throw Unsupported("grouped_mm: the ends are not [E]");
  constexpr int64_t kMax = int64_t{1} << 30;
  if (a.k > kMax || a.n > kMax || a.groups > kMax) throw Unsupported("grouped_mm: dims above 2^30");
  if (out.sizes != std::vector<int64_t>{a.rows, a.n}) {
    throw Unsupported("grouped_mm: out shape " + shape_str(out.sizes));
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
