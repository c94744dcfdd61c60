#version 450
// Upsampling of [planes, H, W] to [planes, OH, OW] with the portable kernels' index rules
// (runtime/kernels/portable/upsample_nearest2d.cpp, upsample_bilinear2d.cpp): nearest picks
// min(floor(o * step), in - 1) (the shortcuts out == in and out == 2 * in first); bilinear is
// ATen's area-pixel source index with its two taps and weights. The steps come from the
// compile half as the portable kernel computes them (1 / scale, in / out, or (in - 1) /
// (out - 1) with align_corners); `precise` keeps the index arithmetic from being fused into
// FMAs, so every index is the one the portable kernel picks. One invocation per output
// element. params: [0] planes, [1] H, [2] W, [3] OH, [4] OW, [5] mode (0 nearest, 1 bilinear),
// [6] align_corners; fparams: [0] step h, [1] step w.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

int nearest_index(int o, int n, int out_n, float step) {
  if (out_n == n) return o;
  if (out_n == 2 * n) return o >> 1;
  precise float s = floor(float(o) * step);
  return int(min(s, float(n - 1)));  // step >= 0 (the reader checks), so s >= 0
}

// The two source taps (i0, i1) and their weights (w0, w1) of output index o.
void bilinear_taps(int o, int n, int out_n, float step, bool align, out ivec2 i, out vec2 w) {
  if (n == out_n) {
    i = ivec2(o);
    w = vec2(1.0, 0.0);
    return;
  }
  precise float real = align ? step * float(o) : step * (float(o) + 0.5) - 0.5;
  real = max(real, 0.0);
  int i0 = int(min(floor(real), float(n - 1)));
  precise float lambda = clamp(real - float(i0), 0.0, 1.0);
  i = ivec2(i0, i0 < n - 1 ? i0 + 1 : i0);
  w = vec2(1.0 - lambda, lambda);
}

void main() {
  uint idx = flat_index();
  int H = pc.p[1], W = pc.p[2], OH = pc.p[3], OW = pc.p[4];
  if (idx >= uint(pc.p[0]) * uint(OH * OW)) return;
  int ox = int(idx % uint(OW));
  int oy = int((idx / uint(OW)) % uint(OH));
  uint plane = (idx / uint(OW * OH)) * uint(H * W);
  if (pc.p[5] == 0) {
    y[idx] = x[plane + uint(nearest_index(oy, H, OH, pc.f[0]) * W + nearest_index(ox, W, OW, pc.f[1]))];
    return;
  }
  bool align = pc.p[6] != 0;
  ivec2 ih, iw;
  vec2 wh, ww;
  bilinear_taps(oy, H, OH, pc.f[0], align, ih, wh);
  bilinear_taps(ox, W, OW, pc.f[1], align, iw, ww);
  uint r0 = plane + uint(ih.x * W), r1 = plane + uint(ih.y * W);
  precise float top = ww.x * float(x[r0 + uint(iw.x)]) + ww.y * float(x[r0 + uint(iw.y)]);
  precise float bottom = ww.x * float(x[r1 + uint(iw.x)]) + ww.y * float(x[r1 + uint(iw.y)]);
  precise float v = wh.x * top + wh.y * bottom;
  y[idx] = STORE_T(v);
}
