#version 450
// Rows of a quantized (nf4 / fp8) table: out[i, d] = dequantize(table)[idx[i], d], decoded
// from the packed codes (quant_decode.glsl), bit for bit the portable kernel's values. Int64
// indices read as (low, high) words; an index outside [0, V) writes NaN (the runtime checks
// the indices on the host and refuses the call first). params: [0] V, [1] D, [2] count, the
// scheme at 16...
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 2) readonly buffer In1 { int idx[]; };
#define QW_BINDING 1
#include "quant_decode.glsl"

void main() {
  uint i = flat_index();
  uint V = uint(pc.p[0]), D = uint(pc.p[1]);
  if (i >= uint(pc.p[2]) * D) return;
  uint r = i / D, d = i % D;
  int lo = idx[2 * r], hi = idx[2 * r + 1];
  if (hi != 0 || lo < 0 || uint(lo) >= V) {
    y[i] = 0.0 / 0.0;
    return;
  }
  y[i] = q_weight(uint(lo), d);
}
