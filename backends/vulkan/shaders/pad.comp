#version 450
// tern::pad over <= 6 dims: y[o] = x[source of o], or the fill value where o falls outside x
// (constant mode; a negative pad crops), or x's mirror image about its edges (reflect mode,
// each pad below its dim's size, no edge repeated). x is contiguous.
// params: [0] mode (0 constant, 1 reflect), [1..6] output dims, [7..12] input dims,
// [13..18] padding before each dim (negative: cropped); fparams: [0] the fill value.
#include "common.glsl"

layout(std430, binding = 0) buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

void main() {
  uint i = flat_index();
  uint n = 1;
  [[unroll]] for (int d = 0; d < 6; ++d) n *= uint(pc.p[1 + d]);
  if (i >= n) return;
  bool reflect = pc.p[0] == 1;
  uint rem = i;
  int src = 0, stride = 1;
  bool inside = true;
  [[unroll]] for (int d = 5; d >= 0; --d) {
    uint dim = uint(pc.p[1 + d]);
    int size = pc.p[7 + d];
    int s = int(rem % dim) - pc.p[13 + d];
    rem /= dim;
    if (reflect) {
      s = abs(s);
      if (s >= size) s = 2 * (size - 1) - s;
    } else if (s < 0 || s >= size) {
      inside = false;
    }
    src += s * stride;
    stride *= size;
  }
  // No read outside x, even a speculated one: a fill element reads x[0] and discards it.
  float v = float(x[inside ? src : 0]);
  y[i] = STORE_T(inside ? v : pc.f[0]);
}
