// Opening Vulkan: loader and instance once per process; a device (one compute queue) per
// device asked for — by the load option "device", TERN_VULKAN_DEVICE, or the best type — each
// unsuitable device skipped with the reason.
#include "backends/vulkan/runtime/vulkan_context.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

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

/// The process's loader and instance, and what it sees of each device (opened once).
struct Instance {
  bool ok = false;
  char reason[512] = {};  ///< why not ok
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t count = 0;
  VkPhysicalDevice devices[kMaxDevices] = {};
  VkPhysicalDeviceProperties props[kMaxDevices] = {};
  char unsuitable[kMaxDevices][160] = {};  ///< why device i cannot run tern's shaders, or ""
  uint32_t family[kMaxDevices] = {};       ///< its compute queue family
  /// Why tern cannot use Vulkan here ("" when a suitable device exists): `reason`, or every
  /// device with what it lacks.
  char unavailable[1024] = {};
};

void open_instance(Instance& in) {
  if (!load_loader(in.reason, sizeof(in.reason))) return;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tern";
  app.pEngineName = "tern";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ici{};
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  VkResult r = vk().vkCreateInstance(&ici, nullptr, &in.instance);
  if (r != VK_SUCCESS) {
    std::snprintf(in.reason, sizeof(in.reason),
                  "vkCreateInstance failed (%s): no Vulkan 1.1 driver (ICD) found",
                  vk_result_name(r));
    in.instance = VK_NULL_HANDLE;
    return;
  }
  if (!load_instance_functions(in.instance, in.reason, sizeof(in.reason))) return;
  uint32_t count = kMaxDevices;
  r = vk().vkEnumeratePhysicalDevices(in.instance, &count, in.devices);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
    std::snprintf(in.reason, sizeof(in.reason), "no Vulkan device (vkEnumeratePhysicalDevices: "
                  "%u devices, %s)", count, vk_result_name(r));
    return;
  }
  in.count = count;
  for (uint32_t i = 0; i < count; ++i) {
    vk().vkGetPhysicalDeviceProperties(in.devices[i], &in.props[i]);
    check_device(in.devices[i], in.props[i], in.unsuitable[i], sizeof(in.unsuitable[i]),
                 &in.family[i]);
  }
  in.ok = true;
}

/// Fills in.unavailable.
void explain_unavailable(Instance& in) {
  if (!in.ok) {
    std::snprintf(in.unavailable, sizeof(in.unavailable), "%s", in.reason);
    return;
  }
  char list[768] = {};
  for (uint32_t i = 0; i < in.count; ++i) {
    if (in.unsuitable[i][0] == '\0') return;  // a suitable device: available
    char line[320];
    std::snprintf(line, sizeof(line), "%sdevice %u '%.100s' lacks: %.140s", list[0] ? "; " : "",
                  i, in.props[i].deviceName, in.unsuitable[i]);
    append(list, sizeof(list), line);
  }
  std::snprintf(in.unavailable, sizeof(in.unavailable), "no suitable Vulkan device: %s", list);
}

const Instance& instance() {
  // Opened once, kept for the process's life: drivers may keep threads that must not be torn
  // down from a static destructor.
  static const Instance* in = [] {
    Instance* i = new Instance();
    open_instance(*i);
    explain_unavailable(*i);
    return i;
  }();
  return *in;
}

