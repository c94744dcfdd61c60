#include "backends/cpu/compile/deconv_attrs.h"

#include <string>
#include <vector>

namespace tern::compiler::cpu_compile {

DeconvAttrs conv_transpose2d_attrs(const Graph& g, const Node& node) {
  // x, w, b, stride, padding, output_padding, groups, dilation -> out
  if (node.args.size() != 8) throw Unsupported("conv_transpose2d: expected 8 arguments");
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& w = constant_tensor(g, arg(node, 1, "weight"), "weight", 4);
  const Value& out = single_output(g, node);
  if (x.sizes.size() != 4) throw Unsupported("conv_transpose2d: x is not [N, C, H, W]");
  DeconvAttrs a{};
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  // (spatial() bounds each value by 2^30, as the blob reader does.)
  spatial(g, node.args[3], "stride", one, 1, a.stride);
  spatial(g, node.args[4], "padding", zero, 0, a.pad);
  spatial(g, node.args[5], "output_padding", zero, 0, a.output_padding);
  spatial(g, node.args[7], "dilation", one, 1, a.dilation);
  a.groups = int_value(g, node.args[6], "groups");
  const int64_t c = x.sizes[1];
  if (a.groups < 1 || c % a.groups != 0 || a.groups > (int64_t{1} << 30)) {
    throw Unsupported("conv_transpose2d: groups " + std::to_string(a.groups) + " do not divide " +
                      std::to_string(c) + " channels");
  }
  const int64_t o = w.sizes[1] * a.groups;
  if (w.sizes[0] != c) {
    throw Unsupported("conv_transpose2d: weight " + shape_str(w.sizes) + " vs x " +
                      shape_str(x.sizes));
  }
  if (!is_none(g, node.args[2])) {
    const Value& b = constant_tensor(g, node.args[2], "bias", 1);
    if (b.sizes[0] != o) throw Unsupported("conv_transpose2d: bias size");
  }
  std::vector<int64_t> expect{x.sizes[0], o, 0, 0};
  for (size_t d = 0; d < 2; ++d) {
    // XNNPACK adds the output padding (its adjustment) only below the stride.
    if (a.output_padding[d] >= a.stride[d]) {
      throw Unsupported("conv_transpose2d: output_padding not below the stride");
    }
    const int64_t k = w.sizes[2 + d];
    if (k > (int64_t{1} << 30)) throw Unsupported("conv_transpose2d: kernel too large");
    expect[2 + d] = (x.sizes[2 + d] - 1) * a.stride[d] + a.dilation[d] * (k - 1) + 1 +
                    a.output_padding[d] - 2 * a.pad[d];
  }
  if (out.sizes != expect) {
    throw Unsupported("conv_transpose2d: out " + shape_str(out.sizes) + " is not " +
                      shape_str(expect));
  }
  return a;
}

}  // namespace tern::compiler::cpu_compile
