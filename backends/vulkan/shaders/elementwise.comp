#version 450
// Broadcasting binary ops (add, sub, mul, div, maximum, minimum; comparisons and logical and /
// or giving 1.0 or 0.0) and where over up to 6 dims. params: [0] kind (ElementwiseKind),
// [1] has_b (0: b is the scalar fparams[1]), [2..7] output dims, [8..13] a strides,
// [14..19] b strides, [20..25] c strides (elements; 0 where broadcast); fparams[0] alpha.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T a[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T b[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T c[]; };

void main() {
  uint i = flat_index();
  uint n = 1;
  [[unroll]] for (int d = 0; d < 6; ++d) n *= uint(pc.p[2 + d]);
  if (i >= n) return;
  uint rem = i, ia = 0, ib = 0, ic = 0;
  [[unroll]] for (int d = 5; d >= 0; --d) {
    uint dim = uint(pc.p[2 + d]);
    uint k = rem % dim;
    rem /= dim;
    ia += k * uint(pc.p[8 + d]);
    ib += k * uint(pc.p[14 + d]);
    ic += k * uint(pc.p[20 + d]);
  }
  float va = float(a[ia]);
  float vb = pc.p[1] != 0 ? float(b[ib]) : pc.f[1];
  float r;
  switch (pc.p[0]) {
    case 0: r = va + pc.f[0] * vb; break;
    case 1: r = va - pc.f[0] * vb; break;
    case 2: r = va * vb; break;
    case 3: r = va / vb; break;
    case 4: r = float(c[ic]) != 0.0 ? va : vb; break;
    case 5: r = isnan(va) ? va : isnan(vb) ? vb : (va > vb ? va : vb); break;
    case 6: r = isnan(va) ? va : isnan(vb) ? vb : (va < vb ? va : vb); break;
    case 7: r = va == vb ? 1.0 : 0.0; break;
    case 8: r = va == vb ? 0.0 : 1.0; break;  // NaN != anything
    case 9: r = va < vb ? 1.0 : 0.0; break;
    case 10: r = va <= vb ? 1.0 : 0.0; break;
    case 11: r = va > vb ? 1.0 : 0.0; break;
    case 12: r = va >= vb ? 1.0 : 0.0; break;
    case 13: r = (va != 0.0 || isnan(va)) && (vb != 0.0 || isnan(vb)) ? 1.0 : 0.0; break;
    default: r = (va != 0.0 || isnan(va)) || (vb != 0.0 || isnan(vb)) ? 1.0 : 0.0; break;
  }
  y[i] = STORE_T(r);
}
