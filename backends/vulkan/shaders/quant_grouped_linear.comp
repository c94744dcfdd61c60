#version 450
// A grouped product with nf4 / fp8 experts (grouped_linear): y[s, n] = sum_k x[s, k] *
// W(e N + n, k) for the group e of row s (group_ends.glsl), 0 for rows after the last end; W
// the [E·N, K] weight decoded in the shader (quant_decode.glsl: never expanded in memory). One
// invocation per output element, f32 accumulation in k order. params: [0] S, [1] K, [2] N,
// [3] E, [4] words per end, the scheme at 16...
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In0 { float x[]; };
#define QW_BINDING 2
#include "quant_decode.glsl"
#define ENDS_BINDING 3
#include "group_ends.glsl"

void main() {
  uint i = flat_index();
  uint S = uint(pc.p[0]), K = uint(pc.p[1]), N = uint(pc.p[2]), E = uint(pc.p[3]);
  if (i >= S * N) return;
  uint s = i / N, n = i % N;
  uint e = group_of_row(s, E);
  if (e >= E) {
    y[i] = 0.0;
    return;
  }
  float acc = 0.0;
  uint xs = s * K, r = e * N + n;
  for (uint k = 0u; k < K; ++k) acc += x[xs + k] * q_weight(r, k);
  y[i] = acc;
}
