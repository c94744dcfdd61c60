// Packing of a 3x3 conv weight for the Winograd convolutions: U = G g Gᵀ per (out, in) channel
// pair (computed in double, rounded once), stored as one matrix per tile position in the packed
// GEMM's panel layout, the bias in the bias slots of the matrix at a = b = 1. Runs once per
// weight (compile time or init).
#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/winograd_conv.h"

namespace tern::cpu {
namespace {

/// G of F(2, 3): rows are the 4 transformed taps of a 3-tap filter.
constexpr double kG2[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};

/// G of F(4, 3) at the points 0, 1, -1, 1/2, -2, ∞ (winograd_f43.h): 6 transformed taps.
constexpr double kG4[6][3] = {{1.0, 0.0, 0.0},
                              {1.0 / 3, 1.0 / 3, 1.0 / 3},
                              {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                              {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                              {1.0 / 15, -2.0 / 15, 4.0 / 15},
                              {0.0, 0.0, 1.0}};

}  // namespace

int64_t winograd_positions(WinogradTile tile) { return tile == WinogradTile::F4x4 ? 36 : 16; }

uint64_t winograd_weight_floats(int64_t out_c, int64_t in_c, WinogradTile tile) {
  if (out_c <= 0 || in_c <= 0) return 0;
  return static_cast<uint64_t>(winograd_positions(tile)) * packed_weight_floats(out_c, in_c);
}

void pack_winograd_weight(const float* w, const float* bias, int64_t out_c, int64_t in_c,
                          float* out, WinogradTile tile) {
  pack_winograd_weight_panels(w, bias, out_c, in_c, out, tile, 0,
                              (out_c + kPanelWidth - 1) / kPanelWidth);
}

void pack_winograd_weight_panels(const float* w, const float* bias, int64_t out_c, int64_t in_c,
                                 float* out, WinogradTile tile, int64_t first_panel,
                                 int64_t end_panel) {
  if (out_c <= 0 || in_c <= 0) return;
  constexpr int64_t kW = kPanelWidth;
  const bool f4 = tile == WinogradTile::F4x4;
  const int side = f4 ? 6 : 4;  // t: the input tile's side, and G's rows
  const double(*g_rows)[3] = f4 ? kG4 : kG2;
  const int64_t positions = winograd_positions(tile);
  const int64_t bias_matrix = side + 1;  // a = b = 1
  const int64_t matrix = static_cast<int64_t>(packed_weight_floats(out_c, in_c));
  const int64_t panel_stride = kW * (in_c + 1);
  const int64_t last_panel = (out_c + kW - 1) / kW;
  if (end_panel > last_panel) end_panel = last_panel;
  if (first_panel < 0) first_panel = 0;
  if (first_panel >= end_panel) return;
  // Zeros first over these panels of every matrix: the other matrices' bias slots and the
  // columns past out_c.
  for (int64_t m = 0; m < positions; ++m) {
    std::memset(out + m * matrix + first_panel * panel_stride, 0,
                sizeof(float) * static_cast<size_t>((end_panel - first_panel) * panel_stride));
  }
  const int64_t end_o = end_panel * kW < out_c ? end_panel * kW : out_c;
  for (int64_t o = first_panel * kW; o < end_o; ++o) {
    const int64_t panel = o / kW, col = o % kW;
    float* base = out + panel * panel_stride + col;  // matrix 0, this column's bias slot
    if (bias != nullptr) base[bias_matrix * matrix] = bias[o];
    for (int64_t c = 0; c < in_c; ++c) {
      const float* g = w + (o * in_c + c) * 9;
      // t = G g (side x 3), then U = t Gᵀ (side x side).
      double t[6][3];
      for (int a = 0; a < side; ++a) {
        for (int j = 0; j < 3; ++j) {
          t[a][j] = g_rows[a][0] * g[0 * 3 + j] + g_rows[a][1] * g[1 * 3 + j] +
                    g_rows[a][2] * g[2 * 3 + j];
        }
      }
      float* row = base + kW + c * kW;  // matrix 0, K row c
      for (int a = 0; a < side; ++a) {
        for (int b = 0; b < side; ++b) {
          const double u = t[a][0] * g_rows[b][0] + t[a][1] * g_rows[b][1] + t[a][2] * g_rows[b][2];
          row[(side * a + b) * matrix] = static_cast<float>(u);
        }
      }
    }
  }
}

}  // namespace tern::cpu
