#include "backends/cpu/compile/quant_lowering.h"

#include <cstring>
#include <string>

#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/kernels/quant_weight.h"
#include "tools/compiler/quant_weight_scheme.h"
#include "runtime/core/dtype.h"

namespace tern::compiler::cpu_compile {
namespace {

/// The float data of constant f32 parameter tensor `id` of `count` elements, or Unsupported.
std::vector<float> param_floats(const Graph& g, int id, uint64_t count, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    throw Unsupported(std::string("quantized weight: no ") + what + " tensor");
  }
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.is_tensor() || !v.is_constant || v.dtype != DType::F32 || v.data.size() != 4 * count) {
    throw Unsupported(std::string("quantized weight: ") + what + " is not a constant f32 [" +
                      std::to_string(count) + "]");
  }
  std::vector<float> f(count);
  std::memcpy(f.data(), v.data.data(), 4 * count);
  return f;
}

std::vector<uint8_t> param_bytes(const Graph& g, int id, uint64_t count, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    throw Unsupported(std::string("quantized weight: no ") + what + " tensor");
  }
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.is_tensor() || !v.is_constant || v.dtype != DType::U8 || v.data.size() != count) {
    throw Unsupported(std::string("quantized weight: ") + what + " is not a constant u8 [" +
                      std::to_string(count) + "]");
  }
  return v.data.to_vector();
}

struct Prepared {
  cpu::QuantWeightDesc desc;
  cpu::QuantWeightLayout layout;
  std::vector<uint8_t> blob;
};

/// Checks quantized weight `id` and builds its blob constant (Unsupported when the backend
/// cannot take it).
Prepared prepare(const Graph& g, int id) {
  const Value& w = value_at(g, id);
  if (!w.is_tensor() || !w.is_constant || !is_quantized_value(g, id)) {
    throw Unsupported("weight: not a constant nf4/fp8 tensor");
  }
  if (w.sizes.size() != 2 || w.sizes[0] < 1 || w.sizes[1] < 1 ||
      w.sizes[0] > (int64_t{1} << 30) || w.sizes[1] > (int64_t{1} << 30)) {
    throw Unsupported("quantized weight: not rank 2 with sides in 1..2^30");
  }
  const QuantSpec& q = w.quant;
  Prepared p;
  cpu::QuantWeightDesc& d = p.desc;
  d.rows = static_cast<uint64_t>(w.sizes[0]);
  d.cols = static_cast<uint64_t>(w.sizes[1]);
  const uint64_t numel = d.rows * d.cols;
  if (w.dtype == DType::NF4) {
    if (q.scheme == QuantSpec::Scheme::NF4) {
      d.format = cpu::QuantWeightFormat::Nf4;
    } else if (q.scheme == QuantSpec::Scheme::NF4DoubleQuant) {
      d.format = cpu::QuantWeightFormat::Nf4DoubleQuant;
      d.dq_block_size = q.dq_block_size;
    } else {
      throw Unsupported("quantized weight: nf4 without an nf4 scheme");
    }
    d.block_size = q.block_size;
  } else {
    if (q.scheme != QuantSpec::Scheme::FP8) throw Unsupported("quantized weight: fp8 scheme");
    d.format = w.dtype == DType::FP8E4M3 ? cpu::QuantWeightFormat::Fp8E4M3
                                         : cpu::QuantWeightFormat::Fp8E5M2;
    switch (q.granularity) {
      case QuantSpec::Granularity::PerTensor:
        d.granularity = cpu::Fp8Granularity::PerTensor;
        break;
      case QuantSpec::Granularity::PerChannel:
        d.granularity = cpu::Fp8Granularity::PerChannel;
        break;
      case QuantSpec::Granularity::Block2D:
        d.granularity = cpu::Fp8Granularity::Block;
        d.block_rows = q.block_rows;
        d.block_cols = q.block_cols;
        break;
    }
  }
  if (!cpu::quant_weight_layout(d, &p.layout)) {
    throw Unsupported("quantized weight: parameters the cpu kernels do not take");
  }
  const uint64_t packed = w.dtype == DType::NF4 ? (numel + 1) / 2 : numel;
  if (w.data.size() < packed) throw Unsupported("quantized weight: packed data too short");
  const cpu::QuantWeightLayout& l = p.layout;
  std::vector<float> absmax, dq_absmax2, dq_table, scale;
  std::vector<uint8_t> dq_codes;
  if (d.format == cpu::QuantWeightFormat::Nf4) {
    absmax = param_floats(g, q.absmax, l.blocks, "absmax");
  } else if (d.format == cpu::QuantWeightFormat::Nf4DoubleQuant) {
    dq_codes = param_bytes(g, q.dq_codes, l.blocks, "dq_codes");
    dq_absmax2 = param_floats(g, q.dq_absmax2, l.dq_groups, "dq_absmax2");
    dq_table = param_floats(g, q.dq_table, 256, "dq_table");
  } else {
    scale = param_floats(g, q.scale, l.scales, "scale");
  }
  p.blob.assign(l.total_bytes, 0);
  cpu::pack_quant_weight(d, l, w.data.data(), absmax.data(), dq_codes.data(), dq_absmax2.data(),
                         dq_table.data(), q.dq_offset, scale.data(), p.blob.data());
  const cpu::QuantWeightView view = cpu::quant_weight_view(d, l, p.blob.data());
  if (cpu::quant_weight_has_nonfinite_codes(view)) {
    throw Unsupported("quantized weight: fp8 NaN or infinity codes");
  }
  return p;
}

}  // namespace

