#include "backends/vulkan/compile/quant_weight.h"

#include <cmath>
#include <cstring>
#include <string>

namespace tern::compiler::vulkan_compile {
namespace {

using vulkan::QuantFormat;
using vulkan::QuantGranularity;

/// Constant parameter tensor `id` of `dtype` and `count` elements (its bytes), or Unsupported.
const std::vector<uint8_t>& param_data(const Graph& g, const Value& w, int id, DType dtype,
                                       uint64_t count, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    throw Unsupported("quantized weight '" + w.name + "': no " + what + " tensor");
  }
  const Value& v = g.values[static_cast<size_t>(id)];
  const uint64_t bytes = count * (dtype == DType::F32 ? 4 : 1);
  if (!v.is_tensor() || !v.is_constant || v.dtype != dtype || v.data.size() != bytes) {
    throw Unsupported("quantized weight '" + w.name + "': " + what + " is not a constant " +
                      to_string(dtype) + " of " + std::to_string(count) + " elements");
  }
  return v.data;
}

void put(std::vector<uint8_t>& out, uint64_t word, const std::vector<uint8_t>& bytes) {
  std::memcpy(out.data() + 4 * word, bytes.data(), bytes.size());
}

}  // namespace

bool is_quantized_tensor(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  return v.is_tensor() &&
         (v.dtype == DType::NF4 || v.dtype == DType::FP8E4M3 || v.dtype == DType::FP8E5M2);
}

