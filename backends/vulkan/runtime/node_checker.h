// Per-node checks of a parsed vulkan blob (internal to the vulkan backend; parse_blob calls it).
#pragma once

#include <cstdint>

#include "backends/vulkan/runtime/blob_reader.h"

namespace tern::vulkan {

/// Checks node `index` of `plan`, whose header, values and node operand indices parse_blob has
/// already validated: the operand count, types and dims each op needs, and that its parameters
/// keep every shader access inside the buffers the node binds (the shaders do not bound check).
/// InvalidProgram with a message naming the node, the field, what was expected and what was
/// found.
Error check_node(const BlobPlan& plan, uint32_t index);

}  // namespace tern::vulkan
