#version 450
// Direct 2-D and 3-D convolution (NCHW / NCDHW, weights [O, C/groups, KD, KH, KW]; a 2-D conv is
// the 3-D one with D = OD = KD = 1), any stride, padding, dilation and groups (depthwise
// included). One invocation per output voxel and block of OB output channels: OB = 4 when the
// channels per group are a multiple of 4 (each input value loaded once for four channels), else
// 1 (depthwise); runtime/dispatch_plan.cpp dispatches the same count. params: [0] N, [1] C,
// [2] H, [3] W, [4] O, [5] OH, [6] OW, [7] KH, [8] KW, [9] stride h, [10] stride w, [11] pad h,
// [12] pad w, [13] dilation h, [14] dilation w, [15] groups, [16] has bias, [17] clamp after
// (fparams lo, hi), [18] D, [19] OD, [20] KD, [21] stride d, [22] pad d, [23] dilation d.
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

// The window's taps inside the input along one dimension: [k0, k1) for an input start i0, a
// kernel of K taps, dilation dil and input extent n.
ivec2 taps(int i0, int K, int dil, int n) {
  return ivec2(i0 < 0 ? (-i0 + dil - 1) / dil : 0, min(K, (n - i0 + dil - 1) / dil));
}

void main() {
  uint i = flat_index();
  int N = pc.p[0], C = pc.p[1], H = pc.p[2], W = pc.p[3], O = pc.p[4], OH = pc.p[5], OW = pc.p[6];
  int KH = pc.p[7], KW = pc.p[8];
  int D = pc.p[18], OD = pc.p[19], KD = pc.p[20];
  int cg = C / pc.p[15];
  int og = O / pc.p[15];
  int ob = (og % 4 == 0) ? 4 : 1;
  int blocks = O / ob;
  uint osp = uint(OD * OH) * uint(OW);  // output voxels per channel
  if (i >= uint(N * blocks) * osp) return;
  int ox = int(i % uint(OW));
  int oy = int((i / uint(OW)) % uint(OH));
  int oz = int((i / uint(OW * OH)) % uint(OD));
  int o = int((i / osp) % uint(blocks)) * ob;
  int n = int(i / (osp * uint(blocks)));
  int c0 = (o / og) * cg;
  int iz0 = oz * pc.p[21] - pc.p[22];
  int iy0 = oy * pc.p[9] - pc.p[11];
  int ix0 = ox * pc.p[10] - pc.p[12];
  int dd = pc.p[23], dh = pc.p[13], dw = pc.p[14];
  ivec2 kz = taps(iz0, KD, dd, D);
  ivec2 ky = taps(iy0, KH, dh, H);
  ivec2 kx = taps(ix0, KW, dw, W);
  uint khw = uint(KH * KW);
  uint kvol = uint(KD) * khw;         // weights per (output, input) channel pair
  uint plane = uint(H * W);
  uint volume = uint(D) * plane;      // input values per channel
  uint xbase = uint(n * C + c0) * volume;
  uint obase = uint(n * O + o) * osp + uint((oz * OH + oy) * OW + ox);
  if (ob == 4) {
    vec4 acc = vec4(0.0);
    uint wstride = uint(cg) * kvol;  // from one output channel's weights to the next
    uint wbase = uint(o * cg) * kvol;
    for (int c = 0; c < cg; ++c) {
      for (int tz = kz.x; tz < kz.y; ++tz) {
        uint xplane = xbase + uint(iz0 + tz * dd) * plane;
        uint wplane = wbase + uint(tz) * khw;
        for (int ty = ky.x; ty < ky.y; ++ty) {
          uint xrow = xplane + uint((iy0 + ty * dh) * W + ix0);
          uint wrow = wplane + uint(ty * KW);
          for (int tx = kx.x; tx < kx.y; ++tx) {
            float v = float(x[xrow + uint(tx * dw)]);
            uint wi = wrow + uint(tx);
            acc += v * vec4(float(w[wi]), float(w[wi + wstride]), float(w[wi + 2u * wstride]),
                            float(w[wi + 3u * wstride]));
          }
        }
      }
      xbase += volume;
      wbase += kvol;
    }
    y[obase] = STORE_T(finish(acc.x, o));
    y[obase + osp] = STORE_T(finish(acc.y, o + 1));
    y[obase + 2u * osp] = STORE_T(finish(acc.z, o + 2));
    y[obase + 3u * osp] = STORE_T(finish(acc.w, o + 3));
  } else {
    float acc = 0.0;
    uint wbase = uint(o * cg) * kvol;
    for (int c = 0; c < cg; ++c) {
      for (int tz = kz.x; tz < kz.y; ++tz) {
        uint xplane = xbase + uint(iz0 + tz * dd) * plane;
        uint wplane = wbase + uint(tz) * khw;
        for (int ty = ky.x; ty < ky.y; ++ty) {
          uint xrow = xplane + uint((iy0 + ty * dh) * W + ix0);
          uint wrow = wplane + uint(ty * KW);
          for (int tx = kx.x; tx < kx.y; ++tx) {
            acc += float(x[xrow + uint(tx * dw)]) * float(w[wrow + uint(tx)]);
          }
        }
      }
      xbase += volume;
      wbase += kvol;
    }
    y[obase] = STORE_T(finish(acc, o));
  }
}