bool is_quantized_value(const Graph& g, int id) { return is_quantized_weight(g, id); }

void check_quant_linear(const Graph& g, const Node& node) {
  if (node.args.size() != 3) throw Unsupported("linear: expected 3 arguments");
  const Value& x = activation_tensor(g, node.args[0], "x");
  const Value& w = value_at(g, node.args[1]);
  const Value& out = single_output(g, node);
  if (x.sizes.size() == 4) throw Unsupported("linear: 4-D x (NHWC inside the delegate)");
  (void)prepare(g, node.args[1]);
  if (w.sizes[1] != x.sizes.back()) throw Unsupported("linear: in features differ");
  if (!is_none(g, node.args[2])) {
    const Value& b = constant_tensor(g, node.args[2], "bias", 1);
    if (b.sizes[0] != w.sizes[0]) throw Unsupported("linear: bias size");
  }
  std::vector<int64_t> expect = x.sizes;
  expect.back() = w.sizes[0];
  if (out.sizes != expect) throw Unsupported("linear: out shape");
}

void check_quant_embedding(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("embedding: expected 2 arguments");
  const Value& w = value_at(g, node.args[0]);
  if (!is_quantized_value(g, node.args[0])) throw Unsupported("embedding: f32 table");
  (void)prepare(g, node.args[0]);
  const Value& idx = value_at(g, node.args[1]);
  if (!idx.is_tensor() || idx.dtype != DType::I64 || idx.is_constant || idx.sizes.empty() ||
      idx.sizes.size() > 2) {
    throw Unsupported("embedding: indices must be a non-constant int64 tensor of rank 1 or 2");
  }
  for (int64_t s : idx.sizes) {
    if (s < 1) throw Unsupported("embedding: empty indices");
  }
  if (made_by_a_node(g, node.args[1])) {
    throw Unsupported("embedding: indices made by a node (not an input)");
  }
  const Value& out = single_output(g, node);
  std::vector<int64_t> expect = idx.sizes;
  expect.push_back(w.sizes[1]);
  if (out.sizes != expect) throw Unsupported("embedding: out shape");
}

QuantBlobWeight quant_blob_weight(const Graph& g, int id) {
  const Prepared p = prepare(g, id);
  QuantBlobWeight out;
  out.floats = p.blob.size() / 4;
  const cpu::QuantWeightDesc& d = p.desc;
  out.params[cpu::kQuantRows] = static_cast<uint32_t>(d.rows);
  out.params[cpu::kQuantCols] = static_cast<uint32_t>(d.cols);
  out.params[cpu::kQuantFormat] = static_cast<uint32_t>(d.format);
  out.params[cpu::kQuantBlockSize] = d.block_size;
  out.params[cpu::kQuantDqBlockSize] = d.dq_block_size;
  out.params[cpu::kQuantGranularity] = static_cast<uint32_t>(d.granularity);
  out.params[cpu::kQuantBlockRows] = d.block_rows;
  out.params[cpu::kQuantBlockCols] = d.block_cols;
  return out;
}

}  // namespace tern::compiler::cpu_compile
