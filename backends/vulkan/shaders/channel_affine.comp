#version 450
// y = x * scale[c] + shift[c] over x [N, C, inner]: batch_norm in eval mode, its statistics
// folded into scale and shift at compile time. params: [0] N, [1] C, [2] inner.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T scale[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T shift[]; };

void main() {
  uint i = flat_index();
  uint C = uint(pc.p[1]), inner = uint(pc.p[2]);
  if (i >= uint(pc.p[0]) * C * inner) return;
  uint c = (i / inner) % C;
  y[i] = STORE_T(float(x[i]) * float(scale[c]) + float(shift[c]));
}
