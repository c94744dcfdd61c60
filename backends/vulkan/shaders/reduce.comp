#version 450
// Sum over some dims times a scale (mean: 1 / count), or (version 10) their maximum or
// minimum, a NaN winning as in ATen's amax / amin: one invocation per output element.
// Kinds 3 and 4 (argmax, argmin) write the row-major index over the reduced dims of the first
// maximum / minimum as a float, a NaN counting as both (ATen's rule: the first NaN wins).
// params: [0] kind (0 sum, 1 max, 2 min, 3 argmax, 4 argmin), [1..6] kept dims (the output's), [7..12] their input
// strides, [13] unused, [14..19] reduced dims, [20..25] their input strides; fparams[0] the
// sum's scale.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

void main() {
  uint i = flat_index();
  uint n = 1, r = 1;
  [[unroll]] for (int d = 0; d < 6; ++d) {
    n *= uint(pc.p[1 + d]);
    r *= uint(pc.p[14 + d]);
  }
  if (i >= n) return;
  uint rem = i, base = 0;
  [[unroll]] for (int d = 5; d >= 0; --d) {
    uint dim = uint(pc.p[1 + d]);
    base += (rem % dim) * uint(pc.p[7 + d]);
    rem /= dim;
  }
  int kind = pc.p[0];
  float s = kind == 0 ? 0.0 : float(x[base]);
  uint at = 0;  // argmax / argmin: the index of s
  for (uint j = kind == 0 ? 0 : 1; j < r; ++j) {
    uint jr = j, off = base;
    [[unroll]] for (int d = 5; d >= 0; --d) {
      uint dim = uint(pc.p[14 + d]);
      off += (jr % dim) * uint(pc.p[20 + d]);
      jr /= dim;
    }
    float v = float(x[off]);
    if (kind == 0) {
      s += v;
    } else if (!isnan(s) && (isnan(v) || ((kind == 1 || kind == 3) ? v > s : v < s))) {
      s = v;
      at = j;
    }
  }
  y[i] = STORE_T(kind == 0 ? s * pc.f[0] : kind >= 3 ? float(at) : s);
}
