// Opening Vulkan: loader, instance, device selection (TERN_VULKAN_DEVICE or the best type),
// each unsuitable device skipped with the reason, one compute queue.
#include "backends/vulkan/runtime/vulkan_context.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/core/log.h"

namespace tern::vulkan {
namespace {

constexpr uint32_t kMaxDevices = 16;

std::atomic<bool> g_hide_f16{false};

/// Whether device `p` lists extension `name` (at most 256 are looked at).
bool has_extension(VkPhysicalDevice p, const char* name) {
  VkExtensionProperties props[256];
  uint32_t n = 256;
  const VkResult r = vk().vkEnumerateDeviceExtensionProperties(p, nullptr, &n, props);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return false;
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strcmp(props[i].extensionName, name) == 0) return true;
  }
  return false;
}

/// Why device `p` cannot run tern's shaders ("" when it can); its compute queue family.
void check_device(VkPhysicalDevice p, const VkPhysicalDeviceProperties& props, char* why,
                  size_t why_size, uint32_t* family) {
  why[0] = '\0';
  if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 1) {
    std::snprintf(why, why_size, "Vulkan %u.%u, tern needs 1.1",
                  VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
    return;
  }
  const VkPhysicalDeviceLimits& l = props.limits;
  if (l.maxComputeWorkGroupInvocations < 64 || l.maxComputeWorkGroupSize[0] < 64) {
    std::snprintf(why, why_size, "maxComputeWorkGroupInvocations %u, tern needs 64",
                  l.maxComputeWorkGroupInvocations);
    return;
  }
  if (l.maxPushConstantsSize < 128 || l.maxComputeSharedMemorySize < 16384 ||
      l.maxPerStageDescriptorStorageBuffers < 5) {
    std::snprintf(why, why_size,
                  "push constants %u B, shared memory %u B, storage buffers per stage %u: tern "
                  "needs 128, 16384, 5", l.maxPushConstantsSize, l.maxComputeSharedMemorySize,
                  l.maxPerStageDescriptorStorageBuffers);
    return;
  }
  if (l.minStorageBufferOffsetAlignment > 256) {
    std::snprintf(why, why_size, "minStorageBufferOffsetAlignment %llu, tern needs <= 256",
                  static_cast<unsigned long long>(l.minStorageBufferOffsetAlignment));
    return;
  }
  uint32_t n = 0;
  vk().vkGetPhysicalDeviceQueueFamilyProperties(p, &n, nullptr);
  VkQueueFamilyProperties families[32];
  if (n > 32) n = 32;
  vk().vkGetPhysicalDeviceQueueFamilyProperties(p, &n, families);
  for (uint32_t i = 0; i < n; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0 && families[i].queueCount > 0) {
      *family = i;
      return;
    }
  }
  std::snprintf(why, why_size, "no compute queue");
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

void append(char* buf, size_t size, const char* text) {
  const size_t len = std::strlen(buf);
  if (len + 1 < size) std::snprintf(buf + len, size - len, "%s", text);
}

