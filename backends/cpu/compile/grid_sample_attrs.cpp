#include "backends/cpu/compile/grid_sample_attrs.h"

#include <string>
#include <vector>

namespace tern::compiler::cpu_compile {

GridSampleAttrs grid_sample_attrs(const Graph& g, const Node& node) {
  if (node.args.size() != 5) throw Unsupported("grid_sample2d: expected 5 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& grid = f32_tensor(g, node.args[1], "grid");
  if (grid.is_constant && grid.quant.scheme != QuantSpec::Scheme::None) {
    throw Unsupported("grid: a quantized constant");
  }
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 4 || grid.sizes.size() != 4 || grid.sizes[0] != x.sizes[0] ||
      grid.sizes[3] != 2) {
    throw Unsupported("grid_sample2d: x " + shape_str(x.sizes) + " and grid " +
                      shape_str(grid.sizes) + " (expected [N, C, H, W] and [N, HO, WO, 2])");
  }
  const std::vector<int64_t> expect{x.sizes[0], x.sizes[1], grid.sizes[1], grid.sizes[2]};
  if (out.sizes != expect) {
    throw Unsupported("grid_sample2d: out " + shape_str(out.sizes) + " is not " +
                      shape_str(expect));
  }
  GridSampleAttrs a;
  a.mode = int_value(g, node.args[2], "mode");
  a.padding = int_value(g, node.args[3], "padding_mode");
  a.align_corners = bool_value(g, node.args[4], "align_corners");
  if (a.mode != 0 && a.mode != 1) {
    throw Unsupported("grid_sample2d: mode " + std::to_string(a.mode) +
                      " (0 bilinear and 1 nearest taken)");
  }
  if (a.padding < 0 || a.padding > 2) {
    throw Unsupported("grid_sample2d: padding_mode " + std::to_string(a.padding));
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
