// The lowerings of the ops the vulkan backend takes, one function per op family (internal to
// backends/vulkan/compile; node_lowering.cpp's table maps op names to them). Each appends the
// blob nodes of one graph node to the builder or throws Unsupported with the reason (params
// by index: backends/vulkan/README.md).
#pragma once

#include <cstddef>

#include "backends/vulkan/compile/lowering_util.h"

namespace tern::compiler::vulkan_compile {

// lower_linear_algebra.cpp
void lower_linear(BlobBuilder& b, const Node& n);
void lower_addmm(BlobBuilder& b, const Node& n);
void lower_matmul(BlobBuilder& b, const Node& n, bool bmm);
void lower_grouped(BlobBuilder& b, const Node& n, bool linear);
void lower_attention(BlobBuilder& b, const Node& n);

// lower_elementwise.cpp
void lower_binary(BlobBuilder& b, const Node& n, vulkan::ElementwiseKind kind);
void lower_where(BlobBuilder& b, const Node& n);
/// logical_not(x): x == 0, a 0 / 1 float.
void lower_logical_not(BlobBuilder& b, const Node& n);
/// cast to f32 (a copy) or bool (x != 0); the input f32, bool or an int64 held as floats.
void lower_cast(BlobBuilder& b, const Node& n);
/// One unary node of `kind` (lo / hi: a clamp's bounds).
void unary_node(BlobBuilder& b, const Node& n, vulkan::UnaryKind kind, float lo = 0,
                float hi = 0);
void lower_clamp(BlobBuilder& b, const Node& n, bool hardtanh);
void lower_gelu(BlobBuilder& b, const Node& n);
void lower_pow(BlobBuilder& b, const Node& n);
void lower_leaky_relu(BlobBuilder& b, const Node& n);
void lower_softplus(BlobBuilder& b, const Node& n);
void lower_softmax(BlobBuilder& b, const Node& n);
void lower_layer_norm(BlobBuilder& b, const Node& n);
void lower_rms_norm(BlobBuilder& b, const Node& n);
void lower_group_norm(BlobBuilder& b, const Node& n);
void lower_batch_norm(BlobBuilder& b, const Node& n);
/// tern::sum, mean, amax, amin over a list of dims; argmax, argmin over one dim or all (their
/// indices held as floats: device_integers.h).
enum class ReduceOp { Sum, Mean, Max, Min, ArgMax, ArgMin };
void lower_reduce(BlobBuilder& b, const Node& n, ReduceOp op);
/// tern::cumsum of an f32 tensor along one dim.
void lower_cumsum(BlobBuilder& b, const Node& n);

// lower_conv_pool.cpp
void lower_conv(BlobBuilder& b, const Node& n, size_t spatial);
void lower_conv_transpose(BlobBuilder& b, const Node& n);
void lower_upsample(BlobBuilder& b, const Node& n, bool bilinear);
void lower_pool(BlobBuilder& b, const Node& n, int mode);

// lower_data_movement.cpp
void lower_view(BlobBuilder& b, const Node& n);
void lower_permute(BlobBuilder& b, const Node& n, bool transpose);
void lower_flip(BlobBuilder& b, const Node& n);
void lower_expand(BlobBuilder& b, const Node& n);
void lower_repeat(BlobBuilder& b, const Node& n);
void lower_slice(BlobBuilder& b, const Node& n);
void lower_select(BlobBuilder& b, const Node& n);
void lower_split(BlobBuilder& b, const Node& n);
void lower_cat(BlobBuilder& b, const Node& n);
void lower_pad(BlobBuilder& b, const Node& n);
void lower_embedding(BlobBuilder& b, const Node& n);
void lower_index_select(BlobBuilder& b, const Node& n);
void lower_index_copy(BlobBuilder& b, const Node& n);

}  // namespace tern::compiler::vulkan_compile
