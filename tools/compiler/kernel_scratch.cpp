#include "tools/compiler/kernel_scratch.h"

#include <algorithm>
#include <string>

#include "runtime/kernels/util/scratch_sizes.h"

namespace tern::compiler {

namespace {

// graph.values[node.args[i]] when it exists, else null.
const Value* node_arg(const Graph& graph, const Node& node, size_t i) {
  if (i >= node.args.size() || node.args[i] < 0 ||
      static_cast<size_t>(node.args[i]) >= graph.values.size()) {
    return nullptr;
  }
  return &graph.values[static_cast<size_t>(node.args[i])];
}

// Entry d of a spatial parameter as the conv kernels read it (one value repeats), or -1.
int64_t spatial_value(const Value* v, size_t d) {
  if (v == nullptr) return -1;
  if (v->kind == Value::Kind::Int) return v->int_value;
  if (v->kind != Value::Kind::IntList || v->ints.empty()) return -1;
  return v->ints.size() == 1 ? v->ints[0] : (d < v->ints.size() ? v->ints[d] : -1);
}

// Column-buffer bytes of tern::conv3d (scratch_sizes.h), 0 for a malformed node.
uint64_t conv3d_scratch_bytes(const Graph& graph, const Node& node) {
  const Value* x = node_arg(graph, node, 0);
  const Value* w = node_arg(graph, node, 1);
  const Value* groups = node_arg(graph, node, 6);
  if (x == nullptr || w == nullptr || groups == nullptr || !x->is_tensor() || !w->is_tensor() ||
      groups->kind != Value::Kind::Int || w->sizes.size() != 5 || x->sizes.size() < 4 ||
      node.outputs.empty() || node.outputs[0] < 0 ||
      static_cast<size_t>(node.outputs[0]) >= graph.values.size()) {
    return 0;
  }
  const Value& out = graph.values[static_cast<size_t>(node.outputs[0])];
  if (!out.is_tensor() || out.sizes.size() < 4) return 0;
  const Value* stride = node_arg(graph, node, 3);
  const Value* padding = node_arg(graph, node, 4);
  const size_t xr = x->sizes.size();
  const size_t orank = out.sizes.size();
  return portable::conv3d_scratch_bytes(
      x->sizes[xr - 4], groups->int_value, w->sizes[2], w->sizes[3], w->sizes[4],
      spatial_value(stride, 0), spatial_value(stride, 1), spatial_value(stride, 2),
      spatial_value(padding, 0), spatial_value(padding, 1), spatial_value(padding, 2),
      out.sizes[orank - 3], out.sizes[orank - 2], out.sizes[orank - 1]);
}

// Column-buffer bytes of tern::conv1d / conv2d / conv3d / conv_transpose2d (scratch_sizes.h),
// 0 for other ops or malformed nodes (the kernel then reports what it needs).
uint64_t conv_scratch_bytes(const Graph& graph, const Node& node) {
  if (node.op == "tern::conv3d") return conv3d_scratch_bytes(graph, node);
  const bool conv1d = node.op == "tern::conv1d";
  const bool conv2d = node.op == "tern::conv2d";
  const bool transposed = node.op == "tern::conv_transpose2d";
  if (!conv1d && !conv2d && !transposed) return 0;
  const Value* x = node_arg(graph, node, 0);
  const Value* w = node_arg(graph, node, 1);
  const size_t spatial = conv1d ? 1 : 2;
  if (x == nullptr || w == nullptr || !x->is_tensor() || !w->is_tensor() ||
      w->sizes.size() != spatial + 2 || x->sizes.size() < spatial + 1 || node.outputs.empty() ||
      node.outputs[0] < 0 || static_cast<size_t>(node.outputs[0]) >= graph.values.size()) {
    return 0;
  }
  const Value& out = graph.values[static_cast<size_t>(node.outputs[0])];
  const Value* stride = node_arg(graph, node, 3);
  const Value* padding = node_arg(graph, node, 4);
  const int64_t sh = spatial == 2 ? spatial_value(stride, 0) : 1;
  const int64_t sw = spatial_value(stride, spatial - 1);
  const int64_t ph = spatial == 2 ? spatial_value(padding, 0) : 0;
  const int64_t pw = spatial_value(padding, spatial - 1);
  const int64_t kh = spatial == 2 ? w->sizes[2] : 1;
  const int64_t kw = w->sizes.back();
  const size_t xr = x->sizes.size();
  if (transposed) {
    return portable::conv_transpose2d_scratch_bytes(w->sizes[1], kh, kw, sh, sw, ph, pw,
                                                    x->sizes[xr - 2], x->sizes[xr - 1]);
  }
  const Value* groups = node_arg(graph, node, 6);
  if (groups == nullptr || groups->kind != Value::Kind::Int || !out.is_tensor() ||
      out.sizes.size() < spatial + 1) {
    return 0;
  }
  const size_t orank = out.sizes.size();
  return portable::conv2d_scratch_bytes(x->sizes[xr - spatial - 1], groups->int_value, kh, kw,
                                        sh, sw, ph, pw, spatial == 2 ? out.sizes[orank - 2] : 1,
                                        out.sizes[orank - 1]);
}

// Score-block bytes of tern::scaled_dot_product_attention (scratch_sizes.h): a block of query
// rows (q's second-to-last size L) by k's second-to-last size S; 0 for other ops or malformed
// nodes. A q whose L cannot be read plans one row (the kernel's least).
uint64_t attention_scratch_bytes(const Graph& graph, const Node& node) {
  if (node.op != "tern::scaled_dot_product_attention") return 0;
  const Value* q = node_arg(graph, node, 0);
  const Value* k = node_arg(graph, node, 1);
  if (k == nullptr || !k->is_tensor() || k->sizes.size() < 2 || k->sizes[k->sizes.size() - 2] < 0) {
    return 0;
  }
  const uint64_t kv_len = static_cast<uint64_t>(k->sizes[k->sizes.size() - 2]);
  uint64_t q_len = 1;
  if (q != nullptr && q->is_tensor() && q->sizes.size() >= 2 && q->sizes[q->sizes.size() - 2] > 0) {
    q_len = static_cast<uint64_t>(q->sizes[q->sizes.size() - 2]);
  }
  return portable::sdpa_block_scratch_bytes(q_len, kv_len);
}

// Panel bytes of tern::linear with a quantized weight [out, in] (rows = out), tern::matmul
// with a quantized 2-D b [k, n] (rows = k) and tern::grouped_linear with a quantized w [E N, K] (scratch_sizes.h); 0 for other ops, f32 weights or
// malformed nodes.
uint64_t quant_weight_scratch_bytes(const Graph& graph, const Node& node) {
  if (node.op != "tern::linear" && node.op != "tern::matmul" &&
      node.op != "tern::grouped_linear") {  // grouped: rows E N (a group asks for N at most)
    return 0;
  }
  const Value* w = node_arg(graph, node, 1);
  if (w == nullptr || !w->is_tensor() || w->sizes.size() != 2 || w->sizes[0] < 0 ||
      w->sizes[1] < 0) {
    return 0;
  }
  if (w->dtype != DType::NF4 && w->dtype != DType::FP8E4M3 && w->dtype != DType::FP8E5M2) {
    return 0;
  }
  return portable::quant_panel_scratch_bytes(static_cast<uint64_t>(w->sizes[0]),
                                             static_cast<uint64_t>(w->sizes[1]));
}

}  // namespace

uint64_t node_scratch_bytes(const Graph& graph, const Node& node) {
  if (const uint64_t bytes = attention_scratch_bytes(graph, node); bytes != 0) {
    return bytes > UINT64_MAX - portable::kScratchAlignment ? UINT64_MAX
                                                            : bytes + portable::kScratchAlignment;
  }
  if (const uint64_t bytes = conv_scratch_bytes(graph, node); bytes != 0) {
    return bytes > UINT64_MAX - portable::kScratchAlignment ? UINT64_MAX
                                                            : bytes + portable::kScratchAlignment;
  }
  if (const uint64_t bytes = quant_weight_scratch_bytes(graph, node); bytes != 0) {
    return bytes > UINT64_MAX - portable::kScratchAlignment ? UINT64_MAX
                                                            : bytes + portable::kScratchAlignment;
  }
  // Ops with scratch needs add a branch here that calls their function in scratch_sizes.h
  // with the node's argument shapes (graph.values[node.args[i]].sizes).
  return 0;
}

uint64_t method_scratch_bytes(const Graph& graph) {
  uint64_t most = 0;
  for (const Node& node : graph.nodes) {
    most = std::max(most, node_scratch_bytes(graph, node));
  }
  return most;
}

}  // namespace tern::compiler
