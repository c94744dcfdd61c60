#version 450
// Quantized linear for up to 4 rows of x (batch-1 decode): y[m, n] = sum_k x[m, k] * W(n, k)
// (+ bias[n]), W decoded from the packed nf4 / fp8 codes in the shader (quant_decode.glsl;
// never expanded in memory), accumulated in f32. One workgroup per output column n: its WG
// invocations stride over K (consecutive invocations read consecutive codes of a weight row)
// and reduce in shared memory. params: [0] M (1..4 here), [1] N, [2] K, [3] has bias, [4] W
// transposed (1: W is [N, K], linear; 0: [K, N], matmul), the scheme at 16... Dispatch: N
// workgroups (folded into x, y).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In0 { float x[]; };
layout(std430, binding = 3) readonly buffer In2 { float bias[]; };
#define QW_BINDING 2
#include "quant_decode.glsl"

shared float red[4 * WG];

void main() {
  uint n = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint M = uint(pc.p[0]), N = uint(pc.p[1]), K = uint(pc.p[2]);
  if (n >= N) return;  // the whole workgroup: n is uniform
  bool bt = pc.p[4] != 0;
  uint t = gl_LocalInvocationID.x;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint k = t; k < K; k += WG) {
    float w = bt ? q_weight(n, k) : q_weight(k, n);
    [[unroll]] for (uint m = 0; m < 4; ++m) {
      if (m < M) acc[m] += x[m * K + k] * w;
    }
  }
  [[unroll]] for (uint m = 0; m < 4; ++m) red[m * WG + t] = acc[m];
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      [[unroll]] for (uint m = 0; m < 4; ++m) red[m * WG + t] += red[m * WG + t + s];
    }
    barrier();
  }
  if (t < M) y[t * N + n] = red[t * WG] + (pc.p[3] != 0 ? bias[n] : 0.0);
}
