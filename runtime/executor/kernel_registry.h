// The kernel signature, the context kernels run in, and the explicit kernel registry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {

/// What a kernel may use while it runs. Kernels never allocate on the heap.
struct KernelContext {
  /// Scratch memory, reset by the executor after each instruction; may be null.
  MemoryAllocator* temp_allocator = nullptr;
  /// The operator name ("tern::add") and the instruction's debug name (may be null).
  const char* op_name = nullptr;
  const char* debug_name = nullptr;
};

/// Every kernel has this signature. `args` are the instruction's values: inputs first, then
/// outputs. A kernel checks argument kinds, dtypes and shapes on every call (the program is
/// untrusted) and returns InvalidArgument with a message naming the op, expected and found.
using KernelFn = Error (*)(KernelContext& context, Span<EValue*> args);

constexpr size_t kMaxKernels = 512;

/// Registers `fn` under `name` (e.g. "tern::add"); `name` must have static storage.
/// Registering the same name again replaces the function. MemoryAllocationFailed when full.
/// Not thread-safe: register at startup.
Error register_kernel(const char* name, KernelFn fn);

/// The kernel registered under `name`, or null.
KernelFn find_kernel(const char* name);

size_t num_registered_kernels();
/// Name of the i-th registered kernel (i < num_registered_kernels()).
const char* registered_kernel_name(size_t i);

}  // namespace tern
