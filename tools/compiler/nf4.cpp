#include "tools/compiler/nf4.h"

#include <algorithm>
#include <cmath>

#include "runtime/kernels/util/quant_formats.h"

namespace tern::compiler {

const std::array<float, 15>& nf4_midpoints() {
  static const std::array<float, 15> mids = [] {
    std::array<float, 15> m{};
    for (int i = 0; i < 15; ++i) m[i] = (quant::kNf4Code[i] + quant::kNf4Code[i + 1]) / 2.0f;
    return m;
  }();
  return mids;
}

uint8_t nf4_code_index(float scaled) {
  const std::array<float, 15>& mids = nf4_midpoints();
  uint8_t index = 0;
  for (float m : mids) index += m < scaled ? 1 : 0;
  return index;
}

float nf4_clamped_absmax(float absmax) { return std::max(absmax, 1e-38f); }

Nf4Encoded nf4_quantize(const float* x, uint64_t n, uint32_t block_size) {
  Nf4Encoded out;
  const uint64_t blocks = (n + block_size - 1) / block_size;
  out.absmax.resize(blocks);
  out.packed.assign((n + 1) / 2, 0);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t begin = b * block_size;
    const uint64_t end = std::min<uint64_t>(begin + block_size, n);
    float amax = 0.0f;
    for (uint64_t e = begin; e < end; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float stored = nf4_clamped_absmax(amax);
    out.absmax[b] = stored;
    const bool full = end - begin == block_size;
    const float reciprocal = 1.0f / stored;
    for (uint64_t e = begin; e < end; ++e) {
      float s = full ? x[e] * reciprocal : x[e] / stored;
      s = std::min(1.0f, std::max(-1.0f, s));
      const uint8_t q = nf4_code_index(s);
      out.packed[e >> 1] |= (e & 1) ? q : static_cast<uint8_t>(q << 4);
    }
  }
  return out;
}

const std::array<float, 256>& bnb_dynamic_map() {
  static const std::array<float, 256> table = [] {
    std::vector<float> data;
    for (int i = 0; i < 7; ++i) {
      const int n = (1 << i) + 1;
      const float start = 0.1f;
      const float end = 1.0f;
      const float step = (end - start) / static_cast<float>(n - 1);
      std::vector<float> points(static_cast<size_t>(n));
      for (int j = 0; j < n; ++j) {
        points[j] = j < n / 2 ? std::fma(step, static_cast<float>(j), start)
                              : std::fma(-step, static_cast<float>(n - 1 - j), end);
      }
      const float scale = static_cast<float>(std::pow(10.0, i - 6));
      for (int j = 0; j + 1 < n; ++j) {
        const float mean = (points[j] + points[j + 1]) / 2.0f;
        data.push_back(scale * mean);
        data.push_back(-scale * mean);
      }
    }
    data.push_back(0.0f);
    data.push_back(1.0f);
    while (data.size() < 256) data.push_back(0.0f);
    std::sort(data.begin(), data.end());
    std::array<float, 256> t{};
    std::copy(data.begin(), data.begin() + 256, t.begin());
    return t;
  }();
  return table;
}

uint8_t table_code_index(const std::array<float, 256>& table, float v) {
  // Midpoints are ascending with the table; count those strictly below v (binary search).
  int lo = 0;
  int hi = 255;  // answer in [0, 255]
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const float m = (table[mid] + table[mid + 1]) / 2.0f;
    if (m < v) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return static_cast<uint8_t>(lo);
}

Nf4DoubleQuant nf4_double_quantize(const std::vector<float>& absmax, uint32_t dq_block_size) {
  Nf4DoubleQuant dq;
  dq.table = bnb_dynamic_map();
  const uint64_t n = absmax.size();
  if (n == 0) return dq;
  double sum = 0.0;
  for (float a : absmax) sum += a;
  dq.offset = static_cast<float>(sum / static_cast<double>(n));
  std::vector<float> centered(n);
  for (uint64_t i = 0; i < n; ++i) centered[i] = absmax[i] - dq.offset;
  const uint64_t blocks = (n + dq_block_size - 1) / dq_block_size;
  dq.absmax2.resize(blocks);
  dq.codes.resize(n);
  const uint8_t zero_index = table_code_index(dq.table, 0.0f);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t begin = b * dq_block_size;
    const uint64_t end = std::min<uint64_t>(begin + dq_block_size, n);
    float amax = 0.0f;
    for (uint64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(centered[i]));
    dq.absmax2[b] = amax;
    for (uint64_t i = begin; i < end; ++i) {
      dq.codes[i] = amax == 0.0f ? zero_index : table_code_index(dq.table, centered[i] / amax);
    }
  }
  return dq;
}

float nf4_dq_absmax(const Nf4DoubleQuant& dq, uint64_t index, uint32_t dq_block_size) {
  const float scaled = dq.table[dq.codes[index]] * dq.absmax2[index / dq_block_size];
  return scaled + dq.offset;
}

}  // namespace tern::compiler
