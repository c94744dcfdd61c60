// The explicit, fixed-capacity kernel registry: operator name -> KernelFn.
#pragma once

#include <cstddef>

#include "runtime/core/error.h"
#include "runtime/kernel/kernel.h"

namespace tern {

constexpr size_t kMaxKernels = 512;

/// Registers `fn` under `name` (e.g. "tern::add"); `name` must have static storage.
/// The registration rule shared with backends and backend compilers: registering a name again
/// replaces the earlier function in place (the last registration wins). InvalidArgument for a
/// null name or function; MemoryAllocationFailed when full.
/// Not thread-safe: register at startup.
Error register_kernel(const char* name, KernelFn fn);

/// The kernel registered under `name`, or null.
KernelFn find_kernel(const char* name);

/// Declares that the kernel registered under `name` computes on its inputs' actual sizes, so
/// it may take bounded-dynamic tensors (docs/dynamic-shapes.md). Registering the name again
/// clears the mark (the new function must declare it again). NotFound when no kernel has the
/// name. Not thread-safe: call at startup, after register_kernel.
Error mark_kernel_dynamic_shapes(const char* name);

/// Whether the kernel registered under `name` was marked by mark_kernel_dynamic_shapes.
bool kernel_supports_dynamic_shapes(const char* name);

size_t num_registered_kernels();
/// Name of the i-th registered kernel (i < num_registered_kernels()).
const char* registered_kernel_name(size_t i);

}  // namespace tern