QuantWeightRef quant_weight(BlobBuilder& b, int id) {
  const Graph& g = b.graph();
  if (!is_quantized_tensor(g, id)) throw Unsupported("weight is not an nf4/fp8 tensor");
  const Value& w = g.values[static_cast<size_t>(id)];
  if (!w.is_constant) throw Unsupported("quantized weight '" + w.name + "' is not a constant");
  if (w.sizes.size() != 2) {
    throw Unsupported("quantized weight '" + w.name + "' of rank " +
                      std::to_string(w.sizes.size()) + " (2 is taken)");
  }
  QuantWeightRef r;
  r.rows = w.sizes[0];
  r.cols = w.sizes[1];
  if (r.rows < 1 || r.cols < 1 || r.rows > (int64_t{1} << 30) || r.cols > (int64_t{1} << 30) ||
      r.rows * r.cols > (int64_t{1} << 30)) {
    throw Unsupported("quantized weight '" + w.name + "': more than 2^30 elements or empty");
  }
  const QuantSpec& q = w.quant;
  int32_t* p = r.params;
  if (w.dtype == DType::NF4) {
    if (q.scheme == QuantSpec::Scheme::NF4) {
      p[vulkan::kQFormat] = static_cast<int32_t>(QuantFormat::Nf4);
    } else if (q.scheme == QuantSpec::Scheme::NF4DoubleQuant) {
      p[vulkan::kQFormat] = static_cast<int32_t>(QuantFormat::Nf4DoubleQuant);
      p[vulkan::kQDqBlockSize] = static_cast<int32_t>(q.dq_block_size);
      if (!std::isfinite(q.dq_offset)) {
        throw Unsupported("quantized weight '" + w.name + "': dq_offset not finite");
      }
      r.dq_offset = q.dq_offset;
    } else {
      throw Unsupported("quantized weight '" + w.name + "': nf4 without an nf4 scheme");
    }
    p[vulkan::kQBlockSize] = static_cast<int32_t>(q.block_size);
  } else {
    if (q.scheme != QuantSpec::Scheme::FP8) {
      throw Unsupported("quantized weight '" + w.name + "': fp8 without an fp8 scheme");
    }
    p[vulkan::kQFormat] = static_cast<int32_t>(w.dtype == DType::FP8E4M3 ? QuantFormat::Fp8E4M3
                                                                        : QuantFormat::Fp8E5M2);
    switch (q.granularity) {
      case QuantSpec::Granularity::PerTensor:
        p[vulkan::kQGranularity] = static_cast<int32_t>(QuantGranularity::PerTensor);
        break;
      case QuantSpec::Granularity::PerChannel:
        p[vulkan::kQGranularity] = static_cast<int32_t>(QuantGranularity::PerChannel);
        break;
      case QuantSpec::Granularity::Block2D:
        p[vulkan::kQGranularity] = static_cast<int32_t>(QuantGranularity::Block2D);
        p[vulkan::kQBlockRows] = static_cast<int32_t>(q.block_rows);
        p[vulkan::kQBlockCols] = static_cast<int32_t>(q.block_cols);
        break;
    }
  }
  p[vulkan::kQRows] = static_cast<int32_t>(r.rows);
  p[vulkan::kQCols] = static_cast<int32_t>(r.cols);
  vulkan::QuantLayout l;
  if (!vulkan::quant_layout(p[vulkan::kQFormat], static_cast<uint64_t>(r.rows),
                            static_cast<uint64_t>(r.cols), p[vulkan::kQBlockSize],
                            p[vulkan::kQDqBlockSize], p[vulkan::kQGranularity],
                            p[vulkan::kQBlockRows], p[vulkan::kQBlockCols], &l) ||
      l.total_words > (uint64_t{1} << 30)) {
    throw Unsupported("quantized weight '" + w.name + "': scheme parameters the shaders do not take");
  }
  p[vulkan::kQScaleWord] = static_cast<int32_t>(l.scale_word);
  p[vulkan::kQAbsmax2Word] = static_cast<int32_t>(l.absmax2_word);
  p[vulkan::kQTableWord] = static_cast<int32_t>(l.table_word);

  const uint64_t n = static_cast<uint64_t>(r.rows * r.cols);
  const bool nf4 = w.dtype == DType::NF4;
  const uint64_t code_bytes = nf4 ? (n + 1) / 2 : n;
  if (w.data.size() < code_bytes) {
    throw Unsupported("quantized weight '" + w.name + "': " + std::to_string(w.data.size()) +
                      " bytes of codes, expected " + std::to_string(code_bytes));
  }
  if (!nf4) {
    const bool e4m3 = w.dtype == DType::FP8E4M3;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t c = w.data[i];
      if (e4m3 ? (c & 0x7F) == 0x7F : (c & 0x7C) == 0x7C) {
        throw Unsupported("quantized weight '" + w.name + "': fp8 NaN or infinity code at element " +
                          std::to_string(i));
      }
    }
  }
  // The parameter tensors (checked on the dry run too: supports() answers for them).
  const std::vector<uint8_t>* scale = nullptr;
  const std::vector<uint8_t>* dq_codes = nullptr;
  const std::vector<uint8_t>* absmax2 = nullptr;
  const std::vector<uint8_t>* table = nullptr;
  if (p[vulkan::kQFormat] == static_cast<int32_t>(QuantFormat::Nf4)) {
    scale = &param_data(g, w, q.absmax, DType::F32, l.blocks, "absmax");
  } else if (p[vulkan::kQFormat] == static_cast<int32_t>(QuantFormat::Nf4DoubleQuant)) {
    dq_codes = &param_data(g, w, q.dq_codes, DType::U8, l.blocks, "dq_codes");
    absmax2 = &param_data(g, w, q.dq_absmax2, DType::F32, l.table_word - l.absmax2_word, "dq_absmax2");
    table = &param_data(g, w, q.dq_table, DType::F32, 256, "dq_table");
  } else {
    scale = &param_data(g, w, q.scale, DType::F32, l.blocks, "scale");
  }
  const uint32_t found = b.find(id);
  if (found != vulkan::kNoValue) {
    r.value = found;
    return r;
  }
  r.value = b.quant_constant(id, {r.rows, r.cols}, 4 * l.total_words, [&] {
    std::vector<uint8_t> bytes(4 * l.total_words, 0);
    std::memcpy(bytes.data(), w.data.data(), code_bytes);
    if (scale != nullptr) put(bytes, l.scale_word, *scale);
    if (dq_codes != nullptr) {
      put(bytes, l.scale_word, *dq_codes);
      put(bytes, l.absmax2_word, *absmax2);
      put(bytes, l.table_word, *table);
    }
    return bytes;
  });
  return r;
}

void put_quant_params(const QuantWeightRef& w, std::vector<int32_t>* params) {
  params->resize(vulkan::kNodeParams, 0);
  for (uint32_t i = vulkan::kQFormat; i <= vulkan::kQCols; ++i) (*params)[i] = w.params[i];
}

}  // namespace tern::compiler::vulkan_compile
