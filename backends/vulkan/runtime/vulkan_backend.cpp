// The vulkan backend: at init a delegate parses its blob, creates its buffers (constants
// uploaded once; one arena for every other value; a host-visible staging buffer for the
// delegate's edges), a pipeline per shader it uses (specialization constants: workgroup size,
// matmul tile, attention's key limit), a descriptor set per node, and records one command
// buffer: edge copies in, the node dispatches with barriers between, edge copies out. execute()
// copies the inputs into the staging buffer, re-submits that command buffer, waits on a fence
// and copies the outputs out: no host or Vulkan allocation. An f16-storage blob holds its f32
// values as f16 on the device (the shaders' f16 variants); its f32 arguments are converted to
// and from f16 in those staging copies (delegate_args.h: every argument's form at the edges).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/vulkan/runtime/blob_reader.h"
#include "backends/vulkan/runtime/delegate_args.h"
#include "backends/vulkan/runtime/dispatch_plan.h"
#include "backends/vulkan/runtime/register_vulkan_backend.h"
#include "backends/vulkan/runtime/vulkan_api.h"
#include "backends/vulkan/runtime/vulkan_context.h"
#include "backends/vulkan/shaders/spirv_shaders.h"
#include "runtime/core/checked_math.h"
#include "runtime/core/log.h"
#include "runtime/core/platform.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace vulkan {
namespace {

/// Every value's bytes start at a multiple of this (>= any device's
/// minStorageBufferOffsetAlignment that the context accepts).
constexpr uint64_t kValueAlignment = 256;
/// Storage-buffer bindings of every shader: 0 the output, 1..4 the inputs.
constexpr uint32_t kBindings = 1 + kMaxNodeInputs;
constexpr uint32_t kNumShaders = static_cast<uint32_t>(ShaderId::kCount);
/// attention.comp's shared score row (specialization constant 2).
constexpr uint32_t kMaxAttentionKeys = 2048;

std::atomic<void (*)()> g_enter{nullptr}, g_leave{nullptr};

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  uint64_t size = 0;
  uint64_t allocated = 0;  ///< bytes of `memory` (the driver's requirement: size or more)
};

/// An integer input the host checks before each submit, as the portable kernel checks it: an
/// embedding's indices (each in [0, limit): the vocabulary) or a grouped product's ends (each in
/// [the previous end, limit]: the rows).
struct IndexCheck {
  uint32_t external = 0;  ///< into VulkanDelegate::externals
  uint32_t node = 0;
  int64_t limit = 0;
  bool group_ends = false;
};

bool is_index_node(uint32_t op) {
  return op == static_cast<uint32_t>(NodeOp::Embedding) ||
         op == static_cast<uint32_t>(NodeOp::QuantEmbedding) ||
         op == static_cast<uint32_t>(NodeOp::GroupedMatmul) ||
         op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear);
}

