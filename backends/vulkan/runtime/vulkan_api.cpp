// Loading the Vulkan loader at run time, and the counting wrappers.
#include "backends/vulkan/runtime/vulkan_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "backends/vulkan/runtime/register_vulkan_backend.h"

namespace tern::vulkan {
namespace {

std::atomic<uint64_t> g_buffers{0}, g_memory{0}, g_sets{0}, g_command_buffers{0};

}  // namespace

VulkanApi& vk() {
  static VulkanApi api;
  return api;
}

bool load_loader(char* why, size_t why_size) {
  static void* handle = nullptr;
  if (handle != nullptr) return true;
  // TERN_VULKAN_LOADER: another loader library (a path or a soname), e.g. one shipped with
  // the application; else the system's.
  const char* chosen = std::getenv("TERN_VULKAN_LOADER");
  const bool custom = chosen != nullptr && chosen[0] != '\0';
  handle = dlopen(custom ? chosen : "libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr && !custom) handle = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    std::snprintf(why, why_size, "no Vulkan loader (%s: %s)", custom ? chosen : "libvulkan.so.1",
                  e ? e : "not found");
    return false;
  }
  VulkanApi& api = vk();
  api.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
  if (api.vkGetInstanceProcAddr == nullptr) {
    std::snprintf(why, why_size, "the Vulkan loader has no vkGetInstanceProcAddr");
    return false;
  }
  api.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
      api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
  api.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      api.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
  if (api.vkCreateInstance == nullptr) {
    std::snprintf(why, why_size, "the Vulkan loader has no vkCreateInstance");
    return false;
  }
  return true;
}

bool load_instance_functions(VkInstance instance, char* why, size_t why_size) {
  VulkanApi& api = vk();
#define TERN_VK_LOAD(name)                                                                 \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));    \
  if (api.name == nullptr) {                                                               \
    std::snprintf(why, why_size, "the Vulkan loader has no %s", #name);                    \
    return false;                                                                          \
  }
  TERN_VK_FUNCTIONS(TERN_VK_LOAD)
#undef TERN_VK_LOAD
  return true;
}

VkResult create_buffer(VkDevice device, const VkBufferCreateInfo* info, VkBuffer* out) {
  g_buffers.fetch_add(1, std::memory_order_relaxed);
  return vk().vkCreateBuffer(device, info, nullptr, out);
}

VkResult allocate_memory(VkDevice device, const VkMemoryAllocateInfo* info,
                         VkDeviceMemory* out) {
  g_memory.fetch_add(1, std::memory_order_relaxed);
  return vk().vkAllocateMemory(device, info, nullptr, out);
}

VkResult allocate_descriptor_sets(VkDevice device, const VkDescriptorSetAllocateInfo* info,
                                  VkDescriptorSet* out) {
  g_sets.fetch_add(info->descriptorSetCount, std::memory_order_relaxed);
  return vk().vkAllocateDescriptorSets(device, info, out);
}

VkResult allocate_command_buffers(VkDevice device, const VkCommandBufferAllocateInfo* info,
                                  VkCommandBuffer* out) {
  g_command_buffers.fetch_add(info->commandBufferCount, std::memory_order_relaxed);
  return vk().vkAllocateCommandBuffers(device, info, out);
}

const char* vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult (other)";
  }
}

}  // namespace tern::vulkan

namespace tern {

VulkanObjectCounts vulkan_object_counts() {
  VulkanObjectCounts c;
  c.buffers = vulkan::g_buffers.load();
  c.memory_allocations = vulkan::g_memory.load();
  c.descriptor_sets = vulkan::g_sets.load();
  c.command_buffers = vulkan::g_command_buffers.load();
  return c;
}

}  // namespace tern
