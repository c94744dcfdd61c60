// Registration of the vulkan backend (GLSL compute shaders behind tern's BackendInterface).
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"

namespace tern {

/// Registers the Vulkan delegate under the name "vulkan" (explicit registration; call once at
/// startup, not thread-safe like register_backend). Registering does not touch Vulkan: the
/// loader, instance and device are opened by the first is_available() or init().
/// Errors as register_backend.
Error register_vulkan_backend();

/// The vulkan backend's interface object (static storage), for tests that drive it directly.
const BackendInterface& vulkan_backend_interface();

/// Why the backend is not available ("" when it is): no loader, no device, a device lacking a
/// required feature (each skipped device named). Opens Vulkan on first call (as
/// is_available()). Valid for the process's life.
const char* vulkan_unavailable_reason();

/// The default device's name ("" when none). Device selection: the load option "device"
/// (MethodLoadOptions::backend_options {"vulkan", "device", ...}) per method; else the
/// environment variable TERN_VULKAN_DEVICE; each a device index or a substring of its name;
/// otherwise the first suitable device, discrete GPUs first, then integrated, virtual, CPU
/// (lavapipe).
const char* vulkan_device_name();

/// How many Vulkan objects the backend has created in this process (its own counting
/// wrappers), for the zero-allocation tests: execute() must not change them.
struct VulkanObjectCounts {
  uint64_t buffers = 0;             ///< vkCreateBuffer
  uint64_t memory_allocations = 0;  ///< vkAllocateMemory
  uint64_t descriptor_sets = 0;     ///< vkAllocateDescriptorSets (sets)
  uint64_t command_buffers = 0;     ///< vkAllocateCommandBuffers (buffers)
};
VulkanObjectCounts vulkan_object_counts();

/// Tests only: called right before and right after the driver calls of execute() that hand
/// work to the device (vkQueueSubmit and vkWaitForFences), so a host-allocation counter can
/// tell the driver's own allocations from tern's. Null (the default) for none.
void set_vulkan_driver_call_hooks(void (*enter)(), void (*leave)());

/// Whether the selected device was opened with f16 storage: it reports shaderFloat16 and
/// storageBuffer16BitAccess and both were enabled (false when the backend is unavailable).
/// An f16-storage blob (`--backend vulkan:f16`) is refused on a device without them, as
/// DelegateInvalidCompatibility naming the missing feature (the portable fallback runs).
bool vulkan_device_has_f16_storage();

/// Tests only: `hide` true makes init treat the device as lacking both f16 features (the
/// refusal above) without reopening it; false (the default) restores what the device reports.
void set_vulkan_hide_f16_features(bool hide);

/// Tests only: `max_invocations` > 0 makes init treat the device as allowing at most that many
/// invocations per workgroup (as a small mobile GPU might), so a blob built for more is refused
/// as DelegateInvalidCompatibility naming both; 0 (the default) restores the device's limit.
void set_vulkan_max_invocations_override(uint32_t max_invocations);

}  // namespace tern