struct VulkanDelegate {
  VulkanContext* context = nullptr;  ///< the device it runs on (the process keeps it open)
  BlobPlan plan;
  uint64_t* offsets = nullptr;  ///< per value: in `weights` (constants) or `arena`
  Buffer weights, arena, staging;
  External* externals = nullptr;
  uint32_t num_externals = 0;
  IndexCheck* index_checks = nullptr;
  uint32_t num_index_checks = 0;
  VkShaderModule modules[kNumShaders] = {};
  VkPipeline pipelines[kNumShaders] = {};
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet* sets = nullptr;
  Dispatch* dispatches = nullptr;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

void destroy_buffer(VkDevice device, Buffer* b) {
  if (b->mapped != nullptr) vk().vkUnmapMemory(device, b->memory);
  if (b->buffer != VK_NULL_HANDLE) vk().vkDestroyBuffer(device, b->buffer, nullptr);
  if (b->memory != VK_NULL_HANDLE) vk().vkFreeMemory(device, b->memory, nullptr);
  *b = Buffer();
}

void free_delegate(VulkanDelegate* d) {
  if (d == nullptr) return;
  VkDevice dev = d->context != nullptr ? d->context->device : VK_NULL_HANDLE;
  if (dev != VK_NULL_HANDLE) {
    if (d->fence != VK_NULL_HANDLE) vk().vkDestroyFence(dev, d->fence, nullptr);
    if (d->command_pool != VK_NULL_HANDLE) vk().vkDestroyCommandPool(dev, d->command_pool, nullptr);
    if (d->pool != VK_NULL_HANDLE) vk().vkDestroyDescriptorPool(dev, d->pool, nullptr);
    for (uint32_t s = 0; s < kNumShaders; ++s) {
      if (d->pipelines[s] != VK_NULL_HANDLE) vk().vkDestroyPipeline(dev, d->pipelines[s], nullptr);
      if (d->modules[s] != VK_NULL_HANDLE) vk().vkDestroyShaderModule(dev, d->modules[s], nullptr);
    }
    if (d->pipeline_layout != VK_NULL_HANDLE) {
      vk().vkDestroyPipelineLayout(dev, d->pipeline_layout, nullptr);
    }
    if (d->set_layout != VK_NULL_HANDLE) {
      vk().vkDestroyDescriptorSetLayout(dev, d->set_layout, nullptr);
    }
    destroy_buffer(dev, &d->weights);
    destroy_buffer(dev, &d->arena);
    destroy_buffer(dev, &d->staging);
  }
  std::free(d->offsets);
  std::free(d->externals);
  std::free(d->index_checks);
  std::free(d->sets);
  std::free(d->dispatches);
  free_blob_plan(&d->plan);
  d->~VulkanDelegate();
  std::free(d);
}

#define TERN_VK_CHECK(call, what)                                                        \
  do {                                                                                   \
    const VkResult vk_r__ = (call);                                                      \
    if (vk_r__ != VK_SUCCESS) {                                                          \
      TERN_RETURN_ERROR(DelegateMemoryAllocationFailed, "vulkan: %s failed: %s", what,   \
                        vk_result_name(vk_r__));                                         \
    }                                                                                    \
  } while (0)

Error make_buffer(VulkanContext& c, uint64_t size, VkBufferUsageFlags usage,
                  VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                  const char* what, Buffer* out) {
  if (size == 0) size = kValueAlignment;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  TERN_VK_CHECK(create_buffer(c.device, &bci, &out->buffer), what);
  out->size = size;
  VkMemoryRequirements req;
  vk().vkGetBufferMemoryRequirements(c.device, out->buffer, &req);
  const int type = find_memory_type(c, req.memoryTypeBits, required, preferred);
  TERN_CHECK_OR_RETURN_ERROR(type >= 0, DelegateMemoryAllocationFailed,
                             "vulkan: no memory type for the %s (flags 0x%x) on '%s'", what,
                             required, c.device_name);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  TERN_VK_CHECK(allocate_memory(c.device, &mai, &out->memory), what);
  out->allocated = req.size;
  TERN_VK_CHECK(vk().vkBindBufferMemory(c.device, out->buffer, out->memory, 0), what);
  if ((required & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
    TERN_VK_CHECK(vk().vkMapMemory(c.device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped),
                  what);
  }
  return Error::Ok;
}

/// Offsets of every value (constants in `weights`, the rest in `arena` after a dummy block
/// that unused bindings point at) and of externals in `staging`.
Error lay_out(VulkanDelegate* d, uint64_t* weights_bytes, uint64_t* arena_bytes,
              uint64_t* staging_bytes) {
  const BlobPlan& p = d->plan;
  const uint32_t nv = p.header.num_values;
  d->offsets = static_cast<uint64_t*>(std::calloc(nv, sizeof(uint64_t)));
  uint32_t count = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    const ValueKind k = static_cast<ValueKind>(p.values[i].kind);
    if (k == ValueKind::ExternalInput || k == ValueKind::ExternalOutput) ++count;
  }
  d->externals = static_cast<External*>(std::calloc(count == 0 ? 1 : count, sizeof(External)));
  TERN_CHECK_OR_RETURN_ERROR(d->offsets != nullptr && d->externals != nullptr,
                             DelegateMemoryAllocationFailed, "vulkan: no memory for %u values",
                             nv);
  uint64_t w = 0, a = kValueAlignment, s = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    const BlobValue& v = p.values[i];
    uint64_t bytes = 0;
    TERN_CHECK_OR_RETURN_ERROR(checked_align_up(value_bytes(v, p.header.storage), kValueAlignment,
                                                &bytes),
                               InvalidProgram, "vulkan: value %u too large", i);
    const ValueKind k = static_cast<ValueKind>(v.kind);
    if (k == ValueKind::Constant) {
      d->offsets[i] = w;
      w += bytes;
      continue;
    }
    d->offsets[i] = a;
    a += bytes;
    if (k == ValueKind::Internal) continue;
    External& x = d->externals[d->num_externals++];
    new (&x) External();
    describe_external(v, i, p.header.storage, s, &x);
    s += bytes;
  }
  *weights_bytes = w;
  *arena_bytes = a;
  *staging_bytes = s;
  return Error::Ok;
}

