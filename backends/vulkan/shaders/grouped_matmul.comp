#version 450
// A grouped product (a mixture of experts' matrices): y[s, n] = sum_k x[s, k] * W_e[k, n] for
// the group e of row s (group_ends.glsl), 0 for rows after the last end. W: params[5] 0 = w
// [E, K, N] (grouped_mm), 1 = w [E·N, K] (grouped_linear: each expert's matrix transposed).
// One invocation per output element, f32 accumulation in k order. params: [0] S, [1] K,
// [2] N, [3] E, [4] words per end, [5] w layout.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T w[]; };
#define ENDS_BINDING 3
#include "group_ends.glsl"

void main() {
  uint i = flat_index();
  uint S = uint(pc.p[0]), K = uint(pc.p[1]), N = uint(pc.p[2]), E = uint(pc.p[3]);
  if (i >= S * N) return;
  uint s = i / N, n = i % N;
  uint e = group_of_row(s, E);
  if (e >= E) {
    y[i] = STORE_T(0.0);
    return;
  }
  float acc = 0.0;
  uint xs = s * K;
  if (pc.p[5] == 0) {
    uint ws = e * K * N + n;
    for (uint k = 0u; k < K; ++k) acc += float(x[xs + k]) * float(w[ws + k * N]);
  } else {
    uint ws = (e * N + n) * K;
    for (uint k = 0u; k < K; ++k) acc += float(x[xs + k]) * float(w[ws + k]);
  }
  y[i] = STORE_T(acc);
}
