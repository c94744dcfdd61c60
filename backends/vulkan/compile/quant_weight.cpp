#include "backends/vulkan/compile/quant_weight.h"

namespace tern::compiler::vulkan_compile {

bool is_quantized_tensor(const Graph& g, int id) { return is_quantized_weight(g, id); }

QuantWeightRef quant_weight(BlobBuilder& b, int id) {
  QuantWeightScheme s;
  try {
    s = quant_weight_scheme(b.graph(), id);
  } catch (const QuantWeightRefused& e) {
    throw Unsupported(e.what());
  }
  QuantWeightRef r;
  r.rows = s.rows;
  r.cols = s.cols;
  int32_t* p = r.params;
  p[vulkan::kQFormat] = static_cast<int32_t>(s.format);
  p[vulkan::kQBlockSize] = static_cast<int32_t>(s.block_size);
  p[vulkan::kQDqBlockSize] = static_cast<int32_t>(s.dq_block_size);
  p[vulkan::kQGranularity] = static_cast<int32_t>(s.granularity);
  p[vulkan::kQBlockRows] = static_cast<int32_t>(s.block_rows);
  p[vulkan::kQBlockCols] = static_cast<int32_t>(s.block_cols);
  p[vulkan::kQScaleWord] = static_cast<int32_t>(s.layout.scale_word);
  p[vulkan::kQAbsmax2Word] = static_cast<int32_t>(s.layout.absmax2_word);
  p[vulkan::kQTableWord] = static_cast<int32_t>(s.layout.table_word);
  p[vulkan::kQRows] = static_cast<int32_t>(r.rows);
  p[vulkan::kQCols] = static_cast<int32_t>(r.cols);
  r.dq_offset = s.dq_offset;
  const uint32_t found = b.find(id);
  if (found != vulkan::kNoValue) {
    r.value = found;
    return r;
  }
  r.value = b.quant_constant(id, {r.rows, r.cols}, 4 * s.layout.total_words,
                             [&] { return quant_weight_buffer(s); });
  return r;
}

void put_quant_params(const QuantWeightRef& w, std::vector<int32_t>* params) {
  params->resize(vulkan::kNodeParams, 0);
  for (uint32_t i = vulkan::kQFormat; i <= vulkan::kQCols; ++i) (*params)[i] = w.params[i];
}

}  // namespace tern::compiler::vulkan_compile
