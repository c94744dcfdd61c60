// The C API's method memory: requirements, the caller's buffers checked and bound, or heap
// buffers allocated at load (tern::MethodMemory).
#include "c_memory.h"

#include <cinttypes>
#include <cstdio>
#include <new>

#include "runtime/core/checked_math.h"

namespace tern {
namespace c_api {
namespace {

bool aligned(const void* p, uint64_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

/// Checks one caller buffer: present, large enough, aligned.
tern_status check_buffer(const char* method, const char* what, const tern_buffer& buffer,
                         uint64_t needed, uint64_t alignment) {
  TERN_C_CHECK(buffer.data != nullptr || needed == 0, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "method '%s': the %s buffer is NULL (it needs %" PRIu64 " bytes)", method, what,
               needed);
  TERN_C_CHECK(buffer.size >= needed, nullptr, TERN_STATUS_SIZE_MISMATCH,
               "method '%s': the %s buffer has %zu bytes, expected at least %" PRIu64
               " (tern_program_memory_requirements)",
               method, what, buffer.size, needed);
  TERN_C_CHECK(buffer.data == nullptr || aligned(buffer.data, alignment), nullptr,
               TERN_STATUS_INVALID_ARGUMENT,
               "method '%s': the %s buffer at %p is not aligned to %" PRIu64 " bytes", method, what,
               buffer.data, alignment);
  return TERN_STATUS_OK;
}

}  // namespace

tern_status memory_requirements(const MethodMeta& meta, tern_memory_requirements* out) {
  uint64_t extra = 0;
  tern_memory_requirements r;
  TERN_C_CHECK(
      checked_mul(static_cast<uint64_t>(meta.num_delegates()), kBackendBytesPerDelegate, &extra) &&
          checked_add(meta.method_allocator_bytes(), extra, &r.method_bytes),
      nullptr, TERN_STATUS_INVALID_PROGRAM, "method '%s': method memory size overflows",
      meta.name());
  r.temp_bytes =
      meta.temp_allocator_bytes() > kMinTempBytes ? meta.temp_allocator_bytes() : kMinTempBytes;
  r.num_arenas = meta.num_arenas();
  *out = r;
  return TERN_STATUS_OK;
}

tern_status bind_caller_memory(const MethodMeta& meta, const char* name,
                               const tern_method_memory& memory, tern_method* method) {
  tern_memory_requirements needs;
  const tern_status sized = memory_requirements(meta, &needs);
  if (sized != TERN_STATUS_OK) return sized;
  TERN_C_CHECK(memory.num_arenas == needs.num_arenas, nullptr, TERN_STATUS_SIZE_MISMATCH,
               "method '%s': %zu arena buffers given, the method plans %zu arenas", name,
               memory.num_arenas, needs.num_arenas);
  TERN_C_CHECK(memory.arenas != nullptr || memory.num_arenas == 0, nullptr,
               TERN_STATUS_NULL_ARGUMENT, "method '%s': arenas is NULL but num_arenas is %zu", name,
               memory.num_arenas);
  tern_status s =
      check_buffer(name, "method", memory.method, needs.method_bytes, TERN_BUFFER_ALIGNMENT);
  if (s != TERN_STATUS_OK) return s;
  s = check_buffer(name, "temp", memory.temp, needs.temp_bytes, TERN_BUFFER_ALIGNMENT);
  if (s != TERN_STATUS_OK) return s;
  method->arenas.clear();
  for (size_t a = 0; a < memory.num_arenas; ++a) {
    Result<uint64_t> size = meta.arena_size(a);
    if (!size.ok()) return to_status(size.error());
    Result<uint32_t> alignment = meta.arena_alignment(a);
    if (!alignment.ok()) return to_status(alignment.error());
    char what[32];
    std::snprintf(what, sizeof(what), "arena %zu", a);
    s = check_buffer(name, what, memory.arenas[a], size.get(),
                     alignment.get() == 0 ? 1 : alignment.get());
    if (s != TERN_STATUS_OK) return s;
    method->arenas.emplace_back(static_cast<uint8_t*>(memory.arenas[a].data),
                                memory.arenas[a].size);
  }
  method->method_allocator = MemoryAllocator(memory.method.data, memory.method.size);
  method->temp_allocator = MemoryAllocator(memory.temp.data, memory.temp.size);
  method->planned_memory =
      HierarchicalAllocator(Span<Span<uint8_t>>(method->arenas.data(), method->arenas.size()));
  method->manager.method_allocator = &method->method_allocator;
  method->manager.planned_memory = &method->planned_memory;
  method->manager.temp_allocator = &method->temp_allocator;
  return TERN_STATUS_OK;
}

tern_status allocate_memory(const MethodMeta& meta, const char* name, tern_method* method) {
  method->owned_memory.reset(new (std::nothrow) MethodMemory());
  TERN_C_CHECK(method->owned_memory != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "method '%s': cannot allocate its memory", name);
  MethodMemoryOptions options;
  options.min_temp_bytes = kMinTempBytes;
  options.alignment = TERN_BUFFER_ALIGNMENT;
  TERN_C_CHECK(checked_mul(static_cast<uint64_t>(meta.num_delegates()), kBackendBytesPerDelegate,
                           &options.extra_method_bytes),
               nullptr, TERN_STATUS_INVALID_PROGRAM, "method '%s': method memory size overflows",
               name);
  const Error e = method->owned_memory->allocate(meta, options);
  if (e != Error::Ok) {
    return to_status(chain_error_message(e, "method '%s': cannot allocate its memory", name));
  }
  method->manager = *method->owned_memory->manager();
  return TERN_STATUS_OK;
}

}  // namespace c_api
}  // namespace tern
