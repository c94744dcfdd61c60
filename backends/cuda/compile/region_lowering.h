// A region of supported nodes as a cuda blob (internal to backends/cuda/compile): the value
// table, the node table and the memory plan (backends/cuda/README.md).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_blob_format.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cuda_compile {

/// Lowers `region` of `g` (its nodes all accepted by lower_node, its boundary set) into a
/// blob (cuda_blob_format.h's version) computing in `compute`: f32, or f16/bf16
/// storage with f32 accumulation (f32 boundary values cast at the region's edges). Throws std::invalid_argument naming the node when a
/// node is not taken or the region cannot be expressed (a tensor-list part the region neither
/// makes nor receives as an argument).
std::vector<uint8_t> lower_region(const Graph& g, const DelegateRegion& region,
                                  cuda::ComputeDType compute = cuda::ComputeDType::F32);

}  // namespace tern::compiler::cuda_compile
