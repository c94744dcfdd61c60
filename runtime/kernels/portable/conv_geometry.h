// Shapes and attributes of a 2-D convolution or pooling window, checked, shared by the conv
// and pooling kernels (conv1d runs as a conv2d with a height of 1).
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/memory_allocator.h"

namespace tern::portable {

/// One 2-D sliding-window problem: input [N, C, H, W], kernel kh x kw, output [N, O, OH, OW].
struct ConvGeometry {
  int64_t batch = 1;
  int64_t in_channels = 0;
  int64_t in_h = 1;
  int64_t in_w = 0;
  int64_t out_channels = 0;
  int64_t kh = 1;
  int64_t kw = 1;
  int64_t stride[2] = {1, 1};
  int64_t pad[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
  int64_t out_h = 1;
  int64_t out_w = 0;
};

/// Output size of a sliding window along one dim: floor or (ceil_mode) ceil of
/// (in + 2 pad - dilation (k - 1) - 1) / stride, plus 1; with ceil_mode a last window that
/// would start inside the right padding is dropped (ATen's pooling rule). InvalidArgument
/// naming `op` and `dim_name` when the window does not fit (output < 1) or the arithmetic
/// overflows. in >= 0, k >= 1, stride >= 1, pad >= 0, dilation >= 1.
Error window_output_size(const char* op, const char* dim_name, int64_t in, int64_t k,
                         int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                         int64_t* out);

/// Range [lo, hi) of output positions o in [0, out) whose input position
/// o * stride + offset lies in [0, in). Empty ranges give lo == hi.
inline void valid_output_range(int64_t in, int64_t out, int64_t stride, int64_t offset,
                               int64_t* lo, int64_t* hi) {
  // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o * stride + offset <= in - 1  <=>  o <= floor((in - 1 - offset) / stride)
  const int64_t top = in - 1 - offset;
  int64_t h = top < 0 ? 0 : top / stride + 1;
  if (l > out) l = out;
  if (h > out) h = out;
  if (h < l) h = l;
  *lo = l;
  *hi = h;
}

/// `bytes` of scratch from `allocator` (aligned to kScratchAlignment) into *out, or
/// MemoryAllocationFailed naming `op`, the bytes needed and the bytes left. 0 bytes: null.
Error allocate_scratch(const char* op, MemoryAllocator* allocator, uint64_t bytes, float** out);

}  // namespace tern::portable
