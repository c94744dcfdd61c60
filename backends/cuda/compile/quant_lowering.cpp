#include "backends/cuda/compile/quant_lowering.h"

#include <string>
#include <vector>

#include "tools/compiler/quant_weight_scheme.h"

namespace tern::compiler::cuda_compile {
namespace {

QuantWeightScheme scheme_of(const Graph& g, int id) {
  try {
    return quant_weight_scheme(g, id);
  } catch (const QuantWeightRefused& e) {
    throw Unsupported(e.what());
  }
}

/// params[kQFormat..kQBlockCols] and fparams[0] of a quant node.
void put_scheme(const QuantWeightScheme& s, PendingNode* p) {
  p->params[cuda::kQFormat] = static_cast<int64_t>(s.format);
  p->params[cuda::kQBlockSize] = s.block_size;
  p->params[cuda::kQDqBlockSize] = s.dq_block_size;
  p->params[cuda::kQGranularity] = static_cast<int64_t>(s.granularity);
  p->params[cuda::kQBlockRows] = s.block_rows;
  p->params[cuda::kQBlockCols] = s.block_cols;
  p->fparams[0] = s.dq_offset;
}

const Value& value_of(const Graph& g, int id, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    throw Unsupported(std::string(what) + ": value id out of range");
  }
  return g.values[static_cast<size_t>(id)];
}

/// A non-quantized f32 tensor of rank 1..6 with dims in 1..2^31.
const Value& f32_tensor(const Graph& g, int id, const char* what) {
  const Value& v = value_of(g, id, what);
  if (!v.is_tensor() || v.dtype != DType::F32 || v.quant.scheme != QuantSpec::Scheme::None) {
    throw Unsupported(std::string(what) + " is not an f32 tensor");
  }
  if (v.sizes.empty() || v.sizes.size() > cuda::kMaxDims) {
    throw Unsupported(std::string(what) + ": rank 0 or above 6");
  }
  for (int64_t d : v.sizes) {
    if (d < 1 || static_cast<uint64_t>(d) > cuda::kMaxDim) {
      throw Unsupported(std::string(what) + ": empty or huge dim in " + shape_str(v.sizes));
    }
  }
  return v;
}

const Value& single_output(const Graph& g, const Node& node) {
  if (node.outputs.size() != 1) throw Unsupported("expected one output");
  const Value& out = f32_tensor(g, node.outputs[0], "output");
  if (out.is_constant || out.is_state) throw Unsupported("output is a constant or state");
  return out;
}

}  // namespace

bool reads_quantized_weight(const Graph& g, const Node& node) {
  if ((node.op == "tern::linear" || node.op == "tern::matmul") && node.args.size() >= 2) {
    return is_quantized_weight(g, node.args[1]);
  }
  if (node.op == "tern::embedding" && !node.args.empty()) {
    return is_quantized_weight(g, node.args[0]);
  }
  if (node.op == "tern::grouped_linear" && node.args.size() >= 2) {
    return is_quantized_weight(g, node.args[1]);
  }
  return false;
}

NodeLowering lower_quant_linear(const Graph& g, const Node& node) {
  if (node.op != "tern::linear") {
    throw Unsupported("a quantized right-hand side of matmul (only linear weights [out, in] "
                      "are decoded by the cuda kernels)");
  }
  if (node.args.size() != 3) throw Unsupported("linear: expected 3 arguments");
  const Value& x = f32_tensor(g, node.args[0], "x");
  const QuantWeightScheme s = scheme_of(g, node.args[1]);
  const Value& out = single_output(g, node);
  const int64_t k = x.sizes.back(), n = s.rows;
  if (s.cols != k) {
    throw Unsupported("linear: weight [" + std::to_string(s.rows) + ", " + std::to_string(s.cols) +
                      "] for x " + shape_str(x.sizes));
  }
  int bias = -1;
  const Value& b = value_of(g, node.args[2], "bias");
  if (b.kind != Value::Kind::None) {
    f32_tensor(g, node.args[2], "bias");
    if (b.sizes != std::vector<int64_t>{n}) throw Unsupported("linear: bias is not [out]");
    bias = node.args[2];
  }
  std::vector<int64_t> expect = x.sizes;
  expect.back() = n;
  if (out.sizes != expect) {
    throw Unsupported("linear: output " + shape_str(out.sizes) + ", expected " + shape_str(expect));
  }
  uint64_t m = 1;
  for (size_t d = 0; d + 1 < x.sizes.size(); ++d) m *= static_cast<uint64_t>(x.sizes[d]);
  if (m > (uint64_t{1} << 22)) throw Unsupported("linear: more than 2^22 rows of x");
  PendingNode p;
  p.op = cuda::NodeOp::QuantLinear;
  p.inputs = {node.args[0], node.args[1], bias};
  p.output = node.outputs[0];
  p.params[0] = static_cast<int64_t>(m);
  p.params[1] = n;
  p.params[2] = k;
  put_scheme(s, &p);
  NodeLowering l;
  l.nodes.push_back(p);
  return l;
}

