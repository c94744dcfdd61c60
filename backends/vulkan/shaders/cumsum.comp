#version 450
// Inclusive running sum along one dim of x [outer, size, inner]: one invocation per (outer,
// inner) lane, walking the dim in order. The portable kernel accumulates in double; here a
// compensated (Neumaier) f32 sum carries the rounding error of every addition, so each output
// is the rounded running sum as a double accumulator gives it (devices need no f64). Once the
// sum is infinite or NaN it is written as such (the compensation of an infinite sum is NaN).
// params: [0] outer, [1] size, [2] inner.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

void main() {
  uint lane = flat_index();
  uint outer = uint(pc.p[0]), size = uint(pc.p[1]), inner = uint(pc.p[2]);
  if (lane >= outer * inner) return;
  uint o = lane / inner, i = lane % inner;
  uint at = o * size * inner + i;
  precise float s = 0.0;
  precise float c = 0.0;
  for (uint k = 0; k < size; ++k, at += inner) {
    float v = float(x[at]);
    precise float t = s + v;
    if (abs(s) >= abs(v)) {
      c += (s - t) + v;
    } else {
      c += (v - t) + s;
    }
    s = t;
    y[at] = STORE_T(isinf(s) || isnan(s) ? s : s + c);
  }
}
