// Helpers shared by the vulkan compile half's lowerings (internal to backends/vulkan/compile):
// reading a node's arguments off the graph (each throws Unsupported naming what it expected),
// shapes and strides, and the strided copy node every data-movement lowering writes.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/compile/blob_writer.h"

namespace tern::compiler::vulkan_compile {

using Dims = std::vector<int64_t>;

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Value `id` of g (a bad id is Unsupported).
const Value& val(const Graph& g, int id);
/// Argument i of n (a missing one is Unsupported); whether n has it.
int arg(const Node& n, size_t i);
bool has_arg(const Node& n, size_t i);
bool is_none(const Graph& g, int id);
/// The sizes of a tensor value.
const Dims& shape(const Graph& g, int id);
/// The scalar or list constant of a value: an Int, a number (Int or Double), a Bool, ints (an
/// Int or an IntList).
int64_t int_of(const Graph& g, int id);
double num_of(const Graph& g, int id);
bool bool_of(const Graph& g, int id);
std::vector<int64_t> ints_of(const Graph& g, int id);
int64_t numel(const Dims& d);
Dims contiguous_strides(const Dims& d);
/// dim in [-rank, rank) as an index in [0, rank).
int64_t norm_dim(int64_t dim, size_t rank);
/// Output i of n.
int out_id(const Node& n, size_t i = 0);

/// Pads dims/strides to 6 on the left (index space of the strided shaders).
void pad6(Dims* dims, Dims* strides);

/// Strides of `in` broadcast to `out` (right-aligned), 0 where broadcast.
Dims broadcast_strides(const Dims& in, const Dims& out);

/// A strided copy: `dims` index space, source strides/offset, destination strides/offset. Its
/// dims of 1 are dropped and contiguous runs merged; one copy node when that leaves at most 6
/// dims, else one per index of the leading dims beyond 6 (at most 256 nodes).
void copy_node(BlobBuilder& b, uint32_t src, uint32_t dst, Dims dims, Dims src_strides,
               int64_t src_off, Dims dst_strides, int64_t dst_off);

}  // namespace tern::compiler::vulkan_compile
