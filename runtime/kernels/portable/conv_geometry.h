// Shapes and attributes of a 2-D convolution or pooling window, checked, shared by the conv
// and pooling kernels (conv1d runs as a conv2d with a height of 1).
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

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

/// The tensors of a convolution (x, weight, bias?, <attributes>, out).
struct ConvTensors {
  TensorView* x = nullptr;
  TensorView* weight = nullptr;
  TensorView* bias = nullptr;  ///< null when None
  TensorView* out = nullptr;
};

/// Reads the tensors of a convolution over `spatial` (1 or 2) dims that takes exactly
/// `num_args` arguments (x, weight, bias?, <attributes>, out) and checks x (f32, rank
/// spatial + 1 unbatched or spatial + 2), weight (f32, rank spatial + 2) and out (f32, the
/// last argument). InvalidArgument naming op and the argument. Owned by the Method.
Error conv_tensor_args(const char* op, Span<EValue*> args, size_t num_args, uint32_t spatial,
                       ConvTensors* t);

/// Checks the output side of a convolution of geometry `g`: bias (when present) f32
/// [out_channels], out of shape [N (when `batched`), O, OH (when spatial == 2), OW], and out
/// sharing no memory with x, weight or bias.
Error check_conv_output(const char* op, const ConvGeometry& g, uint32_t spatial, bool batched,
                        const ConvTensors& t);

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
