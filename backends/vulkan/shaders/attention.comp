#version 450
// Scaled dot-product attention, one workgroup per (batch, query row): the row's S scores in
// shared memory (S <= MAX_S), max-subtracted softmax, then the weighted sum of v rows.
// params: [0] batch, [1] L, [2] S, [3] E, [4] Ev, [5] causal (top-left), [6] has mask (0/1
// floats added; -inf where a bool mask was false), [7] q batch stride, [8] k batch stride,
// [9] v batch stride, [10] mask batch stride, [11] mask row stride, [12] mask column stride,
// [13] kv group: query batch z reads k and v batch z / group (grouped-query attention, 1 when
// k and v have q's batch), [14] mask group: it reads mask batch z / mask group (the mask's
// trailing batch dims broadcast); fparams[0] scale. A row with nothing attended gives zeros. Output [batch, L, Ev].
#include "common.glsl"

layout(constant_id = 2) const uint MAX_S = 2048;

layout(std430, binding = 0) writeonly buffer Out { STORE_T o[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T q[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T k[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T v[]; };
layout(std430, binding = 4) readonly buffer In3 { STORE_T mask[]; };

shared float sc[MAX_S];
shared float red[WG];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint B = uint(pc.p[0]), L = uint(pc.p[1]), S = uint(pc.p[2]), E = uint(pc.p[3]);
  uint Ev = uint(pc.p[4]);
  if (row >= B * L) return;
  uint z = row / L, l = row % L;
  uint t = gl_LocalInvocationID.x;
  uint qb = z * uint(pc.p[7]) + l * E;
  uint zkv = z / uint(pc.p[13]), zm = z / uint(pc.p[14]);
  float m = -1.0 / 0.0;
  for (uint s = t; s < S; s += WG) {
    float a = -1.0 / 0.0;
    if (pc.p[5] == 0 || s <= l) {
      uint kb = zkv * uint(pc.p[8]) + s * E;
      float d = 0.0;
      for (uint e = 0; e < E; ++e) d += float(q[qb + e]) * float(k[kb + e]);
      a = d * pc.f[0];
      if (pc.p[6] != 0) {
        a += float(mask[zm * uint(pc.p[10]) + l * uint(pc.p[11]) + s * uint(pc.p[12])]);
      }
    }
    sc[s] = a;
    m = max(m, a);
  }
  red[t] = m;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    barrier();
  }
  m = red[0];
  barrier();
  float sum = 0.0;
  for (uint s = t; s < S; s += WG) {
    float p = m == -1.0 / 0.0 ? 0.0 : exp(sc[s] - m);
    sc[s] = p;
    sum += p;
  }
  red[t] = sum;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  float inv = red[0] > 0.0 ? 1.0 / red[0] : 0.0;
  uint ob = row * Ev;
  uint vb = zkv * uint(pc.p[9]);
  for (uint e = t; e < Ev; e += WG) {
    float acc = 0.0;
    for (uint s = 0; s < S; ++s) {
      float p = sc[s];
      if (p != 0.0) acc += p * float(v[vb + s * Ev + e]);
    }
    o[ob + e] = STORE_T(acc * inv);
  }
}
