#include "backends/cpu/compile/affine_index.h"
#include "backends/cpu/compile/cpu_backend_compiler.h"

#include <memory>
#include <stdexcept>

#include "backends/cpu/compile/attention_attrs.h"
#include "backends/cpu/compile/deconv_attrs.h"
#include "backends/cpu/compile/dynamic_rows.h"
#include "backends/cpu/compile/gather_map_plan.h"
#include "backends/cpu/compile/grid_sample_attrs.h"
#include "backends/cpu/compile/grouped_matmul.h"
#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/layout_plan.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/quant_lowering.h"
#include "backends/cpu/compile/region_lowering.h"
#include "backends/cpu/compile/register_cpu_backend_compiler.h"
#include "backends/cpu/compile/index_rows.h"
#include "backends/cpu/compile/where_select.h"

namespace tern::compiler {

using namespace cpu_compile;

namespace {

void check_unary(const Graph& g, const Node& node) {
  const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
  const Value& out = single_output(g, node);
  if (x.sizes != out.sizes) throw Unsupported("out shape differs from x");
}

void check_node(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  if (op == "tern::conv2d") {
    (void)conv_attrs(g, node);
  } else if (op == "tern::upsample_bilinear2d") {  // XNNPACK's bilinear resize (op 31)
    (void)bilinear_upsample_align_corners(g, node);
  } else if (op == "tern::upsample_nearest2d") {  // an integer factor: a broadcast copy
    (void)nearest_upsample(g, node);
  } else if (op == "tern::conv1d") {  // as a conv2d of height 1 on [N, 1, L, C]
    (void)conv1d_attrs(g, node);
  } else if (op == "tern::conv3d") {  // tern's 3-D conv (op 33) on NDHWC bytes
    (void)conv3d_attrs(g, node);
  } else if (op == "tern::conv_transpose2d") {  // XNNPACK's deconvolution (op 41)
    (void)conv_transpose2d_attrs(g, node);
  } else if (op == "tern::linear" && node.args.size() == 3 &&
             is_quantized_value(g, node.args[1])) {  // NF4 / FP8 weight: op 23
    check_quant_linear(g, node);
  } else if (op == "tern::grouped_mm") {  // tern's grouped product (op 46)
    (void)grouped_matmul_attrs(g, node);
  } else if (op == "tern::grouped_linear") {  // NF4 / FP8 experts (op 47)
    (void)quant_grouped_attrs(g, node);
  } else if (is_runtime_index_rows(g, node)) {
    (void)index_rows_attrs(g, node);  // an f32 x by a run-time index: IndexRows (op 45)
  } else if (is_f32_embedding(g, node)) {  // IndexRows (op 45) on the table by input ids
    (void)f32_embedding_attrs(g, node);
  } else if (op == "tern::embedding") {  // NF4 / FP8 table: op 24
    check_quant_embedding(g, node);
  } else if (op == "tern::linear") {
    if (node.args.size() != 3) throw Unsupported("linear: expected 3 arguments");
    const Value& x = activation_tensor(g, node.args[0], "x");
    const Value& w = constant_tensor(g, node.args[1], "weight", 2);
    const Value& out = single_output(g, node);
    // A 4-D x must be channels last (plain): check_layout.
    if (w.sizes[1] != x.sizes.back()) throw Unsupported("linear: in features differ");
    if (!is_none(g, node.args[2])) {
      const Value& b = constant_tensor(g, node.args[2], "bias", 1);
      if (b.sizes[0] != w.sizes[0]) throw Unsupported("linear: bias size");
    }
    std::vector<int64_t> expect = x.sizes;
    expect.back() = w.sizes[0];
    if (out.sizes != expect) throw Unsupported("linear: out shape");
  } else if (op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div" ||
             op == "tern::maximum" || op == "tern::minimum") {
    (void)binary_alpha(g, node);
  } else if (op == "tern::where" && is_where_of_activation_condition(g, node)) {
    check_where_of_activation_condition(g, node);  // tern's select (op 44)
  } else if (op == "tern::tril" || op == "tern::triu") {  // a select by a constant mask (op 44)
    int64_t rows = 0, cols = 0;
    (void)triangle_keep_mask(g, node, &rows, &cols);
  } else if (select_compare_mode(op) != 0) {  // fused into the selects reading it (op 44)
    (void)check_fused_comparison(g, node);
  } else if (op == "tern::where") {  // a constant condition: a minimum and a maximum
    (void)where_select(g, node);
  } else if (op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp") {
    float lo, hi;
    clamp_bounds(g, node, &lo, &hi);
    check_unary(g, node);
  } else if (op == "tern::leaky_relu") {  // a multiply and a maximum (or minimum)
    (void)leaky_relu_slope(g, node);
    check_unary(g, node);
  } else if (is_reduction_op(op)) {
    (void)reduction_attrs(g, node);  // the layout each kind needs: check_layout
  } else if (op == "tern::pow") {  // 2, 3, 0.5: products / sqrt; else op 38's pow
    (void)pow_math_exponent(g, node);
  } else if (op == "tern::rsqrt" || op == "tern::sqrt" || op == "tern::abs" ||
             op == "tern::tanh" || op == "tern::neg" || op == "tern::reciprocal") {
    check_unary_elementwise(g, node);
  } else if (is_unary_math_op(op)) {  // tern's unary math (op 38)
    (void)unary_math_attrs(g, node);
  } else if (op == "tern::cumsum") {  // tern's running sum (op 39)
    (void)cumsum_dim(g, node);
  } else if (op == "tern::hardswish" || op == "tern::sigmoid" || op == "tern::hardsigmoid" ||
             op == "tern::silu") {
    if (node.args.size() != 1) throw Unsupported("expected 1 argument");
    check_unary(g, node);
  } else if (op == "tern::gelu") {
    (void)gelu_tanh_form(g, node);
    check_unary(g, node);
  } else if (op == "tern::softmax") {
    if (node.args.size() != 2) throw Unsupported("softmax: expected 2 arguments");
    const Value& x = activation_tensor(g, node.args[0], "x");
    check_unary(g, node);
    const int64_t rank = static_cast<int64_t>(x.sizes.size());
    int64_t dim = int_value(g, node.args[1], "dim");
    if (dim < 0) dim += rank;
    // Over any dim: the last one directly (a 4-D NHWC x through a plain copy: check_layout),
    // a dim followed by dims of 1 only as the last dim of a view (ConvBERT's dynamic conv
    // kernel: [N, K, 1] over dim 1), another through copies that move it last and back
    // (ResNeSt's split attention: over the radix, dim 1 of [N, radix, cardinality, C]).
    if (dim < 0 || dim >= rank) throw Unsupported("softmax: dim out of range");
    if (rank > static_cast<int64_t>(cpu::kMaxDims)) throw Unsupported("softmax: rank above 6");
  } else if (op == "tern::cat") {
    // Each part is bound on its own: made in the region or a region input (the partitioner
    // passes a tensor list's elements one by one, docs/partitioning.md).
    (void)concat_inputs(g, node);
  } else if (op == "tern::index_select" && is_affine_index_select(g, node)) {
    // an affine walk: a strided copy
  } else if (op == "tern::grid_sample2d") {  // tern's grid sample (op 43)
    (void)grid_sample_attrs(g, node);
  } else if (is_gather_map_op(op)) {  // any other constant index: tern's GatherMap (op 42)
    (void)gather_map_plan(g, node);
  } else if (is_index_map_op(op)) {  // permute, transpose, slice, ...: strided copies
    check_index_map(g, node);
  } else if (op == "tern::bmm" || op == "tern::matmul") {
    check_batch_matmul(g, node);
  } else if (op == "tern::scaled_dot_product_attention") {
    (void)sdpa_attrs(g, node);
  } else if (op == "tern::layer_norm") {
    (void)layer_norm_attrs(g, node);
  } else if (op == "tern::rms_norm") {  // op 25 in RMS mode (since version 21)
    (void)rms_norm_attrs(g, node);
  } else if (op == "tern::group_norm") {
    (void)group_norm_attrs(g, node);
  } else if (op == "tern::batch_norm") {
    (void)batch_norm_affine(g, node);
  } else if (op == "tern::max_pool2d" || op == "tern::avg_pool2d") {
    (void)pool_attrs(g, node, op == "tern::max_pool2d");
  } else if (op == "tern::adaptive_avg_pool2d") {
    if (node.args.size() != 2) throw Unsupported("adaptive_avg_pool2d: arguments");
    const Value& x = activation_tensor(g, node.args[0], "x");
    const Value& out = single_output(g, node);
    int64_t size[2];
    spatial(g, node.args[1], "output_size", nullptr, 0, size);
    if (x.sizes.size() != 4 || size[0] != 1 || size[1] != 1) {
      throw Unsupported("adaptive_avg_pool2d: only [N, C, H, W] to 1x1");
    }
    if (out.sizes != std::vector<int64_t>{x.sizes[0], x.sizes[1], 1, 1}) {
      throw Unsupported("adaptive_avg_pool2d: out shape");
    }
  } else if (is_cpu_view_op(op)) {
    if (node.args.empty()) throw Unsupported("view: no x");
    const Value& x = f32_tensor(g, node.args[0], "x");
    if (x.is_constant) throw Unsupported("view: of a constant");
    const Value& out = single_output(g, node);
    uint64_t nx = 1, no = 1;
    for (int64_t d : x.sizes) nx *= static_cast<uint64_t>(d);
    for (int64_t d : out.sizes) no *= static_cast<uint64_t>(d);
    if (nx != no) throw Unsupported("view: element counts differ");
    // Whether it reorders an NHWC tensor's bytes depends on the layouts: check_layout.
  } else if (op == "tern::pad") {
    const Value& x = activation_tensor(g, arg(node, 0, "x"), "x");
    const Value& out = single_output(g, node);
    std::vector<int64_t> pre, post;
    float value;
    bool reflect;
    pad_amounts(g, node, x.sizes.size(), &pre, &post, &value, &reflect);
    if (reflect) check_reflect_pad(x.sizes, pre, post);  // a GatherMap: gather_map_plan.h
    std::vector<int64_t> expect = x.sizes;
    for (size_t d = 0; d < expect.size(); ++d) expect[d] += pre[d] + post[d];
    if (out.sizes != expect) throw Unsupported("pad: out shape");
  } else {
    throw Unsupported("op not taken by the cpu backend");
  }
}

}  // namespace

namespace {

/// Why `node` is not taken, given the graph's layout plan `plain` (plain_4d_values).
std::string reason_with_plan(const Graph& graph, const Node& node, const std::vector<bool>& plain) {
  try {
    check_node(graph, node);
    check_layout(graph, node, plain);
  } catch (const Unsupported& e) {
    // Messages name the op themselves ("tern::mean: ...", "mean: ...") or not ("x: ...").
    const std::string what = e.what();
    const std::string short_op = node.op.rfind("tern::", 0) == 0 ? node.op.substr(6) : node.op;
    if (what.rfind(node.op + ":", 0) == 0) return what;
    if (what.rfind(short_op + ":", 0) == 0) return "tern::" + what;
    return node.op + ": " + what;
  }
  return "";
}

}  // namespace

std::string CpuBackendCompiler::unsupported_reason(const Graph& graph, const Node& node) {
  return reason_with_plan(graph, node, plain_4d_values(graph));
}

std::vector<std::string> CpuBackendCompiler::why_unsupported_each(const Graph& graph) const {
  const std::vector<bool> plain = plain_4d_values(graph);  // once: it walks the whole graph
  std::vector<std::string> why;
  why.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) why.push_back(reason_with_plan(graph, node, plain));
  return why;
}

