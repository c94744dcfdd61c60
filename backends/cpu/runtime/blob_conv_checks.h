// parse_blob's checks of the 2-D convolution family (internal to backends/cpu/runtime):
// XNNPACK's conv / depthwise conv / deconv nodes, tern's packed conv (direct, grouped,
// Winograd), the fused bottleneck and the pools — window parameters, channels, the input's
// NHWC dims, the packed weights' sizes, the residual's and the output's dims, the epilogue
// activation. Errors name the node, the field, what was expected and what was found.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

Error check_conv(uint32_t n, const BlobNode& node, const BlobValue* v);

/// Op 41: kernel, stride, dilation and channels >= 1, one group, each adjustment below its
/// stride; the filter [O, KH, KW, C], the bias [O]; the output [N, OH, OW, O] of the
/// transposed window (every term at most 2^31 · 2^30, so nothing overflows).
Error check_deconv(uint32_t n, const BlobNode& node, const BlobValue* v);

/// An epilogue activation code of ops 17-19 and its parameter's bits: the leaky ReLU's
/// negative slope (a finite f32 >= 0; at most 2 by check_params_range), else 0.
Error check_epilogue_activation(uint32_t n, const BlobNode& node, uint32_t act, uint32_t alpha);

Error check_packed_conv(uint32_t n, const BlobNode& node, const BlobValue* v);

/// PackedBottleneck: the window, channels, flags and epilogues, the weight constant's size, the
/// residual (with a project only) and the output dims.
Error check_bottleneck(uint32_t n, const BlobNode& node, const BlobValue* v);

Error check_pool(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