Error submit_and_wait(VulkanContext& c, VulkanDelegate* d) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &d->command_buffer;
  void (*enter)() = g_enter.load();
  void (*leave)() = g_leave.load();
  VkResult r;
  {
    std::lock_guard<std::mutex> lock(c.queue_mutex);
    if (enter != nullptr) enter();
    r = vk().vkQueueSubmit(c.queue, 1, &si, d->fence);
    if (r == VK_SUCCESS) r = vk().vkWaitForFences(c.device, 1, &d->fence, VK_TRUE, UINT64_MAX);
    if (leave != nullptr) leave();
  }
  TERN_CHECK_OR_RETURN_ERROR(r == VK_SUCCESS, DelegateExecutionFailed,
                             "vulkan: submit on '%s' failed: %s", c.device_name,
                             vk_result_name(r));
  r = vk().vkResetFences(c.device, 1, &d->fence);
  TERN_CHECK_OR_RETURN_ERROR(r == VK_SUCCESS, DelegateExecutionFailed,
                             "vulkan: vkResetFences failed: %s", vk_result_name(r));
  return Error::Ok;
}

Error begin(VulkanDelegate* d, VkCommandBufferUsageFlags flags) {
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = flags;
  TERN_VK_CHECK(vk().vkBeginCommandBuffer(d->command_buffer, &bi), "vkBeginCommandBuffer");
  return Error::Ok;
}

void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
             VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = src_access;
  mb.dstAccessMask = dst_access;
  vk().vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

/// Copies the constants into `weights` through a temporary host-visible buffer and one
/// submission (init only).
Error upload_constants(VulkanContext& c, VulkanDelegate* d) {
  if (d->weights.size == 0) return Error::Ok;
  Buffer upload;
  Error err = make_buffer(c, d->weights.size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                          0, "weight upload buffer", &upload);
  if (err == Error::Ok) {
    const BlobPlan& p = d->plan;
    for (uint32_t i = 0; i < p.header.num_values; ++i) {
      const BlobValue& v = p.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::Constant)) continue;
      std::memcpy(static_cast<uint8_t*>(upload.mapped) + d->offsets[i], p.data + v.data_offset,
                  v.data_bytes);
    }
    err = begin(d, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
  }
  if (err == Error::Ok) {
    VkBufferCopy region{0, 0, d->weights.size};
    vk().vkCmdCopyBuffer(d->command_buffer, upload.buffer, d->weights.buffer, 1, &region);
    const VkResult r = vk().vkEndCommandBuffer(d->command_buffer);
    err = r == VK_SUCCESS ? submit_and_wait(c, d)
                          : set_error_message(Error::DelegateMemoryAllocationFailed,
                                              "vulkan: recording the weight upload failed: %s",
                                              vk_result_name(r));
  }
  destroy_buffer(c.device, &upload);
  return err;
}

