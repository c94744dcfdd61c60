// Packing of FC (and flattened conv) weights into the panel layout of the packed GEMM:
// ceil(n/16) panels, panel j = [bias of columns 16j..16j+15][k rows of those 16 columns],
// zero-padded past n. Runs once per weight (compile time or init).
#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"

namespace tern::cpu {

uint64_t packed_weight_floats(int64_t n, int64_t k) {
  if (n <= 0 || k < 0) return 0;
  const uint64_t panels = static_cast<uint64_t>((n + kPanelWidth - 1) / kPanelWidth);
  return panels * static_cast<uint64_t>(kPanelWidth) * (static_cast<uint64_t>(k) + 1);
}

void pack_fc_weight(const float* w, const float* bias, int64_t n, int64_t k, float* out) {
  if (n <= 0 || k < 0) return;
  constexpr int64_t kW = kPanelWidth;
  constexpr int64_t kKBlock = 64;  // rows of K copied per pass: 16 source rows × 256 bytes
  const int64_t panels = (n + kW - 1) / kW;
  const int64_t panel_stride = kW * (k + 1);
  for (int64_t j = 0; j < panels; ++j) {
    float* panel = out + j * panel_stride;
    const int64_t cols = n - j * kW < kW ? n - j * kW : kW;
    for (int64_t c = 0; c < kW; ++c) {
      panel[c] = (c < cols && bias != nullptr) ? bias[j * kW + c] : 0.0f;
    }
    float* data = panel + kW;
    if (cols < kW) std::memset(data, 0, sizeof(float) * static_cast<size_t>(kW * k));
    // Transpose [cols rows of w] x [k] into [k][16], a block of K at a time so the 16 source
    // rows stay in cache while their elements are scattered.
    for (int64_t k0 = 0; k0 < k; k0 += kKBlock) {
      const int64_t k1 = k0 + kKBlock < k ? k0 + kKBlock : k;
      for (int64_t c = 0; c < cols; ++c) {
        const float* src = w + (j * kW + c) * k;
        for (int64_t kk = k0; kk < k1; ++kk) data[kk * kW + c] = src[kk];
      }
    }
  }
}

}  // namespace tern::cpu
