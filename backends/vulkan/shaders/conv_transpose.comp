#version 450
// Transposed 2-D convolution (NCHW; weights [C, O/groups, KH, KW], PyTorch's layout), any
// stride, padding, output padding (in OH / OW), dilation and groups; a ConvTranspose1d is the
// exporter's height-1 form. One invocation per output element gathers the input pixels whose
// scattered window covers it: tap (ky, kx) of input (iy, ix) lands on (iy * stride - pad +
// ky * dilation, ...), so for output (oy, ox) a tap counts when oy + pad - ky * dilation is a
// non-negative multiple of the stride below H * stride. params: [0] N, [1] C, [2] H, [3] W,
// [4] O, [5] OH, [6] OW, [7] KH, [8] KW, [9] stride h, [10] stride w, [11] pad h, [12] pad w,
// [13] dilation h, [14] dilation w, [15] groups, [16] has bias.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T w[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T bias[]; };

void main() {
  uint i = flat_index();
  int N = pc.p[0], C = pc.p[1], H = pc.p[2], W = pc.p[3], O = pc.p[4], OH = pc.p[5], OW = pc.p[6];
  int KH = pc.p[7], KW = pc.p[8];
  int sh = pc.p[9], sw = pc.p[10], ph = pc.p[11], pw = pc.p[12], dh = pc.p[13], dw = pc.p[14];
  int og = O / pc.p[15], cg = C / pc.p[15];
  uint plane = uint(OH * OW);
  if (i >= uint(N * O) * plane) return;
  int ox = int(i % uint(OW));
  int oy = int((i / uint(OW)) % uint(OH));
  int o = int((i / plane) % uint(O));
  int n = int(i / (plane * uint(O)));
  int g = o / og, oj = o % og;
  float acc = pc.p[16] != 0 ? float(bias[o]) : 0.0;
  uint khw = uint(KH * KW);
  for (int c = g * cg; c < (g + 1) * cg; ++c) {
    uint xplane = uint(n * C + c) * uint(H * W);
    uint wbase = (uint(c) * uint(og) + uint(oj)) * khw;
    for (int ky = 0; ky < KH; ++ky) {
      int ty = oy + ph - ky * dh;
      if (ty < 0 || ty % sh != 0 || ty / sh >= H) continue;
      uint xrow = xplane + uint((ty / sh) * W);
      uint wrow = wbase + uint(ky * KW);
      for (int kx = 0; kx < KW; ++kx) {
        int tx = ox + pw - kx * dw;
        if (tx < 0 || tx % sw != 0 || tx / sw >= W) continue;
        acc += float(x[xrow + uint(tx / sw)]) * float(w[wrow + uint(kx)]);
      }
    }
  }
  y[i] = STORE_T(acc);
}