/// The device `wanted` names among the instance's (an index, or a substring of a device's
/// name; null or empty: the best suitable one, discrete GPU first, then integrated, virtual,
/// CPU), or -1 with the reason in `why`: none matches (the devices listed), or every match is
/// unsuitable (each named with what it lacks). `wanted_from` names the setting in messages.
int select_device(const Instance& in, const char* wanted, const char* wanted_from, char* why,
                  size_t why_size) {
  const bool any = wanted == nullptr || wanted[0] == '\0';
  char* end = nullptr;
  long wanted_index = -1;
  if (!any) {
    wanted_index = std::strtol(wanted, &end, 10);
    if (end == wanted || *end != '\0') wanted_index = -1;
  }
  int best = -1, best_rank = 99;
  bool matched = false;
  char skipped[768] = {};
  char names[512] = {};
  for (uint32_t i = 0; i < in.count; ++i) {
    char line[320];
    std::snprintf(line, sizeof(line), "%s%u '%.100s'", names[0] ? ", " : "", i,
                  in.props[i].deviceName);
    append(names, sizeof(names), line);
    if (!any) {
      const bool match = wanted_index >= 0
                             ? static_cast<long>(i) == wanted_index
                             : std::strstr(in.props[i].deviceName, wanted) != nullptr;
      if (!match) continue;
    }
    matched = true;
    if (in.unsuitable[i][0] != '\0') {
      std::snprintf(line, sizeof(line), "%sdevice %u '%.100s' skipped: %.140s",
                    skipped[0] ? "; " : "", i, in.props[i].deviceName, in.unsuitable[i]);
      append(skipped, sizeof(skipped), line);
      continue;
    }
    const int rank = type_rank(in.props[i].deviceType);
    if (rank < best_rank) {
      best = static_cast<int>(i);
      best_rank = rank;
    }
  }
  if (best >= 0) {
    if (skipped[0] != '\0') TERN_LOG(Info, "vulkan: %s", skipped);
    return best;
  }
  if (!matched) {
    std::snprintf(why, why_size, "no Vulkan device matches %s='%s' (devices: %s)", wanted_from,
                  wanted, names);
  } else {
    std::snprintf(why, why_size, "no suitable Vulkan device: %s", skipped);
  }
  return -1;
}

/// Creates the logical device and its queue on instance device `index` into `c`.
void open_device(const Instance& in, uint32_t index, VulkanContext& c) {
  c.instance = in.instance;
  c.physical = in.devices[index];
  c.queue_family = in.family[index];
  c.properties = in.props[index];
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
  const VkResult r = vk().vkCreateDevice(c.physical, &dci, nullptr, &c.device);
  if (r != VK_SUCCESS) {
    std::snprintf(c.reason, sizeof(c.reason), "vkCreateDevice on '%s' failed: %s",
                  c.device_name, vk_result_name(r));
    c.device = VK_NULL_HANDLE;
    return;
  }
  vk().vkGetDeviceQueue(c.device, c.queue_family, 0, &c.queue);
  c.ok = true;
}

/// The context of instance device `index`, made on first use and kept for the process's life.
VulkanContext& device_context(const Instance& in, int index) {
  static std::mutex mutex;
  static VulkanContext* contexts[kMaxDevices] = {};
  std::lock_guard<std::mutex> lock(mutex);
  VulkanContext*& c = contexts[index];
  if (c == nullptr) {
    c = new VulkanContext();
    open_device(in, static_cast<uint32_t>(index), *c);
  }
  return *c;
}

/// The context of the device `wanted` names (see select_device), or null with the reason.
VulkanContext* select_context(const char* wanted, const char* wanted_from, char* why,
                              size_t why_size) {
  const Instance& in = instance();
  if (!in.ok) {
    std::snprintf(why, why_size, "%s", in.reason);
    return nullptr;
  }
  const int index = select_device(in, wanted, wanted_from, why, why_size);
  if (index < 0) return nullptr;
  VulkanContext& c = device_context(in, index);
  if (!c.ok) {
    std::snprintf(why, why_size, "%s", c.reason);
    return nullptr;
  }
  return &c;
}

}  // namespace

VulkanContext* vulkan_device_context(const char* wanted, char* why, size_t why_size) {
  if (wanted != nullptr) return select_context(wanted, "device", why, why_size);
  VulkanContext& c = vulkan_context();
  if (c.ok) return &c;
  std::snprintf(why, why_size, "%s", c.reason);
  return nullptr;
}

bool vulkan_has_suitable_device() { return instance().unavailable[0] == '\0'; }

const char* vulkan_unavailable_text() { return instance().unavailable; }

VulkanContext& vulkan_context() {
  // TERN_VULKAN_DEVICE's device, or the best one; when none can be opened, a context that is
  // not ok and says why.
  static VulkanContext* context = [] {
    char why[1024] = {};
    VulkanContext* c =
        select_context(std::getenv("TERN_VULKAN_DEVICE"), "TERN_VULKAN_DEVICE", why, sizeof(why));
    if (c == nullptr) {
      c = new VulkanContext();
      std::snprintf(c->reason, sizeof(c->reason), "%s", why);
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
