// The Vulkan functions the backend calls, loaded at run time from the loader (libvulkan.so.1,
// dlopen) so that a machine without Vulkan still loads tern and runs the portable fallback.
// Internal to the vulkan backend.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstdint>

namespace tern::vulkan {

#define TERN_VK_FUNCTIONS(X)                                                                 \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)        \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties)         \
  X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer)                 \
  X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory)    \
  X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkFlushMappedMemoryRanges)         \
  X(vkInvalidateMappedMemoryRanges) X(vkCreateShaderModule) X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)   \
  X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)                \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets)           \
  X(vkUpdateDescriptorSets) X(vkCreateCommandPool) X(vkDestroyCommandPool)                   \
  X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)                  \
  X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch)     \
  X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCreateFence) X(vkDestroyFence)              \
  X(vkResetFences) X(vkWaitForFences) X(vkQueueSubmit) X(vkDeviceWaitIdle)                   \
  X(vkGetPhysicalDeviceFeatures2) X(vkEnumerateDeviceExtensionProperties)

/// The loaded entry points (null until load_instance_functions()).
struct VulkanApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
#define TERN_VK_MEMBER(name) PFN_##name name = nullptr;
  TERN_VK_FUNCTIONS(TERN_VK_MEMBER)
#undef TERN_VK_MEMBER
};

/// The process's table (static storage).
VulkanApi& vk();

/// Opens the loader (libvulkan.so.1) and reads the global entry points. False with `why`
/// filled (dlerror's text) when there is no loader. Idempotent.
bool load_loader(char* why, size_t why_size);

/// Reads every instance-level and device-level entry point through vkGetInstanceProcAddr.
/// False with the first missing name in `why`.
bool load_instance_functions(VkInstance instance, char* why, size_t why_size);

/// Counting wrappers: every buffer, memory allocation, descriptor set and command buffer the
/// backend makes goes through these, so a test can prove none is made during execute.
VkResult create_buffer(VkDevice device, const VkBufferCreateInfo* info, VkBuffer* out);
VkResult allocate_memory(VkDevice device, const VkMemoryAllocateInfo* info, VkDeviceMemory* out);
VkResult allocate_descriptor_sets(VkDevice device, const VkDescriptorSetAllocateInfo* info,
                                  VkDescriptorSet* out);
VkResult allocate_command_buffers(VkDevice device, const VkCommandBufferAllocateInfo* info,
                                  VkCommandBuffer* out);

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* vk_result_name(VkResult r);

}  // namespace tern::vulkan
