// Lowering one graph node to vulkan blob nodes (internal to backends/vulkan/compile): the
// table of every op the backend takes. Throws Unsupported with the reason for anything else.
#pragma once

#include "backends/vulkan/compile/blob_writer.h"

namespace tern::compiler::vulkan_compile {

/// Appends the blob nodes of `node` to `b`.
void lower_node(BlobBuilder& b, const Node& node);

/// Whether `op` only moves data (views, permutes, slices, cat...): a region of only these is
/// not worth a delegate call.
bool is_data_movement(const std::string& op);

}  // namespace tern::compiler::vulkan_compile
