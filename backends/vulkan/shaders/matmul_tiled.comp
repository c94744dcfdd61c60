#version 450
// C[z] = alpha * A[z] (M x K) * B[z] (K x N, or N x K when transposed) + beta * bias, tiled in
// shared memory: a TILE x TILE workgroup computes one BLOCK x BLOCK block of C (BLOCK = 4 *
// TILE; each invocation 4 x 4 outputs, rows ty + i * TILE and columns tx + j * TILE), stepping
// over K one TILE-wide slab of A (BLOCK x TILE) and B (TILE x BLOCK) at a time. params: [0]
// batch, [1] M, [2] N, [3] K, [4] A batch stride, [5] B batch stride (0: broadcast), [6] B
// transposed ([N, K] rows, as linear's weight), [7] has bias, [8] bias batch stride, [9] bias
// row stride, [10] bias column stride; fparams alpha, beta. Dispatch (ceil(N / BLOCK),
// ceil(M / BLOCK), batch).
#extension GL_EXT_control_flow_attributes : enable
#include "storage.glsl"

layout(constant_id = 1) const uint TILE = 16;
layout(local_size_x_id = 1, local_size_y_id = 1) in;
const uint BLOCK = 4 * TILE;

layout(push_constant) uniform Params {
  int p[28];
  float f[4];
} pc;

layout(std430, binding = 0) writeonly buffer Out { STORE_T c[]; };
layout(std430, binding = 1) readonly buffer In0 { STORE_T a[]; };
layout(std430, binding = 2) readonly buffer In1 { STORE_T b[]; };
layout(std430, binding = 3) readonly buffer In2 { STORE_T bias[]; };

shared float As[BLOCK * TILE];  // [row][k]
shared float Bs[TILE * BLOCK];  // [k][col]

void main() {
  uint M = uint(pc.p[1]), N = uint(pc.p[2]), K = uint(pc.p[3]);
  uint z = gl_WorkGroupID.z;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * TILE + tx;
  uint row0 = gl_WorkGroupID.y * BLOCK;
  uint col0 = gl_WorkGroupID.x * BLOCK;
  uint abase = z * uint(pc.p[4]);
  uint bbase = z * uint(pc.p[5]);
  bool bt = pc.p[6] != 0;
  float acc[4][4];
  [[unroll]] for (int i = 0; i < 4; ++i) {
    [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < K; k0 += TILE) {
    // Each invocation loads 4 elements of each slab; consecutive invocations read
    // consecutive addresses (along k for A and a transposed B, along n for B).
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      uint e = tid + j * TILE * TILE;
      uint r = e / TILE, kk = e % TILE;
      uint row = row0 + r, ak = k0 + kk;
      As[r * TILE + kk] = (row < M && ak < K) ? float(a[abase + row * K + ak]) : 0.0;
      float bv = 0.0;
      if (bt) {
        uint col = col0 + r;  // r: the column within the block, kk: k
        if (col < N && ak < K) bv = float(b[bbase + col * K + ak]);
        Bs[kk * BLOCK + r] = bv;
      } else {
        uint bk = k0 + e / BLOCK, col = col0 + e % BLOCK;
        if (col < N && bk < K) bv = float(b[bbase + bk * N + col]);
        Bs[e] = bv;
      }
    }
    barrier();
    [[unroll]] for (uint k = 0; k < TILE; ++k) {
      float av[4], bw[4];
      [[unroll]] for (uint i = 0; i < 4; ++i) av[i] = As[(ty + i * TILE) * TILE + k];
      [[unroll]] for (uint j = 0; j < 4; ++j) bw[j] = Bs[k * BLOCK + tx + j * TILE];
      [[unroll]] for (uint i = 0; i < 4; ++i) {
        [[unroll]] for (uint j = 0; j < 4; ++j) acc[i][j] += av[i] * bw[j];
      }
    }
    barrier();
  }
  [[unroll]] for (uint i = 0; i < 4; ++i) {
    uint row = row0 + ty + i * TILE;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      uint col = col0 + tx + j * TILE;
      if (row < M && col < N) {
        float r = pc.f[0] * acc[i][j];
        if (pc.p[7] != 0) {
          r += pc.f[1] * float(bias[z * uint(pc.p[8]) + row * uint(pc.p[9]) + col * uint(pc.p[10])]);
        }
        c[(z * M + row) * N + col] = STORE_T(r);
      }
    }
  }
}
