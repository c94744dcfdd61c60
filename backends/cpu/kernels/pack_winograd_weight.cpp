// Packing of a 3x3 conv weight for the Winograd F(2x2, 3x3) convolution: U = G g Gᵀ per (out,
// in) channel pair (computed in double, rounded once), stored as 16 matrices in the packed GEMM's
// panel layout, the bias in matrix 5's bias slots. Runs once per weight (compile time or init).
#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"

namespace tern::cpu {
namespace {

/// G of F(2, 3): rows are the 4 transformed taps of a 3-tap filter.
constexpr double kG[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};

/// The matrix whose M the output transform adds with weight +1 to each of the 4 outputs.
constexpr int kBiasMatrix = 5;

}  // namespace

uint64_t winograd_weight_floats(int64_t out_c, int64_t in_c) {
  if (out_c <= 0 || in_c <= 0) return 0;
  return 16 * packed_weight_floats(out_c, in_c);
}

void pack_winograd_weight(const float* w, const float* bias, int64_t out_c, int64_t in_c,
                          float* out) {
  if (out_c <= 0 || in_c <= 0) return;
  constexpr int64_t kW = kPanelWidth;
  const int64_t matrix = static_cast<int64_t>(packed_weight_floats(out_c, in_c));
  const int64_t panel_stride = kW * (in_c + 1);
  // Zeros everywhere first: the bias slots of 15 matrices and the columns past out_c.
  std::memset(out, 0, sizeof(float) * static_cast<size_t>(16 * matrix));
  for (int64_t o = 0; o < out_c; ++o) {
    const int64_t panel = o / kW, col = o % kW;
    float* base = out + panel * panel_stride + col;  // matrix 0, this column's bias slot
    if (bias != nullptr) base[kBiasMatrix * matrix] = bias[o];
    for (int64_t c = 0; c < in_c; ++c) {
      const float* g = w + (o * in_c + c) * 9;
      // t = G g (4x3), then U = t Gᵀ (4x4).
      double t[4][3];
      for (int a = 0; a < 4; ++a) {
        for (int j = 0; j < 3; ++j) {
          t[a][j] = kG[a][0] * g[0 * 3 + j] + kG[a][1] * g[1 * 3 + j] + kG[a][2] * g[2 * 3 + j];
        }
      }
      float* row = base + kW + c * kW;  // matrix 0, K row c
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          const double u = t[a][0] * kG[b][0] + t[a][1] * kG[b][1] + t[a][2] * kG[b][2];
          row[(4 * a + b) * matrix] = static_cast<float>(u);
        }
      }
    }
  }
}

}  // namespace tern::cpu
