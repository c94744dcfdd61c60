#version 450
// y[dst_off + sum k_d * dst_stride_d] = x[src_off + sum k_d * src_stride_d] over the index
// space dims[6]: views, permute/transpose, expand, slice, split, cat (one node per part), flip.
// params: [0] unused, [1..6] dims, [7..12] src strides (negative: read backwards, a flip; the
// uint sums wrap modulo 2^32 and end inside x, which the blob reader proved), [13..18] dst
// strides, [19] src offset, [20] dst offset (elements).
#include "common.glsl"

layout(std430, binding = 0) buffer Out { STORE_T y[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T x[]; };

void main() {
  uint i = flat_index();
  uint n = 1;
  [[unroll]] for (int d = 0; d < 6; ++d) n *= uint(pc.p[1 + d]);
  if (i >= n) return;
  uint rem = i, src = uint(pc.p[19]), dst = uint(pc.p[20]);
  [[unroll]] for (int d = 5; d >= 0; --d) {
    uint dim = uint(pc.p[1 + d]);
    uint k = rem % dim;
    rem /= dim;
    src += k * uint(pc.p[7 + d]);
    dst += k * uint(pc.p[13 + d]);
  }
  y[dst] = STORE_T(float(x[src]));
}