Error create_pipelines(VulkanContext& c, VulkanDelegate* d) {
  VkDescriptorSetLayoutBinding bindings[kBindings];
  for (uint32_t b = 0; b < kBindings; ++b) {
    bindings[b] = VkDescriptorSetLayoutBinding{};
    bindings[b].binding = b;
    bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[b].descriptorCount = 1;
    bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = kBindings;
  dl.pBindings = bindings;
  TERN_VK_CHECK(vk().vkCreateDescriptorSetLayout(c.device, &dl, nullptr, &d->set_layout),
                "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            sizeof(int32_t) * kNodeParams + sizeof(float) * kNodeFParams};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &d->set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  TERN_VK_CHECK(vk().vkCreatePipelineLayout(c.device, &pl, nullptr, &d->pipeline_layout),
                "vkCreatePipelineLayout");
  // Specialization constants: 0 workgroup size, 1 matmul tile, 2 attention's key limit.
  const uint32_t spec[3] = {d->plan.header.workgroup_size, d->plan.header.matmul_tile,
                            kMaxAttentionKeys};
  const VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  VkSpecializationInfo si{3, entries, sizeof(spec), spec};
  for (uint32_t n = 0; n < d->plan.header.num_nodes; ++n) {
    const uint32_t s = static_cast<uint32_t>(d->dispatches[n].shader);
    if (d->pipelines[s] != VK_NULL_HANDLE) continue;
    const bool f16 = d->plan.header.storage == kStorageF16;
    const SpirvShader& code = f16 ? spirv_shader_f16(static_cast<ShaderId>(s))
                                  : spirv_shader(static_cast<ShaderId>(s));
    TERN_CHECK_OR_RETURN_ERROR(code.words != nullptr, InvalidProgram,
                               "vulkan: shader %s has no f16-storage variant", code.name);
    VkShaderModuleCreateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mi.codeSize = code.num_words * 4;
    mi.pCode = code.words;
    TERN_VK_CHECK(vk().vkCreateShaderModule(c.device, &mi, nullptr, &d->modules[s]),
                  "vkCreateShaderModule");
    VkComputePipelineCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = d->modules[s];
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &si;
    ci.layout = d->pipeline_layout;
    const VkResult r =
        vk().vkCreateComputePipelines(c.device, VK_NULL_HANDLE, 1, &ci, nullptr, &d->pipelines[s]);
    TERN_CHECK_OR_RETURN_ERROR(r == VK_SUCCESS, DelegateInvalidCompatibility,
                               "vulkan: pipeline for shader '%s' failed on '%s': %s", code.name,
                               c.device_name, vk_result_name(r));
  }
  return Error::Ok;
}

Error create_descriptor_sets(VulkanContext& c, VulkanDelegate* d) {
  const uint32_t nn = d->plan.header.num_nodes;
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nn * kBindings};
  VkDescriptorPoolCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pi.maxSets = nn;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  TERN_VK_CHECK(vk().vkCreateDescriptorPool(c.device, &pi, nullptr, &d->pool),
                "vkCreateDescriptorPool");
  d->sets = static_cast<VkDescriptorSet*>(std::calloc(nn, sizeof(VkDescriptorSet)));
  VkDescriptorSetLayout* layouts =
      static_cast<VkDescriptorSetLayout*>(std::calloc(nn, sizeof(VkDescriptorSetLayout)));
  if (d->sets == nullptr || layouts == nullptr) {
    std::free(layouts);
    TERN_RETURN_ERROR(DelegateMemoryAllocationFailed, "vulkan: no memory for %u sets", nn);
  }
  for (uint32_t n = 0; n < nn; ++n) layouts[n] = d->set_layout;
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = d->pool;
  ai.descriptorSetCount = nn;
  ai.pSetLayouts = layouts;
  const VkResult r = allocate_descriptor_sets(c.device, &ai, d->sets);
  std::free(layouts);
  TERN_CHECK_OR_RETURN_ERROR(r == VK_SUCCESS, DelegateMemoryAllocationFailed,
                             "vulkan: vkAllocateDescriptorSets failed: %s", vk_result_name(r));
  for (uint32_t n = 0; n < nn; ++n) {
    const BlobNode& node = d->plan.nodes[n];
    VkDescriptorBufferInfo infos[kBindings];
    VkWriteDescriptorSet writes[kBindings];
    for (uint32_t b = 0; b < kBindings; ++b) {
      const uint32_t value = b == 0 ? node.output
                                    : (b - 1 < node.num_inputs ? node.inputs[b - 1] : kNoValue);
      if (value == kNoValue) {
        infos[b] = VkDescriptorBufferInfo{d->arena.buffer, 0, kValueAlignment};
      } else {
        const BlobValue& v = d->plan.values[value];
        const bool constant = v.kind == static_cast<uint32_t>(ValueKind::Constant);
        infos[b] = VkDescriptorBufferInfo{constant ? d->weights.buffer : d->arena.buffer,
                                          d->offsets[value],
                                          value_bytes(v, d->plan.header.storage)};
      }
      writes[b] = VkWriteDescriptorSet{};
      writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[b].dstSet = d->sets[n];
      writes[b].dstBinding = b;
      writes[b].descriptorCount = 1;
      writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[b].pBufferInfo = &infos[b];
    }
    vk().vkUpdateDescriptorSets(c.device, kBindings, writes, 0, nullptr);
  }
  return Error::Ok;
}

