// Registration of the vulkan backend's compile half with the compiler's backend registry.
#pragma once

namespace tern::compiler {

/// Registers a VulkanBackendCompiler under "vulkan" (register_backend_compiler: a second call
/// replaces the first). Not thread-safe: call at startup.
void register_vulkan_backend_compiler();

}  // namespace tern::compiler
