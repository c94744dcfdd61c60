// Each op the vulkan backend takes, as blob nodes (params by index: backends/vulkan/README.md):
// the table from op name to its lowering (lowerings.h, one file per op family).
#include "backends/vulkan/compile/node_lowering.h"

#include <functional>
#include <map>
#include <string>

#include "backends/vulkan/compile/lowerings.h"

namespace tern::compiler::vulkan_compile {
namespace {

using vulkan::ElementwiseKind;
using vulkan::UnaryKind;

using Lowering = std::function<void(BlobBuilder&, const Node&)>;

Lowering binary(ElementwiseKind kind) {
  return [kind](BlobBuilder& b, const Node& n) { lower_binary(b, n, kind); };
}

Lowering reduce(ReduceOp op) {
  return [op](BlobBuilder& b, const Node& n) { lower_reduce(b, n, op); };
}

const std::map<std::string, Lowering>& table() {
  static const std::map<std::string, Lowering> t = {
      {"tern::linear", lower_linear},
      {"tern::addmm", lower_addmm},
      {"tern::matmul", [](BlobBuilder& b, const Node& n) { lower_matmul(b, n, false); }},
      {"tern::bmm", [](BlobBuilder& b, const Node& n) { lower_matmul(b, n, true); }},
      {"tern::add", binary(ElementwiseKind::Add)},
      {"tern::sub", binary(ElementwiseKind::Sub)},
      {"tern::mul", binary(ElementwiseKind::Mul)},
      {"tern::div", binary(ElementwiseKind::Div)},
      {"tern::where", lower_where},
      {"tern::eq", binary(ElementwiseKind::Eq)},
      {"tern::ne", binary(ElementwiseKind::Ne)},
      {"tern::lt", binary(ElementwiseKind::Lt)},
      {"tern::le", binary(ElementwiseKind::Le)},
      {"tern::gt", binary(ElementwiseKind::Gt)},
      {"tern::ge", binary(ElementwiseKind::Ge)},
      {"tern::logical_and", binary(ElementwiseKind::LogicalAnd)},
      {"tern::logical_or", binary(ElementwiseKind::LogicalOr)},
      {"tern::logical_not", lower_logical_not},
      {"tern::cast", lower_cast},
      {"tern::maximum", binary(ElementwiseKind::Maximum)},
      {"tern::minimum", binary(ElementwiseKind::Minimum)},
      {"tern::relu", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Clamp, 0.0f, kInf); }},
      {"tern::hardtanh", [](BlobBuilder& b, const Node& n) { lower_clamp(b, n, true); }},
      {"tern::clamp", [](BlobBuilder& b, const Node& n) { lower_clamp(b, n, false); }},
      {"tern::gelu", lower_gelu},
      {"tern::silu", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Silu); }},
      {"tern::sigmoid", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Sigmoid); }},
      {"tern::hardswish", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Hardswish); }},
      {"tern::hardsigmoid", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Hardsigmoid); }},
      {"tern::tanh", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Tanh); }},
      {"tern::neg", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Neg); }},
      {"tern::abs", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Abs); }},
      {"tern::exp", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Exp); }},
      {"tern::log", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Log); }},
      {"tern::sqrt", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Sqrt); }},
      {"tern::rsqrt", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Rsqrt); }},
      {"tern::reciprocal", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Reciprocal); }},
      {"tern::erf", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Erf); }},
      {"tern::floor", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Floor); }},
      {"tern::ceil", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Ceil); }},
      {"tern::round", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Round); }},
      {"tern::sin", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Sin); }},
      {"tern::cos", [](BlobBuilder& b, const Node& n) { unary_node(b, n, UnaryKind::Cos); }},
      {"tern::pow", lower_pow},
      {"tern::leaky_relu", lower_leaky_relu},
      {"tern::softplus", lower_softplus},
      {"tern::softmax", lower_softmax},
      {"tern::layer_norm", lower_layer_norm},
      {"tern::rms_norm", lower_rms_norm},
      {"tern::batch_norm", lower_batch_norm},
      {"tern::group_norm", lower_group_norm},
      {"tern::conv1d", [](BlobBuilder& b, const Node& n) { lower_conv(b, n, 1); }},
      {"tern::conv2d", [](BlobBuilder& b, const Node& n) { lower_conv(b, n, 2); }},
      {"tern::conv3d", [](BlobBuilder& b, const Node& n) { lower_conv(b, n, 3); }},
      {"tern::conv_transpose2d", lower_conv_transpose},
      {"tern::upsample_nearest2d", [](BlobBuilder& b, const Node& n) { lower_upsample(b, n, false); }},
      {"tern::upsample_bilinear2d", [](BlobBuilder& b, const Node& n) { lower_upsample(b, n, true); }},
      {"tern::max_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 0); }},
      {"tern::avg_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 1); }},
      {"tern::adaptive_avg_pool2d", [](BlobBuilder& b, const Node& n) { lower_pool(b, n, 2); }},
      {"tern::view", lower_view},
      {"tern::reshape", lower_view},
      {"tern::flatten", lower_view},
      {"tern::squeeze", lower_view},
      {"tern::unsqueeze", lower_view},
      {"tern::clone", lower_view},
      {"tern::permute", [](BlobBuilder& b, const Node& n) { lower_permute(b, n, false); }},
      {"tern::transpose", [](BlobBuilder& b, const Node& n) { lower_permute(b, n, true); }},
      {"tern::expand", lower_expand},
      {"tern::repeat", lower_repeat},
      {"tern::flip", lower_flip},
      {"tern::slice", lower_slice},
      {"tern::select", lower_select},
      {"tern::split", lower_split},
      {"tern::cat", lower_cat},
      {"tern::pad", lower_pad},
      {"tern::mean", reduce(ReduceOp::Mean)},
      {"tern::sum", reduce(ReduceOp::Sum)},
      {"tern::amax", reduce(ReduceOp::Max)},
      {"tern::amin", reduce(ReduceOp::Min)},
      {"tern::cumsum", lower_cumsum},
      {"tern::argmax", reduce(ReduceOp::ArgMax)},
      {"tern::argmin", reduce(ReduceOp::ArgMin)},
      {"tern::embedding", lower_embedding},
      {"tern::index_select", lower_index_select},
      {"tern::index_copy", lower_index_copy},
      {"tern::grouped_mm", [](BlobBuilder& b, const Node& n) { lower_grouped(b, n, false); }},
      {"tern::grouped_linear", [](BlobBuilder& b, const Node& n) { lower_grouped(b, n, true); }},
      {"tern::scaled_dot_product_attention", lower_attention},
  };
  return t;
}

