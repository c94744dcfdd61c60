// Shared by every tern vulkan shader: the node's parameters as push constants (the blob's
// BlobNode::params and fparams, 128 bytes), the workgroup size as specialization constant 0,
// and the flat invocation index of a 1-D dispatch that may be folded into 2-D (x, y) when it
// needs more than maxComputeWorkGroupCount[0] groups.
#extension GL_EXT_control_flow_attributes : enable
#include "storage.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
  int p[28];
  float f[4];
} pc;

uint flat_index() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG + gl_LocalInvocationID.x;
}

