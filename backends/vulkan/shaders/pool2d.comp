#version 450
// 2-D pooling over x [NC, H, W] -> [NC, OH, OW], one invocation per output. params: [0] NC,
// [1] H, [2] W, [3] OH, [4] OW, [5] KH, [6] KW, [7] stride h, [8] stride w, [9] pad h, [10] pad
// w, [11] dilation h, [12] dilation w, [13] mode (0 max, 1 avg, 2 adaptive avg), [14]
// count_include_pad, [15] divisor override (0: none).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

void main() {
  uint i = flat_index();
  int H = pc.p[1], W = pc.p[2], OH = pc.p[3], OW = pc.p[4];
  if (i >= uint(pc.p[0] * OH * OW)) return;
  int ox = int(i % uint(OW));
  int oy = int((i / uint(OW)) % uint(OH));
  uint base = (i / uint(OW * OH)) * uint(H * W);
  int mode = pc.p[13];
  if (mode == 2) {  // adaptive: [floor(o * H / OH), ceil((o + 1) * H / OH))
    int y0 = (oy * H) / OH, y1 = ((oy + 1) * H + OH - 1) / OH;
    int x0 = (ox * W) / OW, x1 = ((ox + 1) * W + OW - 1) / OW;
    float s = 0.0;
    for (int yy = y0; yy < y1; ++yy)
      for (int xx = x0; xx < x1; ++xx) s += float(x[base + uint(yy * W + xx)]);
    y[i] = STORE_T(s / float((y1 - y0) * (x1 - x0)));
    return;
  }
  int ys = oy * pc.p[7] - pc.p[9], xs = ox * pc.p[8] - pc.p[10];
  if (mode == 0) {
    float m = -1.0 / 0.0;
    bool nan_seen = false;
    for (int ky = 0; ky < pc.p[5]; ++ky) {
      int yy = ys + ky * pc.p[11];
      if (yy < 0 || yy >= H) continue;
      for (int kx = 0; kx < pc.p[6]; ++kx) {
        int xx = xs + kx * pc.p[12];
        if (xx < 0 || xx >= W) continue;
        float v = float(x[base + uint(yy * W + xx)]);
        if (isnan(v)) nan_seen = true;
        m = max(m, v);
      }
    }
    y[i] = STORE_T(nan_seen ? (0.0 / 0.0) : m);
    return;
  }
  // Average (ATen's rules): the window clipped to the padded input gives the divisor with
  // count_include_pad, clipped to the input without it.
  int ye = min(ys + pc.p[5], H + pc.p[9]), xe = min(xs + pc.p[6], W + pc.p[10]);
  int pool = (ye - ys) * (xe - xs);
  int y0 = max(ys, 0), x0 = max(xs, 0), y1 = min(ye, H), x1 = min(xe, W);
  float s = 0.0;
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) s += float(x[base + uint(yy * W + xx)]);
  int div = pc.p[15] != 0 ? pc.p[15] : (pc.p[14] != 0 ? pool : (y1 - y0) * (x1 - x0));
  y[i] = STORE_T(s / float(div));
}
