// The kernel signature and the context a kernel runs in.
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
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

}  // namespace tern
