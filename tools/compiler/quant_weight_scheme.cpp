#include "tools/compiler/quant_weight_scheme.h"

#include <cmath>
#include <cstring>
#include <string>

namespace tern::compiler {
namespace {

[[noreturn]] void refuse(const Value& w, const std::string& why) {
  throw QuantWeightRefused("quantized weight '" + w.name + "': " + why);
}

/// Constant parameter tensor `id` of `dtype` and `count` elements (its bytes).
const ConstantBytes* param_data(const Graph& g, const Value& w, int id, DType dtype,
                                       uint64_t count, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) {
    refuse(w, std::string("no ") + what + " tensor");
  }
  const Value& v = g.values[static_cast<size_t>(id)];
  const uint64_t bytes = count * (dtype == DType::F32 ? 4 : 1);
  if (!v.is_tensor() || !v.is_constant || v.dtype != dtype || v.data.size() != bytes) {
    refuse(w, std::string(what) + " is not a constant " + to_string(dtype) + " of " +
                  std::to_string(count) + " elements");
  }
  return &v.data;
}

}  // namespace

bool is_quantized_weight(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  return v.is_tensor() &&
         (v.dtype == DType::NF4 || v.dtype == DType::FP8E4M3 || v.dtype == DType::FP8E5M2);
}

QuantWeightScheme quant_weight_scheme(const Graph& g, int id) {
  if (!is_quantized_weight(g, id)) throw QuantWeightRefused("weight is not an nf4/fp8 tensor");
  const Value& w = g.values[static_cast<size_t>(id)];
  if (!w.is_constant) refuse(w, "not a constant");
  if (w.sizes.size() != 2) refuse(w, "rank " + std::to_string(w.sizes.size()) + " (2 is taken)");
  QuantWeightScheme s;
  s.rows = w.sizes[0];
  s.cols = w.sizes[1];
  constexpr int64_t kMax = static_cast<int64_t>(quant::kMaxQuantElements);
  if (s.rows < 1 || s.cols < 1 || s.rows > kMax || s.cols > kMax || s.rows * s.cols > kMax) {
    refuse(w, "more than 2^30 elements or empty");
  }
  const QuantSpec& q = w.quant;
  if (w.dtype == DType::NF4) {
    if (q.scheme == QuantSpec::Scheme::NF4) {
      s.format = quant::QuantFormat::Nf4;
    } else if (q.scheme == QuantSpec::Scheme::NF4DoubleQuant) {
      s.format = quant::QuantFormat::Nf4DoubleQuant;
      s.dq_block_size = q.dq_block_size;
      if (!std::isfinite(q.dq_offset)) refuse(w, "dq_offset not finite");
      s.dq_offset = q.dq_offset;
    } else {
      refuse(w, "nf4 without an nf4 scheme");
    }
    s.block_size = q.block_size;
  } else {
    if (q.scheme != QuantSpec::Scheme::FP8) refuse(w, "fp8 without an fp8 scheme");
    s.format = w.dtype == DType::FP8E4M3 ? quant::QuantFormat::Fp8E4M3 : quant::QuantFormat::Fp8E5M2;
    switch (q.granularity) {
      case QuantSpec::Granularity::PerTensor: s.granularity = quant::QuantGranularity::PerTensor; break;
      case QuantSpec::Granularity::PerChannel: s.granularity = quant::QuantGranularity::PerChannel; break;
      case QuantSpec::Granularity::Block2D:
        s.granularity = quant::QuantGranularity::Block2D;
        s.block_rows = q.block_rows;
        s.block_cols = q.block_cols;
        break;
    }
  }
  if (!quant::quant_layout(static_cast<int32_t>(s.format), static_cast<uint64_t>(s.rows),
                           static_cast<uint64_t>(s.cols), s.block_size, s.dq_block_size,
                           static_cast<int32_t>(s.granularity), s.block_rows, s.block_cols,
                           &s.layout) ||
      s.layout.total_words > quant::kMaxQuantElements) {
    refuse(w, "scheme parameters out of range (block " + std::to_string(s.block_size) +
                  ", dq block " + std::to_string(s.dq_block_size) + ", tile " +
                  std::to_string(s.block_rows) + "x" + std::to_string(s.block_cols) + ")");
  }
  const uint64_t n = static_cast<uint64_t>(s.rows * s.cols);
  const bool nf4 = w.dtype == DType::NF4;
  s.code_bytes = nf4 ? (n + 1) / 2 : n;
  if (w.data.size() < s.code_bytes) {
    refuse(w, std::to_string(w.data.size()) + " bytes of codes, expected " +
                  std::to_string(s.code_bytes));
  }
  s.codes = &w.data;
  if (!nf4) {
    const bool e4m3 = w.dtype == DType::FP8E4M3;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t c = w.data[i];
      if (e4m3 ? (c & 0x7F) == 0x7F : (c & 0x7C) == 0x7C) {
        refuse(w, "fp8 NaN or infinity code at element " + std::to_string(i));
      }
    }
  }
  const quant::QuantLayout& l = s.layout;
  if (s.format == quant::QuantFormat::Nf4) {
    s.absmax = param_data(g, w, q.absmax, DType::F32, l.blocks, "absmax");
  } else if (s.format == quant::QuantFormat::Nf4DoubleQuant) {
    s.dq_codes = param_data(g, w, q.dq_codes, DType::U8, l.blocks, "dq_codes");
    s.dq_absmax2 = param_data(g, w, q.dq_absmax2, DType::F32, l.table_word - l.absmax2_word,
                              "dq_absmax2");
    s.dq_table = param_data(g, w, q.dq_table, DType::F32, 256, "dq_table");
  } else {
    s.scale = param_data(g, w, q.scale, DType::F32, l.blocks, "scale");
  }
  return s;
}

std::vector<uint8_t> quant_weight_buffer(const QuantWeightScheme& s) {
  const quant::QuantLayout& l = s.layout;
  std::vector<uint8_t> bytes(4 * l.total_words, 0);
  auto put = [&](uint64_t word, const ConstantBytes* src) {
    if (src != nullptr && !src->empty()) std::memcpy(bytes.data() + 4 * word, src->data(), src->size());
  };
  std::memcpy(bytes.data(), s.codes->data(), s.code_bytes);
  put(l.scale_word, s.absmax);
  put(l.scale_word, s.scale);
  put(l.scale_word, s.dq_codes);
  put(l.absmax2_word, s.dq_absmax2);
  put(l.table_word, s.dq_table);
  return bytes;
}

}  // namespace tern::compiler
