#version 450
// C[z] = alpha * A[z] (M x K) * B[z] (K x N, or N x K when transposed) + beta * bias, tiled in
// shared memory: a TILE x TILE workgroup computes one TILE x TILE block of C, stepping over K
// one TILE-wide slab of A and B at a time. params: [0] batch, [1] M, [2] N, [3] K, [4] A
// batch stride, [5] B batch stride (0: broadcast), [6] B transposed ([N, K] rows, as linear's
// weight), [7] has bias, [8] bias batch stride, [9] bias row stride, [10] bias column stride;
// fparams alpha, beta. Dispatch (ceil(N / TILE), ceil(M / TILE), batch).
#extension GL_EXT_control_flow_attributes : enable

layout(constant_id = 1) const uint TILE = 16;
layout(local_size_x_id = 1, local_size_y_id = 1) in;

layout(push_constant) uniform Params {
  int p[28];
  float f[4];
} pc;

layout(std430, binding = 0) writeonly buffer Out { float c[]; };
layout(std430, binding = 1) readonly buffer In0 { float a[]; };
layout(std430, binding = 2) readonly buffer In1 { float b[]; };
layout(std430, binding = 3) readonly buffer In2 { float bias[]; };

shared float As[TILE * TILE];
shared float Bs[TILE * TILE];

void main() {
  uint M = uint(pc.p[1]), N = uint(pc.p[2]), K = uint(pc.p[3]);
  uint z = gl_WorkGroupID.z;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint row = gl_WorkGroupID.y * TILE + ty;
  uint col = gl_WorkGroupID.x * TILE + tx;
  uint abase = z * uint(pc.p[4]);
  uint bbase = z * uint(pc.p[5]);
  bool bt = pc.p[6] != 0;
  float acc = 0.0;
  for (uint k0 = 0; k0 < K; k0 += TILE) {
    // A tile: rows of this block, columns k0..k0+TILE; B tile: rows k0.., columns of the block.
    uint ak = k0 + tx;
    As[ty * TILE + tx] = (row < M && ak < K) ? a[abase + row * K + ak] : 0.0;
    uint bk = k0 + ty;
    float bv = 0.0;
    if (col < N && bk < K) bv = bt ? b[bbase + col * K + bk] : b[bbase + bk * N + col];
    Bs[ty * TILE + tx] = bv;
    barrier();
    [[unroll]] for (uint k = 0; k < TILE; ++k) acc += As[ty * TILE + k] * Bs[k * TILE + tx];
    barrier();
  }
  if (row >= M || col >= N) return;
  float r = pc.f[0] * acc;
  if (pc.p[7] != 0) {
    r += pc.f[1] * bias[z * uint(pc.p[8]) + row * uint(pc.p[9]) + col * uint(pc.p[10])];
  }
  c[(z * M + row) * N + col] = r;
}