bool CpuBackendCompiler::supports(const Graph& graph, const Node& node) const {
  return unsupported_reason(graph, node).empty();
}

bool CpuBackendCompiler::supports_dynamic_shapes(const Graph& graph, const Node& node) const {
  // Rows maps only (dynamic_rows.h); the weight and bias of a linear are constants
  // (supports() checked), so never dynamic.
  return is_dynamic_rows_map(graph, node) && supports(graph, node);
}

bool CpuBackendCompiler::accepts_region(const Graph& graph, const std::vector<int>& nodes) const {
  // A comparison is fused into the selects that read it: no node makes its bool mask. A run
  // whose comparison is read by a node outside it (the where came after a node the backend
  // does not take) cannot be lowered, and stays portable.
  std::vector<bool> in_run(graph.nodes.size(), false);
  bool compares = false;
  for (int n : nodes) {
    if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) continue;
    in_run[static_cast<size_t>(n)] = true;
    compares = compares || select_compare_mode(graph.nodes[static_cast<size_t>(n)].op) != 0;
  }
  if (compares) {  // what the nodes outside the run read (through a cat's list too), once
    std::vector<bool> read_outside(graph.values.size(), false);
    auto mark = [&](int v) {
      if (v >= 0 && static_cast<size_t>(v) < graph.values.size()) {
        read_outside[static_cast<size_t>(v)] = true;
      }
    };
    for (size_t r = 0; r < graph.nodes.size(); ++r) {
      if (in_run[r]) continue;
      for (int a : graph.nodes[r].args) {
        mark(a);
        if (a < 0 || static_cast<size_t>(a) >= graph.values.size()) continue;
        for (int t : graph.values[static_cast<size_t>(a)].tensors) mark(t);
      }
    }
    for (int n : nodes) {
      if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) continue;
      const Node& cmp = graph.nodes[static_cast<size_t>(n)];
      if (select_compare_mode(cmp.op) == 0 || cmp.outputs.size() != 1) continue;
      const int out = cmp.outputs[0];
      if (out >= 0 && static_cast<size_t>(out) < graph.values.size() &&
          read_outside[static_cast<size_t>(out)]) {
        return false;
      }
    }
  }
  for (int n : nodes) {
    if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) continue;
    const Node& node = graph.nodes[static_cast<size_t>(n)];
    const std::string& op = node.op;
    // An f32 embedding is a row copy, worth a delegate only with work beside it.
    const bool quant_embedding = op == "tern::embedding" && !is_f32_embedding(graph, node);
    if (op == "tern::conv2d" || op == "tern::conv1d" || op == "tern::conv3d" ||
        op == "tern::conv_transpose2d" || op == "tern::linear" || quant_embedding ||
        op == "tern::bmm" || op == "tern::matmul" || op == "tern::scaled_dot_product_attention" ||
        op == "tern::max_pool2d" || op == "tern::avg_pool2d" || op == "tern::adaptive_avg_pool2d" ||
        op == "tern::mean" || op == "tern::grouped_mm" || op == "tern::grouped_linear") {
      return true;
    }
  }
  return false;
}

LoweredRegion CpuBackendCompiler::lower(const Graph& graph, const DelegateRegion& region) const {
  const std::vector<bool> plain = plain_4d_values(graph);
  for (int n : region.nodes) {
    if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size()) {
      throw std::invalid_argument("cpu backend: region node " + std::to_string(n) +
                                  " out of range");
    }
    const Node& node = graph.nodes[static_cast<size_t>(n)];
    const std::string why = reason_with_plan(graph, node, plain);
    if (!why.empty()) {
      throw std::invalid_argument("cpu backend: node " + std::to_string(n) + " ('" +
                                  node.debug_name + "'): " + why);
    }
  }
  LoweredRegion lowered;
  lowered.blob = cpu_compile::lower_region(graph, region, options_);
  return lowered;
}

std::unique_ptr<BackendCompiler> CpuBackendCompiler::with_options(
    const std::string& options) const {
  const cpu_compile::CpuOptions parsed = cpu_compile::parse_cpu_options(options);
  if (parsed == options_) return nullptr;
  return std::make_unique<CpuBackendCompiler>(parsed);
}

void register_cpu_backend_compiler() {
  register_backend_compiler(std::make_unique<CpuBackendCompiler>());
}

}  // namespace tern::compiler
