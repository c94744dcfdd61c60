#include "backends/cpu/runtime/layout_transpose.h"

namespace tern::cpu {
namespace {

constexpr uint64_t kTile = 16;

/// dst[j][i] = src[i][j] for an rows x cols row-major matrix, in kTile x kTile tiles.
void transpose_2d(const float* src, float* dst, uint64_t rows, uint64_t cols) {
  for (uint64_t i0 = 0; i0 < rows; i0 += kTile) {
    const uint64_t i1 = i0 + kTile < rows ? i0 + kTile : rows;
    for (uint64_t j0 = 0; j0 < cols; j0 += kTile) {
      const uint64_t j1 = j0 + kTile < cols ? j0 + kTile : cols;
      for (uint64_t i = i0; i < i1; ++i) {
        const float* s = src + i * cols;
        for (uint64_t j = j0; j < j1; ++j) dst[j * rows + i] = s[j];
      }
    }
  }
}

}  // namespace

void nchw_to_nhwc(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw) {
  for (uint64_t b = 0; b < n; ++b) transpose_2d(src + b * c * hw, dst + b * c * hw, c, hw);
}

void nhwc_to_nchw(const float* src, float* dst, uint64_t n, uint64_t c, uint64_t hw) {
  for (uint64_t b = 0; b < n; ++b) transpose_2d(src + b * c * hw, dst + b * c * hw, hw, c);
}

}  // namespace tern::cpu