NodeLowering lower_quant_embedding(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("embedding: arguments");
  const QuantWeightScheme s = scheme_of(g, node.args[0]);
  const Value& idx = value_of(g, node.args[1], "indices");
  if (!idx.is_tensor() || (idx.dtype != DType::I64 && idx.dtype != DType::I32) ||
      idx.sizes.empty() || idx.sizes.size() + 1 > cuda::kMaxDims) {
    throw Unsupported("embedding: indices not an i64/i32 tensor of rank 1..5");
  }
  uint64_t count = 1;
  for (int64_t d : idx.sizes) {
    if (d < 1 || static_cast<uint64_t>(d) > cuda::kMaxDim) throw Unsupported("embedding: indices dims");
    count *= static_cast<uint64_t>(d);
  }
  if (count > cuda::kMaxDim) throw Unsupported("embedding: more than 2^31 indices");
  const Value& out = single_output(g, node);
  std::vector<int64_t> expect = idx.sizes;
  expect.push_back(s.cols);
  if (out.sizes != expect) {
    throw Unsupported("embedding: output " + shape_str(out.sizes) + ", expected " + shape_str(expect));
  }
  PendingNode p;
  p.op = cuda::NodeOp::QuantEmbedding;
  p.inputs = {node.args[0], node.args[1]};
  p.output = node.outputs[0];
  p.params[0] = s.rows;
  p.params[1] = s.cols;
  p.params[2] = static_cast<int64_t>(count);
  put_scheme(s, &p);
  NodeLowering l;
  l.nodes.push_back(p);
  return l;
}

NodeLowering lower_quant_grouped_linear(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("grouped_linear: expected x, w and the group ends");
  const Value& x = f32_tensor(g, node.args[0], "x");
  const QuantWeightScheme s = scheme_of(g, node.args[1]);
  const Value& ends = value_of(g, node.args[2], "ends");
  if (!ends.is_tensor() || (ends.dtype != DType::I64 && ends.dtype != DType::I32) ||
      ends.sizes.size() != 1 || ends.sizes[0] < 1 || ends.sizes[0] > 65534) {
    throw Unsupported("grouped_linear: the ends are not a 1-D i64/i32 tensor of 1..65534 experts");
  }
  const int64_t e = ends.sizes[0];
  if (x.sizes.size() != 2 || s.cols != x.sizes[1] || s.rows % e != 0) {
    throw Unsupported("grouped_linear: x " + shape_str(x.sizes) + " and w [" +
                      std::to_string(s.rows) + ", " + std::to_string(s.cols) +
                      "] are not [S, K] and [E N, K] for " + std::to_string(e) + " experts");
  }
  const int64_t n = s.rows / e;
  const Value& out = single_output(g, node);
  if (out.sizes != std::vector<int64_t>{x.sizes[0], n}) {
    throw Unsupported("grouped_linear: output " + shape_str(out.sizes) + ", expected [S, N]");
  }
  if (x.sizes[0] > (int64_t{1} << 22)) throw Unsupported("grouped_linear: more than 2^22 rows");
  PendingNode p;
  p.op = cuda::NodeOp::QuantGroupedLinear;
  p.inputs = {node.args[0], node.args[1], node.args[2]};
  p.output = node.outputs[0];
  p.params[0] = x.sizes[0];
  p.params[1] = n;
  p.params[2] = x.sizes[1];
  put_scheme(s, &p);
  NodeLowering l;
  l.nodes.push_back(p);
  return l;
}

uint64_t quant_weight_device_bytes(const Graph& g, int id) {
  return 4 * scheme_of(g, id).layout.total_words;
}

}  // namespace tern::compiler::cuda_compile
