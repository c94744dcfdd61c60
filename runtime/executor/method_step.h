// Internal to the executor: the resolved steps and delegate slots a loaded Method keeps in its
// method allocator (method_layout.h counts them; program_load_method.cpp fills them).
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace internal {

/// One resolved step of a loaded method: a kernel call (fn set) or a delegate call (backend
/// set).
struct MethodStep {
  KernelFn fn = nullptr;
  const BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  const char* op_name = nullptr;     ///< operator name, or the backend name for a delegate
  const char* debug_name = nullptr;  ///< the instruction's debug name (may be null)
  EValue** args = nullptr;
  uint32_t num_args = 0;
  uint32_t instruction = 0;  ///< index in Method.instructions
  uint32_t delegate = 0;     ///< index in Method.delegates (delegate steps)
  int32_t fallback = -1;     ///< index in Method.fallback_instructions, or -1
};

/// One delegate of a loaded method. `handle` is owned (destroyed by ~Method) when non-null.
struct MethodDelegateSlot {
  const BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  const char* backend_name = nullptr;
  bool resolved = false;  ///< init attempted (or fallback decided)
  bool use_fallback = false;
  bool initialized = false;  ///< init() succeeded: destroy(handle) is owed
  CompileSpecView* specs = nullptr;
  uint32_t num_specs = 0;
};

}  // namespace internal
}  // namespace tern