/// The command buffer every execute() re-submits.
Error record(VulkanDelegate* d) {
  TERN_RETURN_IF_ERROR(begin(d, 0));
  VkCommandBuffer cb = d->command_buffer;
  for (uint32_t e = 0; e < d->num_externals; ++e) {
    const External& x = d->externals[e];
    if (!x.input) continue;
    VkBufferCopy region{x.staging_offset, d->offsets[x.value], x.staging_bytes};
    vk().vkCmdCopyBuffer(cb, d->staging.buffer, d->arena.buffer, 1, &region);
  }
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (uint32_t n = 0; n < d->plan.header.num_nodes; ++n) {
    const BlobNode& node = d->plan.nodes[n];
    const Dispatch& disp = d->dispatches[n];
    vk().vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                           d->pipelines[static_cast<uint32_t>(disp.shader)]);
    vk().vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1,
                                 &d->sets[n], 0, nullptr);
    uint8_t push[sizeof(int32_t) * kNodeParams + sizeof(float) * kNodeFParams];
    std::memcpy(push, node.params, sizeof(node.params));
    std::memcpy(push + sizeof(node.params), node.fparams, sizeof(node.fparams));
    vk().vkCmdPushConstants(cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push),
                            push);
    vk().vkCmdDispatch(cb, disp.groups[0], disp.groups[1], disp.groups[2]);
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  }
  for (uint32_t e = 0; e < d->num_externals; ++e) {
    const External& x = d->externals[e];
    if (x.input) continue;
    VkBufferCopy region{d->offsets[x.value], x.staging_offset, x.staging_bytes};
    vk().vkCmdCopyBuffer(cb, d->arena.buffer, d->staging.buffer, 1, &region);
  }
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  TERN_VK_CHECK(vk().vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return Error::Ok;
}

/// set_vulkan_max_invocations_override's value (0: none).
std::atomic<uint32_t> g_max_invocations_override{0};

/// Refuses a blob whose workgroup or shared memory the device cannot give.

Error check_limits(const VulkanContext& c, const BlobHeader& h) {
  VkPhysicalDeviceLimits l = c.properties.limits;
  if (const uint32_t cap = g_max_invocations_override.load()) {
    l.maxComputeWorkGroupInvocations = std::min(l.maxComputeWorkGroupInvocations, cap);
    l.maxComputeWorkGroupSize[0] = std::min(l.maxComputeWorkGroupSize[0], cap);
  }
  const uint32_t t = h.matmul_tile;
  TERN_CHECK_OR_RETURN_ERROR(
      h.workgroup_size <= l.maxComputeWorkGroupInvocations &&
          h.workgroup_size <= l.maxComputeWorkGroupSize[0],
      DelegateInvalidCompatibility,
      "vulkan: the blob's workgroup of %u invocations exceeds device '%s' (max %u invocations, "
      "x %u)", h.workgroup_size, c.device_name, l.maxComputeWorkGroupInvocations,
      l.maxComputeWorkGroupSize[0]);
  TERN_CHECK_OR_RETURN_ERROR(
      t * t <= l.maxComputeWorkGroupInvocations && t <= l.maxComputeWorkGroupSize[0] &&
          t <= l.maxComputeWorkGroupSize[1] && 2 * (4 * t) * t * 4 <= l.maxComputeSharedMemorySize,
      DelegateInvalidCompatibility,
      "vulkan: the blob's %ux%u matmul tile exceeds device '%s' (max %u invocations, shared "
      "memory %u B)", t, t, c.device_name, l.maxComputeWorkGroupInvocations,
      l.maxComputeSharedMemorySize);
  TERN_CHECK_OR_RETURN_ERROR(
      4 * h.workgroup_size * 4 <= l.maxComputeSharedMemorySize, DelegateInvalidCompatibility,
      "vulkan: device '%s' has %u B of shared memory, the quantized GEMV needs %u",
      c.device_name, l.maxComputeSharedMemorySize, 4 * h.workgroup_size * 4);
  TERN_CHECK_OR_RETURN_ERROR(
      (kMaxAttentionKeys + h.workgroup_size) * 4 <= l.maxComputeSharedMemorySize,
      DelegateInvalidCompatibility,
      "vulkan: device '%s' has %u B of shared memory, the attention shader needs %u",
      c.device_name, l.maxComputeSharedMemorySize, (kMaxAttentionKeys + h.workgroup_size) * 4);
  return Error::Ok;
}

