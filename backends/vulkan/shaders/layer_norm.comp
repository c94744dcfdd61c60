#version 450
// Layer norm over the last n elements of each row (biased variance, two passes over the row in
// shared-memory reductions): one workgroup per row. params: [0] rows, [1] n, [2] has weight,
// [3] has bias, [4] RMS norm (no mean taken out: x / sqrt(mean(x^2) + eps) * w); fparams[0]
// eps.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T w[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T bias[]; };

shared float red[WG];

float reduce_sum(float v, uint t) {
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint rows = uint(pc.p[0]), n = uint(pc.p[1]);
  if (row >= rows) return;
  uint base = row * n;
  uint t = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint j = t; j < n; j += WG) s += float(x[base + j]);
  float mean = pc.p[4] != 0 ? 0.0 : reduce_sum(s, t) / float(n);
  float v = 0.0;
  for (uint j = t; j < n; j += WG) {
    float d = float(x[base + j]) - mean;
    v += d * d;
  }
  float rstd = inversesqrt(reduce_sum(v, t) / float(n) + pc.f[0]);
  for (uint j = t; j < n; j += WG) {
    float r = (float(x[base + j]) - mean) * rstd;
    if (pc.p[2] != 0) r *= float(w[j]);
    if (pc.p[3] != 0) r += float(bias[j]);
    y[base + j] = STORE_T(r);
  }
}
