#version 450
// Direct 2-D convolution (NCHW, weights [O, C/groups, KH, KW]), any stride, padding, dilation
// and groups (depthwise included). One invocation per output pixel and block of OB output
// channels: OB = 4 when the channels per group are a multiple of 4 (each input value loaded
// once for four channels), else 1 (depthwise); runtime/dispatch_plan.cpp dispatches the same
// count. params: [0] N, [1] C, [2] H, [3] W, [4] O, [5] OH, [6] OW, [7] KH, [8] KW, [9] stride
// h, [10] stride w, [11] pad h, [12] pad w, [13] dilation h, [14] dilation w, [15] groups,
// [16] has bias, [17] clamp after (fparams lo, hi).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T w[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T bias[]; };

float finish(float acc, int o) {
  if (pc.p[16] != 0) acc += float(bias[o]);
  if (pc.p[17] != 0) acc = min(max(acc, pc.f[0]), pc.f[1]);
  return acc;
}

void main() {
  uint i = flat_index();
  int N = pc.p[0], C = pc.p[1], H = pc.p[2], W = pc.p[3], O = pc.p[4], OH = pc.p[5], OW = pc.p[6];
  int KH = pc.p[7], KW = pc.p[8];
  int cg = C / pc.p[15];
  int og = O / pc.p[15];
  int ob = (og % 4 == 0) ? 4 : 1;
  int blocks = O / ob;
  if (i >= uint(N * blocks * OH * OW)) return;
  int ox = int(i % uint(OW));
  int oy = int((i / uint(OW)) % uint(OH));
  int o = int((i / uint(OW * OH)) % uint(blocks)) * ob;
  int n = int(i / uint(OW * OH * blocks));
  int c0 = (o / og) * cg;
  int iy0 = oy * pc.p[9] - pc.p[11];
  int ix0 = ox * pc.p[10] - pc.p[12];
  // The window's rows and columns inside the input: [ky0, ky1) x [kx0, kx1).
  int dh = pc.p[13], dw = pc.p[14];
  int ky0 = iy0 < 0 ? (-iy0 + dh - 1) / dh : 0;
  int ky1 = min(KH, (H - iy0 + dh - 1) / dh);
  int kx0 = ix0 < 0 ? (-ix0 + dw - 1) / dw : 0;
  int kx1 = min(KW, (W - ix0 + dw - 1) / dw);
  uint khw = uint(KH * KW);
  uint xbase = uint((n * C + c0) * H) * uint(W);
  uint plane = uint(H * W);
  if (ob == 4) {
    vec4 acc = vec4(0.0);
    uint wstride = uint(cg) * khw;  // from one output channel's weights to the next
    uint wbase = uint(o * cg) * khw;
    for (int c = 0; c < cg; ++c) {
      for (int ky = ky0; ky < ky1; ++ky) {
        uint xrow = xbase + uint((iy0 + ky * dh) * W + ix0);
        uint wrow = wbase + uint(ky * KW);
        for (int kx = kx0; kx < kx1; ++kx) {
          float v = float(x[xrow + uint(kx * dw)]);
          uint wi = wrow + uint(kx);
          acc += v * vec4(float(w[wi]), float(w[wi + wstride]), float(w[wi + 2u * wstride]),
                          float(w[wi + 3u * wstride]));
        }
      }
      xbase += plane;
      wbase += khw;
    }
    uint obase = uint(((n * O + o) * OH + oy) * OW + ox);
    uint ostride = uint(OH * OW);
    y[obase] = STORE_T(finish(acc.x, o));
    y[obase + ostride] = STORE_T(finish(acc.y, o + 1));
    y[obase + 2u * ostride] = STORE_T(finish(acc.z, o + 2));
    y[obase + 3u * ostride] = STORE_T(finish(acc.w, o + 3));
  } else {
    float acc = 0.0;
    uint wbase = uint(o * cg) * khw;
    for (int c = 0; c < cg; ++c) {
      for (int ky = ky0; ky < ky1; ++ky) {
        uint xrow = xbase + uint((iy0 + ky * dh) * W + ix0);
        uint wrow = wbase + uint(ky * KW);
        for (int kx = kx0; kx < kx1; ++kx) {
          acc += float(x[xrow + uint(kx * dw)]) * float(w[wrow + uint(kx)]);
        }
      }
      xbase += plane;
      wbase += khw;
    }
    y[uint(((n * O + o) * OH + oy) * OW + ox)] = STORE_T(finish(acc, o));
  }
}
