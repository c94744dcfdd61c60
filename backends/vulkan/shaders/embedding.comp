#version 450
// Embedding rows, and index_select along any dim: out[o, c, :] = weight[o, idx[c], :] for
// int64 indices read as (low, high) 32-bit words (a region input, or a constant the blob
// reader checked). An index outside [0, V) writes NaN to its row (the runtime checks an input's
// indices on the host before the submit and refuses the call, as the portable kernel does, so
// this is only a guard against an out-of-bounds read).
// params: [0] V, [1] D, [2] count, [3] outer O (weight [O, V, D], out [O, count, D]), [4] 1:
// the indices are integer-valued floats of the storage type (an argmax's), read through the
// same binding.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer In1 { int idx[]; };
layout(std430, binding = 2) readonly buffer In1F { STORE_T idxf[]; };

void main() {
  uint i = flat_index();
  uint V = uint(pc.p[0]), D = uint(pc.p[1]), count = uint(pc.p[2]);
  uint rows = count * D;
  if (i >= uint(pc.p[3]) * rows) return;
  uint o = i / rows, rest = i % rows;
  uint r = rest / D, d = rest % D;
  int lo, hi = 0;
  if (pc.p[4] != 0) {
    float f = float(idxf[r]);
    lo = f >= 0.0 && f < float(V) ? int(f) : -1;  // NaN too: out of range
  } else {
    lo = idx[2 * r];
    hi = idx[2 * r + 1];
  }
  if (hi != 0 || lo < 0 || uint(lo) >= V) {
    y[i] = STORE_T(0.0 / 0.0);
    return;
  }
  y[i] = STORE_T(float(w[(o * V + uint(lo)) * D + d]));
}
