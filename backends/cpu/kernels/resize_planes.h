// Bilinear resize from a channels-last image to channel planes (blob op 34): the last node of a
// segmentation model (LR-ASPP, DeepLabV3, FCN upsample their logits to the input's size) writes
// the NCHW output the caller wants directly, instead of an NHWC resize and a transpose of its
// (large) result at the delegate's edge.
//
// Runtime code: no exceptions, no RTTI, never allocates.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

namespace tern::cpu {

/// Most channels the kernel takes (a cached source row holds a column of every channel).
constexpr int64_t kResizePlanesMaxChannels = 4096;

struct ResizePlanesProblem {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;  ///< x [batch, in_h, in_w, channels]
  int64_t out_h = 0, out_w = 0;                         ///< y [batch, channels, out_h, out_w]
  bool align_corners = false;
  const float* x = nullptr;
  float* y = nullptr;
};

/// y[n, c, i, j] = PyTorch's upsample_bilinear2d of x's channel c (ATen's area-pixel source
/// index: scale in / out, or (in - 1) / (out - 1) with align_corners; the same f32 arithmetic
/// as the portable kernel, so the result is bit-identical to it). Sizes >= 1 (else nothing
/// happens) and channels <= kResizePlanesMaxChannels (else nothing happens). Split over `pool`
/// by bands of output rows; 33 KiB of stack a task (column taps and two cached source rows).
void resize_bilinear_to_planes(const ResizePlanesProblem& p, pthreadpool_t pool);

}  // namespace tern::cpu
