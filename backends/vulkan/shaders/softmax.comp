#version 450
// Softmax along one dim: x viewed as [outer, n, inner]; one workgroup per (outer, inner) row,
// max-subtracted, reductions in shared memory. params: [0] outer, [1] n, [2] inner.
// Dispatch: outer * inner workgroups (folded into 2-D).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

shared float red[WG];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint outer = uint(pc.p[0]), n = uint(pc.p[1]), inner = uint(pc.p[2]);
  if (row >= outer * inner) return;
  uint base = (row / inner) * n * inner + row % inner;
  uint t = gl_LocalInvocationID.x;
  float m = -1.0 / 0.0;
  for (uint j = t; j < n; j += WG) m = max(m, float(x[base + j * inner]));
  red[t] = m;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    barrier();
  }
  m = red[0];
  barrier();
  float sum = 0.0;
  for (uint j = t; j < n; j += WG) sum += exp(float(x[base + j * inner]) - m);
  red[t] = sum;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  float inv = 1.0 / red[0];
  for (uint j = t; j < n; j += WG) y[base + j * inner] = STORE_T(exp(float(x[base + j * inner]) - m) * inv);
}