Error build(VulkanContext& c, VulkanDelegate* d) {
  TERN_RETURN_IF_ERROR(check_limits(c, d->plan.header));
  const uint32_t nn = d->plan.header.num_nodes;
  d->dispatches = static_cast<Dispatch*>(std::calloc(nn, sizeof(Dispatch)));
  TERN_CHECK_OR_RETURN_ERROR(d->dispatches != nullptr, DelegateMemoryAllocationFailed,
                             "vulkan: no memory for %u dispatches", nn);
  const VkPhysicalDeviceLimits& l = c.properties.limits;
  uint32_t checks = 0;
  for (uint32_t n = 0; n < nn; ++n) {
    TERN_RETURN_IF_ERROR(plan_dispatch(d->plan, n, l.maxComputeWorkGroupCount, &d->dispatches[n]));
    const BlobNode& node = d->plan.nodes[n];
    if (node.op == static_cast<uint32_t>(NodeOp::Attention)) {
      TERN_CHECK_OR_RETURN_ERROR(node.params[2] <= static_cast<int32_t>(kMaxAttentionKeys),
                                 DelegateInvalidCompatibility,
                                 "vulkan: node %u (attention): %d keys, the shader holds %u", n,
                                 node.params[2], kMaxAttentionKeys);
    }
    if (is_index_node(node.op)) ++checks;
  }
  uint64_t wb = 0, ab = 0, sb = 0;
  TERN_RETURN_IF_ERROR(lay_out(d, &wb, &ab, &sb));
  if (checks > 0) {
    d->index_checks = static_cast<IndexCheck*>(std::calloc(checks, sizeof(IndexCheck)));
    TERN_CHECK_OR_RETURN_ERROR(d->index_checks != nullptr, DelegateMemoryAllocationFailed,
                               "vulkan: no memory for index checks");
    for (uint32_t n = 0; n < nn; ++n) {
      const BlobNode& node = d->plan.nodes[n];
      if (!is_index_node(node.op)) continue;
      const bool ends = node.op == static_cast<uint32_t>(NodeOp::GroupedMatmul) ||
                        node.op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear);
      // Embeddings: indices at input 1, the vocabulary at params[0]; grouped products: ends
      // at input 2, the rows S at params[0].
      const uint32_t checked = node.inputs[ends ? 2 : 1];
      for (uint32_t e = 0; e < d->num_externals; ++e) {
        // An input's integers only (an argmax's indices leaving the delegate are an output
        // that another node reads too: made on the device, within range by construction).
        if (d->externals[e].value == checked && d->externals[e].input) {
          d->index_checks[d->num_index_checks++] = IndexCheck{e, n, node.params[0], ends};
        }
      }
    }
  }
  const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  if (wb > 0) {
    TERN_RETURN_IF_ERROR(make_buffer(c, wb, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "weight buffer",
                                     &d->weights));
  }
  TERN_RETURN_IF_ERROR(make_buffer(
      c, ab, storage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, "arena", &d->arena));
  TERN_RETURN_IF_ERROR(make_buffer(
      c, sb, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "staging buffer", &d->staging));
  VkCommandPoolCreateInfo cpi{};
  cpi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = c.queue_family;
  TERN_VK_CHECK(vk().vkCreateCommandPool(c.device, &cpi, nullptr, &d->command_pool),
                "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = d->command_pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  TERN_VK_CHECK(allocate_command_buffers(c.device, &cai, &d->command_buffer),
                "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  TERN_VK_CHECK(vk().vkCreateFence(c.device, &fi, nullptr, &d->fence), "vkCreateFence");
  TERN_RETURN_IF_ERROR(upload_constants(c, d));
  TERN_RETURN_IF_ERROR(create_pipelines(c, d));
  TERN_RETURN_IF_ERROR(create_descriptor_sets(c, d));
  return record(d);
}

/// Integer `k` of an i64 / i32 argument.
int64_t integer_at(const External& x, const void* data, uint64_t k) {
  return x.dtype == DType::I64 ? static_cast<const int64_t*>(data)[k]
                               : static_cast<const int32_t*>(data)[k];
}

