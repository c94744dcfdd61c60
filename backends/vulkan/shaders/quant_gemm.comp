#version 450
// Quantized linear for more rows: C (M x N) = A (M x K) * W^T (+ bias[n]) with W decoded from
// the packed nf4 / fp8 codes (quant_decode.glsl) as it is loaded into shared memory; tiled as
// matmul_tiled.comp: a TILE x TILE workgroup computes a BLOCK x BLOCK block of C (BLOCK =
// 4 * TILE, 4 x 4 outputs per invocation), K in TILE-wide slabs, f32 accumulation. Each weight
// element is decoded once per workgroup that needs it. params: [0] M, [1] N, [2] K, [3] has
// bias, [4] W transposed (1: [N, K], linear; 0: [K, N], matmul), the scheme at 16...
// Dispatch (ceil(N / BLOCK), ceil(M / BLOCK), 1).
#extension GL_EXT_control_flow_attributes : enable

layout(constant_id = 1) const uint TILE = 16;
layout(local_size_x_id = 1, local_size_y_id = 1) in;
const uint BLOCK = 4 * TILE;

layout(push_constant) uniform Params {
  int p[28];
  float f[4];
} pc;

layout(std430, binding = 0) writeonly buffer Out { float c[]; };
layout(std430, binding = 1) readonly buffer In0 { float a[]; };
layout(std430, binding = 3) readonly buffer In2 { float bias[]; };
#define QW_BINDING 2
#include "quant_decode.glsl"

shared float As[BLOCK * TILE];  // [row][k]
shared float Bs[TILE * BLOCK];  // [k][col]

void main() {
  uint M = uint(pc.p[0]), N = uint(pc.p[1]), K = uint(pc.p[2]);
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * TILE + tx;
  uint row0 = gl_WorkGroupID.y * BLOCK;
  uint col0 = gl_WorkGroupID.x * BLOCK;
  bool bt = pc.p[4] != 0;
  float acc[4][4];
  [[unroll]] for (int i = 0; i < 4; ++i) {
    [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < K; k0 += TILE) {
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      uint e = tid + j * TILE * TILE;
      uint r = e / TILE, kk = e % TILE;
      uint row = row0 + r, ak = k0 + kk;
      As[r * TILE + kk] = (row < M && ak < K) ? a[row * K + ak] : 0.0;
      float bv = 0.0;
      if (bt) {
        uint col = col0 + r;  // r: the column within the block, kk: k (along a weight row)
        if (col < N && ak < K) bv = q_weight(col, ak);
        Bs[kk * BLOCK + r] = bv;
      } else {
        uint bk = k0 + e / BLOCK, col = col0 + e % BLOCK;
        if (col < N && bk < K) bv = q_weight(bk, col);
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
      if (row < M && col < N) c[row * N + col] = acc[i][j] + (pc.p[3] != 0 ? bias[col] : 0.0);
    }
  }
}
