#version 450
// Direct 2-D convolution (NCHW, weights [O, C/groups, KH, KW]), any stride, padding, dilation
// and groups (depthwise included): one invocation per output element. params: [0] N, [1] C,
// [2] H, [3] W, [4] O, [5] OH, [6] OW, [7] KH, [8] KW, [9] stride h, [10] stride w, [11] pad h,
// [12] pad w, [13] dilation h, [14] dilation w, [15] groups, [16] has bias, [17] clamp after
// (fparams lo, hi).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In0 { float x[]; };
layout(std430, binding = 2) readonly buffer In1 { float w[]; };
layout(std430, binding = 3) readonly buffer In2 { float bias[]; };

void main() {
  uint i = flat_index();
  int N = pc.p[0], C = pc.p[1], H = pc.p[2], W = pc.p[3], O = pc.p[4], OH = pc.p[5], OW = pc.p[6];
  int KH = pc.p[7], KW = pc.p[8];
  if (i >= uint(N * O * OH * OW)) return;
  int ox = int(i % uint(OW));
  int oy = int((i / uint(OW)) % uint(OH));
  int o = int((i / uint(OW * OH)) % uint(O));
  int n = int(i / uint(OW * OH * O));
  int cg = C / pc.p[15];
  int og = O / pc.p[15];
  int c0 = (o / og) * cg;
  int iy0 = oy * pc.p[9] - pc.p[11];
  int ix0 = ox * pc.p[10] - pc.p[12];
  float acc = 0.0;
  for (int c = 0; c < cg; ++c) {
    uint xbase = uint(((n * C + c0 + c) * H)) * uint(W);
    uint wbase = uint((o * cg + c) * KH * KW);
    for (int ky = 0; ky < KH; ++ky) {
      int iy = iy0 + ky * pc.p[13];
      if (iy < 0 || iy >= H) continue;
      for (int kx = 0; kx < KW; ++kx) {
        int ix = ix0 + kx * pc.p[14];
        if (ix < 0 || ix >= W) continue;
        acc += x[xbase + uint(iy * W + ix)] * w[wbase + uint(ky * KW + kx)];
      }
    }
  }
  if (pc.p[16] != 0) acc += bias[o];
  if (pc.p[17] != 0) acc = min(max(acc, pc.f[0]), pc.f[1]);
  y[i] = acc;
}