/// The host's check of an index input before the submit (the shaders only guard their reads):
/// InvalidArgument naming the node, the position, the value and the range it had.
Error check_indices(const VulkanDelegate* d, const IndexCheck& ic, Span<EValue*> args) {
  const External& x = d->externals[ic.external];
  const void* data = args[x.arg]->to_tensor().data;
  const uint64_t count = x.bytes / (x.dtype == DType::I64 ? 8 : 4);
  const char* op = node_op_name(d->plan.nodes[ic.node].op);
  int64_t start = 0;
  for (uint64_t k = 0; k < count; ++k) {
    const int64_t v = integer_at(x, data, k);
    if (ic.group_ends) {
      TERN_CHECK_OR_RETURN_ERROR(v >= start && v <= ic.limit, InvalidArgument,
                                 "vulkan: node %u (%s): ends[%llu] is %lld, expected %lld..%lld "
                                 "(the ends must not go backwards nor past the %lld rows)",
                                 ic.node, op, static_cast<unsigned long long>(k),
                                 static_cast<long long>(v), static_cast<long long>(start),
                                 static_cast<long long>(ic.limit),
                                 static_cast<long long>(ic.limit));
      start = v;
    } else {
      TERN_CHECK_OR_RETURN_ERROR(v >= 0 && v < ic.limit, InvalidArgument,
                                 "vulkan: node %u (%s): index %lld at position %llu outside "
                                 "[0, %lld)", ic.node, op, static_cast<long long>(v),
                                 static_cast<unsigned long long>(k),
                                 static_cast<long long>(ic.limit));
    }
  }
  return Error::Ok;
}

class VulkanBackend final : public BackendInterface {
 public:
  /// A usable device exists; which one a delegate runs on is chosen at init (the load option
  /// "device", TERN_VULKAN_DEVICE, or the best), and init refuses with the reason (then the
  /// fallback runs) when that one cannot be opened.
  bool is_available() const override { return vulkan_has_suitable_device(); }
  const char* unavailable_reason() const override { return vulkan_unavailable_text(); }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob,
                               Span<const CompileSpecView> specs) const override {
    // The device: the load option "device" (an index or part of a name), else the default.
    TERN_RETURN_IF_ERROR(check_backend_option_keys(context.options, "vulkan", {"device"},
                                                   "device=<index or part of a device name>"));
    char why[1024] = {};
    VulkanContext* cp = vulkan_device_context(
        find_backend_option(context.options, "vulkan", "device"), why, sizeof(why));
    if (cp == nullptr) {
      return set_error_message(Error::DelegateInvalidCompatibility, "vulkan: unavailable: %s", why);
    }
    VulkanContext& c = *cp;
    int spec_storage = -1;  // the compile spec's storage, when given
    for (size_t i = 0; i < specs.size(); ++i) {
      const CompileSpecView& s = specs[i];
      if (s.key != nullptr && std::strcmp(s.key, "storage") == 0) {
        const bool f32 = s.value.size() == 3 && std::memcmp(s.value.data(), "f32", 3) == 0;
        const bool f16 = s.value.size() == 3 && std::memcmp(s.value.data(), "f16", 3) == 0;
        if (!f32 && !f16) {
          return set_error_message(Error::DelegateInvalidCompatibility,
                                   "vulkan: compile spec storage='%.*s': this runtime implements "
                                   "f32 and f16 storage", static_cast<int>(s.value.size()),
                                   reinterpret_cast<const char*>(s.value.data()));
        }
        spec_storage = static_cast<int>(f16 ? kStorageF16 : kStorageF32);
      }
    }
    if (reinterpret_cast<uintptr_t>(blob.data()) % 8 != 0) {
      return set_error_message(Error::DelegateInvalidCompatibility,
                               "vulkan: blob not 8-byte aligned");
    }
    void* mem = std::calloc(1, sizeof(VulkanDelegate));
    if (mem == nullptr) {
      return set_error_message(Error::DelegateMemoryAllocationFailed, "vulkan: no memory");
    }
    VulkanDelegate* d = new (mem) VulkanDelegate();
    d->context = cp;
    Error err = parse_blob(
        Span<const uint8_t>(static_cast<const uint8_t*>(blob.data()), blob.size()), &d->plan);
    if (err == Error::Ok && spec_storage >= 0 &&
        static_cast<uint32_t>(spec_storage) != d->plan.header.storage) {
      err = set_error_message(Error::InvalidProgram,
                              "vulkan: compile spec storage='%s' but the blob's storage is %u",
                              spec_storage == static_cast<int>(kStorageF16) ? "f16" : "f32",
                              d->plan.header.storage);
    }
    if (err == Error::Ok && d->plan.header.storage == kStorageF16) {
      // The executor logs this message (one line) and runs the portable fallback.
      const char* missing = f16_storage_missing(c);
      if (missing != nullptr) {
        err = set_error_message(Error::DelegateInvalidCompatibility,
                                "vulkan: the blob has f16 storage and device '%s' lacks %s",
                                c.device_name, missing);
      }
    }
    if (err == Error::Ok) err = build(c, d);
    // Everything the blob held is on the device now (or in the plan's copies of its tables).
    d->plan.data = nullptr;
    blob.free();
    if (err != Error::Ok) {
      free_delegate(d);
      return err;
    }
    return reinterpret_cast<DelegateHandle*>(d);
  }

  Error prepare(DelegateHandle* handle, Span<EValue*> args) const override {
    VulkanDelegate* d = reinterpret_cast<VulkanDelegate*>(handle);
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr, DelegateInvalidHandle, "vulkan: null handle");
    for (uint32_t e = 0; e < d->num_externals; ++e) {
      TERN_RETURN_IF_ERROR(check_arg(d->externals[e], args));
    }
    return Error::Ok;
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                Span<EValue*> args) const override {
    VulkanDelegate* d = reinterpret_cast<VulkanDelegate*>(handle);
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr, DelegateInvalidHandle, "vulkan: null handle");
    VulkanContext& c = *d->context;
    const bool timed = context.report_part != nullptr;
    uint64_t t0 = timed ? monotonic_ns() : 0;
    uint8_t* staging = static_cast<uint8_t*>(d->staging.mapped);
    for (uint32_t e = 0; e < d->num_externals; ++e) {
      const External& x = d->externals[e];
      TERN_RETURN_IF_ERROR(check_arg(x, args));
      if (x.input) {
        TERN_RETURN_IF_ERROR(copy_in(x, args[x.arg]->to_tensor().data, staging));
      }
    }
    for (uint32_t i = 0; i < d->num_index_checks; ++i) {
      TERN_RETURN_IF_ERROR(check_indices(d, d->index_checks[i], args));
    }
    uint64_t t1 = timed ? monotonic_ns() : 0;
    if (timed) context.report_part(context.part_sink, "inputs in (staging copies)", t0, t1);
    TERN_RETURN_IF_ERROR(submit_and_wait(c, d));
    uint64_t t2 = timed ? monotonic_ns() : 0;
    if (timed) context.report_part(context.part_sink, "vulkan submit + wait", t1, t2);
    for (uint32_t e = 0; e < d->num_externals; ++e) {
      const External& x = d->externals[e];
      if (!x.input) copy_out(x, staging, args[x.arg]->to_tensor().data);
    }
    if (timed) context.report_part(context.part_sink, "outputs out (staging copies)", t2, monotonic_ns());
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    free_delegate(reinterpret_cast<VulkanDelegate*>(handle));
  }

  uint64_t device_memory_bytes(DelegateHandle* handle) const override {
    const VulkanDelegate* d = reinterpret_cast<const VulkanDelegate*>(handle);
    return d->weights.allocated + d->arena.allocated + d->staging.allocated;
  }
};

