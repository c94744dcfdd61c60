// The kernel registry: a fixed-capacity, zero-initialized table filled by explicit calls.
#include "runtime/kernel/kernel_registry.h"

#include <cstring>

namespace tern {
namespace {

struct KernelEntry {
  const char* name;
  KernelFn fn;
  bool dynamic_shapes;
};

// Zero-initialized (no static constructor runs).
KernelEntry g_kernels[kMaxKernels];
size_t g_num_kernels = 0;

KernelEntry* find_entry(const char* name) {
  for (size_t i = 0; i < g_num_kernels; ++i) {
    if (std::strcmp(g_kernels[i].name, name) == 0) {
      return &g_kernels[i];
    }
  }
  return nullptr;
}

}  // namespace

Error register_kernel(const char* name, KernelFn fn) {
  TERN_CHECK_OR_RETURN_ERROR(name != nullptr && name[0] != '\0', InvalidArgument,
                             "register_kernel: kernel name is null or empty");
  TERN_CHECK_OR_RETURN_ERROR(fn != nullptr, InvalidArgument,
                             "register_kernel: kernel '%s' has a null function", name);
  if (KernelEntry* entry = find_entry(name)) {
    entry->fn = fn;
    entry->dynamic_shapes = false;
    return Error::Ok;
  }
  TERN_CHECK_OR_RETURN_ERROR(g_num_kernels < kMaxKernels, MemoryAllocationFailed,
                             "register_kernel: cannot register '%s': the registry is full "
                             "(%zu kernels, kMaxKernels = %zu)",
                             name, g_num_kernels, kMaxKernels);
  g_kernels[g_num_kernels].name = name;
  g_kernels[g_num_kernels].fn = fn;
  g_kernels[g_num_kernels].dynamic_shapes = false;
  ++g_num_kernels;
  return Error::Ok;
}

KernelFn find_kernel(const char* name) {
  if (name == nullptr) return nullptr;
  const KernelEntry* entry = find_entry(name);
  return entry ? entry->fn : nullptr;
}

Error mark_kernel_dynamic_shapes(const char* name) {
  KernelEntry* entry = name != nullptr ? find_entry(name) : nullptr;
  TERN_CHECK_OR_RETURN_ERROR(entry != nullptr, NotFound,
                             "mark_kernel_dynamic_shapes: no kernel named '%s' is registered",
                             name ? name : "(null)");
  entry->dynamic_shapes = true;
  return Error::Ok;
}

bool kernel_supports_dynamic_shapes(const char* name) {
  const KernelEntry* entry = name != nullptr ? find_entry(name) : nullptr;
  return entry != nullptr && entry->dynamic_shapes;
}

size_t num_registered_kernels() { return g_num_kernels; }

const char* registered_kernel_name(size_t i) {
  return i < g_num_kernels ? g_kernels[i].name : nullptr;
}

}  // namespace tern