/// Ops whose bool output the 0 / 1 floats of their bool inputs give exactly.
bool makes_bool(const std::string& op) {
  static const char* const kOps[] = {"tern::eq", "tern::ne", "tern::lt", "tern::le", "tern::gt",
                                     "tern::ge", "tern::logical_and", "tern::logical_or",
                                     "tern::logical_not", "tern::where", "tern::repeat", "tern::cast",
                                     "tern::index_select"};
  for (const char* k : kOps) {
    if (op == k) return true;
  }
  return is_data_movement(op);
}

}  // namespace

void lower_node(BlobBuilder& b, const Node& node) {
  auto it = table().find(node.op);
  if (it == table().end()) throw Unsupported("op " + node.op + " is not taken");
  for (int o : node.outputs) {
    if (!val(b.graph(), o).is_tensor()) throw Unsupported("non-tensor output");
  }
  if (node.op != "tern::split" && node.outputs.size() != 1) throw Unsupported("several outputs");
  for (int o : node.outputs) {
    if (val(b.graph(), o).dtype == DType::Bool && !makes_bool(node.op)) {
      throw Unsupported("a bool output of " + node.op + " (the backend holds bools as 0 / 1 "
                        "floats, which only comparisons, logical ops, where and data movement "
                        "keep)");
    }
  }
  it->second(b, node);
}

bool is_data_movement(const std::string& op) {
  static const char* const kOps[] = {"tern::view", "tern::reshape", "tern::flatten",
                                     "tern::squeeze", "tern::unsqueeze", "tern::clone",
                                     "tern::permute", "tern::transpose", "tern::expand",
                                     "tern::slice", "tern::select", "tern::split", "tern::cat",
                                     "tern::pad", "tern::flip"};
  for (const char* k : kOps) {
    if (op == k) return true;
  }
  return false;
}

}  // namespace tern::compiler::vulkan_compile

