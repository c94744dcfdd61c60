// The process's Vulkan instance and its devices, each opened on first use and kept for the
// process's life (internal to the vulkan backend). Delegates on one device share it and its
// queue; submissions are serialised with a mutex.
#pragma once

#include <mutex>

#include "backends/vulkan/runtime/vulkan_api.h"

namespace tern::vulkan {

struct VulkanContext {
  bool ok = false;
  char reason[1024] = {};  ///< why not ok; also notes on skipped devices when ok
  char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = {};
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  /// The f16-storage features, each true when the device reports it (then it was enabled).
  bool shader_float16 = false;
  bool storage_buffer_16bit = false;
  std::mutex queue_mutex;  ///< held around vkQueueSubmit + the wait
};

/// The default device's context, opened on first call (thread-safe): the device
/// TERN_VULKAN_DEVICE names (an index or a substring of its name), else the best suitable one
/// (discrete GPU first, then integrated, virtual, CPU). Check `ok` (and `reason`).
VulkanContext& vulkan_context();

/// The context of the device `wanted` names (an index or a substring of its name; empty: the
/// best suitable one; null: the default, vulkan_context()), opened on first use (thread-safe);
/// null when there is none,
/// with the reason in `why`: no loader or driver, no device matches (the devices listed), or
/// every match lacks something tern needs (each named with what).
VulkanContext* vulkan_device_context(const char* wanted, char* why, size_t why_size);

/// Whether the loader, a driver and at least one device tern can use are there (cheap after
/// the first call; opens no device).
bool vulkan_has_suitable_device();

/// Why not ("" when there is one): no loader, no driver, no device, or each device with what
/// it lacks. Static storage.
const char* vulkan_unavailable_text();

/// Null when `c` can run f16-storage blobs; else the missing feature(s), e.g.
/// "shaderFloat16 and storageBuffer16BitAccess" (static text).
const char* f16_storage_missing(const VulkanContext& c);

/// Tests only: make f16_storage_missing() report both features missing.
void set_hide_f16_features(bool hide);

/// A memory type index with `required` flags (and `preferred` ones when there is such a type)
/// among `type_bits`, or -1.
int find_memory_type(const VulkanContext& c, uint32_t type_bits, VkMemoryPropertyFlags required,
                     VkMemoryPropertyFlags preferred);

}  // namespace tern::vulkan
