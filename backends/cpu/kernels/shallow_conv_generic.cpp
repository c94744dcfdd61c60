// The shallow convolution's row kernel in portable C++ (baseline x86-64 and aarch64): one
// output pixel at a time, 16 output channels (one packed panel) per inner loop of constant trip
// count, which the compiler may vectorize.
#include <cstring>

#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/shallow_conv.h"

namespace tern::cpu::shallow_detail {
namespace {

void row_generic(const ConvProblem& p, int64_t n, int64_t oy) {
  const int64_t k = p.kernel_h * p.kernel_w * p.in_c;
  const int64_t panel_stride = kPanelWidth * (k + 1);
  const float* xn = p.x + n * p.in_h * p.in_w * p.in_c;
  const int64_t at = (n * p.out_h + oy) * p.out_w * p.out_c;
  for (int64_t ox = 0; ox < p.out_w; ++ox) {
    for (int64_t c0 = 0; c0 < p.out_c; c0 += kPanelWidth) {
      const float* panel = p.packed + (c0 / kPanelWidth) * panel_stride;
      float acc[kPanelWidth];
      for (int64_t j = 0; j < kPanelWidth; ++j) acc[j] = panel[j];
      for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
        const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
        if (iy < 0 || iy >= p.in_h) continue;
        for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
          const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
          if (ix < 0 || ix >= p.in_w) continue;
          const float* xv = xn + (iy * p.in_w + ix) * p.in_c;
          const float* w = panel + kPanelWidth * (1 + (ky * p.kernel_w + kx) * p.in_c);
          for (int64_t c = 0; c < p.in_c; ++c, w += kPanelWidth) {
            for (int64_t j = 0; j < kPanelWidth; ++j) acc[j] += xv[c] * w[j];
          }
        }
      }
      const int64_t cols = p.out_c - c0 < kPanelWidth ? p.out_c - c0 : kPanelWidth;
      float* y = p.y + at + ox * p.out_c + c0;
      const float* r = p.residual != nullptr ? p.residual + at + ox * p.out_c + c0 : nullptr;
      for (int64_t j = 0; j < cols; ++j) {
        float v = acc[j] + (r != nullptr ? r[j] : 0.0f);
        v = v < p.out_min ? p.out_min : v;  // NaN fails both tests and stays
        y[j] = v > p.out_max ? p.out_max : v;
      }
    }
  }
}

}  // namespace

RowFn generic_row() { return &row_generic; }

}  // namespace tern::cpu::shallow_detail