void open_context(VulkanContext& c) {
  if (!load_loader(c.reason, sizeof(c.reason))) return;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tern";
  app.pEngineName = "tern";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ici{};
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  VkResult r = vk().vkCreateInstance(&ici, nullptr, &c.instance);
  if (r != VK_SUCCESS) {
    std::snprintf(c.reason, sizeof(c.reason),
                  "vkCreateInstance failed (%s): no Vulkan 1.1 driver (ICD) found",
                  vk_result_name(r));
    c.instance = VK_NULL_HANDLE;
    return;
  }
  if (!load_instance_functions(c.instance, c.reason, sizeof(c.reason))) return;
  uint32_t count = kMaxDevices;
  VkPhysicalDevice devices[kMaxDevices];
  r = vk().vkEnumeratePhysicalDevices(c.instance, &count, devices);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
    std::snprintf(c.reason, sizeof(c.reason), "no Vulkan device (vkEnumeratePhysicalDevices: "
                  "%u devices, %s)", count, vk_result_name(r));
    return;
  }
  const char* wanted = std::getenv("TERN_VULKAN_DEVICE");
  char* end = nullptr;
  long wanted_index = -1;
  if (wanted != nullptr && wanted[0] != '\0') {
    wanted_index = std::strtol(wanted, &end, 10);
    if (end == wanted || *end != '\0') wanted_index = -1;
  }
  int best = -1, best_rank = 99;
  uint32_t best_family = 0;
  char skipped[768] = {};
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties props;
    vk().vkGetPhysicalDeviceProperties(devices[i], &props);
    char line[320];
    if (wanted != nullptr && wanted[0] != '\0') {
      const bool match = wanted_index >= 0 ? static_cast<long>(i) == wanted_index
                                            : std::strstr(props.deviceName, wanted) != nullptr;
      if (!match) continue;
    }
    char why[160];
    uint32_t family = 0;
    check_device(devices[i], props, why, sizeof(why), &family);
    if (why[0] != '\0') {
      std::snprintf(line, sizeof(line), "%sdevice %u '%.100s' skipped: %.140s", skipped[0] ? "; " : "",
                    i, props.deviceName, why);
      append(skipped, sizeof(skipped), line);
      continue;
    }
    const int rank = type_rank(props.deviceType);
    if (rank < best_rank) {
      best = static_cast<int>(i);
      best_rank = rank;
      best_family = family;
    }
  }
  if (best < 0) {
    if (wanted != nullptr && wanted[0] != '\0' && skipped[0] == '\0') {
      std::snprintf(c.reason, sizeof(c.reason),
                    "no Vulkan device matches TERN_VULKAN_DEVICE='%s' (%u devices)", wanted,
                    count);
    } else {
      std::snprintf(c.reason, sizeof(c.reason), "no suitable Vulkan device: %s", skipped);
    }
    return;
  }
  c.physical = devices[best];
  c.queue_family = best_family;
  vk().vkGetPhysicalDeviceProperties(c.physical, &c.properties);
  vk().vkGetPhysicalDeviceMemoryProperties(c.physical, &c.memory);
  std::snprintf(c.device_name, sizeof(c.device_name), "%s", c.properties.deviceName);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = c.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // f16 storage (optional): storageBuffer16BitAccess (VkPhysicalDevice16BitStorageFeatures,
  // Vulkan 1.1) and shaderFloat16 (VkPhysicalDeviceShaderFloat16Int8Features, Vulkan 1.2 or
  // VK_KHR_shader_float16_int8), queried through vkGetPhysicalDeviceFeatures2 and enabled when
  // both are there.
  const bool v12 = VK_API_VERSION_MAJOR(c.properties.apiVersion) > 1 ||
                   VK_API_VERSION_MINOR(c.properties.apiVersion) >= 2;
  const bool f16_ext = !v12 && has_extension(c.physical, "VK_KHR_shader_float16_int8");
  VkPhysicalDeviceShaderFloat16Int8Features f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16.pNext = (v12 || f16_ext) ? &f16 : nullptr;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &s16;
  vk().vkGetPhysicalDeviceFeatures2(c.physical, &features);
  c.shader_float16 = (v12 || f16_ext) && f16.shaderFloat16 == VK_TRUE;
  c.storage_buffer_16bit = s16.storageBuffer16BitAccess == VK_TRUE;
  // Enable only these two (every other member of the chain off).
  VkPhysicalDeviceShaderFloat16Int8Features f16_on{};
  f16_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16_on.shaderFloat16 = VK_TRUE;
  VkPhysicalDevice16BitStorageFeatures s16_on{};
  s16_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16_on.storageBuffer16BitAccess = VK_TRUE;
  const char* extensions[1];
  uint32_t num_extensions = 0;
  const bool enable_f16 = c.shader_float16 && c.storage_buffer_16bit;
  if (enable_f16) {
    s16_on.pNext = &f16_on;
    if (f16_ext) extensions[num_extensions++] = "VK_KHR_shader_float16_int8";
  }
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = enable_f16 ? &s16_on : nullptr;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = num_extensions;
  dci.ppEnabledExtensionNames = num_extensions > 0 ? extensions : nullptr;
  r = vk().vkCreateDevice(c.physical, &dci, nullptr, &c.device);
  if (r != VK_SUCCESS) {
    std::snprintf(c.reason, sizeof(c.reason), "vkCreateDevice on '%s' failed: %s",
                  c.device_name, vk_result_name(r));
    c.device = VK_NULL_HANDLE;
    return;
  }
  vk().vkGetDeviceQueue(c.device, c.queue_family, 0, &c.queue);
  std::snprintf(c.reason, sizeof(c.reason), "%s", skipped);
  if (skipped[0] != '\0') TERN_LOG(Info, "vulkan: %s", skipped);
  c.ok = true;
}

}  // namespace

VulkanContext& vulkan_context() {
  // Opened once, kept for the process's life: drivers may keep threads that must not be torn
  // down from a static destructor.
  static VulkanContext* context = [] {
    VulkanContext* c = new VulkanContext();
    open_context(*c);
    if (!c->ok) {
      c->device_name[0] = '\0';
      TERN_LOG(Info, "vulkan backend unavailable: %s", c->reason);
    }
    return c;
  }();
  return *context;
}

const char* f16_storage_missing(const VulkanContext& c) {
  const bool f16 = c.shader_float16 && !g_hide_f16.load();
  const bool s16 = c.storage_buffer_16bit && !g_hide_f16.load();
  if (f16 && s16) return nullptr;
  if (!f16 && !s16) return "shaderFloat16 and storageBuffer16BitAccess";
  return f16 ? "storageBuffer16BitAccess" : "shaderFloat16";
}

void set_hide_f16_features(bool hide) { g_hide_f16.store(hide); }

int find_memory_type(const VulkanContext& c, uint32_t type_bits, VkMemoryPropertyFlags required,
                     VkMemoryPropertyFlags preferred) {
  int fallback = -1;
  for (uint32_t i = 0; i < c.memory.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) == 0) continue;
    const VkMemoryPropertyFlags f = c.memory.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace tern::vulkan