const VulkanBackend kBackend;

}  // namespace
}  // namespace vulkan

Error register_vulkan_backend() {
  Backend entry;
  entry.name = "vulkan";
  entry.backend = &vulkan::kBackend;
  return register_backend(entry);
}

const BackendInterface& vulkan_backend_interface() { return vulkan::kBackend; }

const char* vulkan_unavailable_reason() {
  if (!vulkan::vulkan_has_suitable_device()) return vulkan::vulkan_unavailable_text();
  const vulkan::VulkanContext& c = vulkan::vulkan_context();
  return c.ok ? "" : c.reason;
}

const char* vulkan_device_name() { return vulkan::vulkan_context().device_name; }

void set_vulkan_driver_call_hooks(void (*enter)(), void (*leave)()) {
  vulkan::g_enter.store(enter);
  vulkan::g_leave.store(leave);
}

bool vulkan_device_has_f16_storage() {
  const vulkan::VulkanContext& c = vulkan::vulkan_context();
  return c.ok && c.shader_float16 && c.storage_buffer_16bit;
}

void set_vulkan_hide_f16_features(bool hide) { vulkan::set_hide_f16_features(hide); }

void set_vulkan_max_invocations_override(uint32_t max_invocations) {
  vulkan::g_max_invocations_override.store(max_invocations);
}

}  // namespace tern
