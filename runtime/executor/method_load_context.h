// Internal to the executor: what Program::load_method's helpers share (the load context, the
// bump pools it fills from the method allocator, the name helpers) and the helpers themselves,
// split by what they load: method_load_values.cpp (arenas, values, quantization, inputs and
// outputs, state) and method_load_steps.cpp (instructions and delegates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method_load_options.h"
#include "runtime/executor/method_step.h"
#include "runtime/executor/method_layout.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {

inline const char* or_empty(const char* s) { return s ? s : ""; }

inline const char* fb_str(const flatbuffers::String* s) { return s ? s->c_str() : nullptr; }

inline const char* method_name_of(const fb::Method* method) {
  return method ? or_empty(fb_str(method->name())) : "";
}

/// Bump-allocates from a pre-sized pool, failing (never overflowing) past its capacity.
template <typename T>
struct Pool {
  T* data = nullptr;
  uint64_t capacity = 0;
  uint64_t used = 0;
  T* take(uint64_t n) {
    if (n > capacity - used) return nullptr;
    T* p = data + used;
    used += n;
    return p;
  }
};

/// Allocates `count` T from `allocator` into `pool`; false when it does not fit.
template <typename T>
bool allocate_pool(MemoryAllocator* allocator, uint64_t count, Pool<T>* pool) {
  pool->capacity = count;
  pool->used = 0;
  if (count == 0) {
    pool->data = nullptr;
    return true;
  }
  if (count > SIZE_MAX / sizeof(T)) return false;
  pool->data = allocator->allocate_array<T>(static_cast<size_t>(count));
  return pool->data != nullptr;
}

/// Everything the load helpers share.
struct LoadContext {
  const Program* program = nullptr;
  const fb::Method* method = nullptr;
  const char* name = "";
  MemoryManager* memory = nullptr;
  EValue* values = nullptr;
  uint32_t num_values = 0;
  Pool<TensorView> tensors;
  Pool<int64_t> ints;
  Pool<double> doubles;
  Pool<QuantView> quants;
  Pool<TensorView*> tensor_refs;
  Pool<EValue*> step_args;
  Pool<CompileSpecView> specs;
};

inline Error pool_exhausted(const LoadContext& c, const char* what) {
  TERN_RETURN_ERROR(Internal, "method '%s': load used more %s than its layout counted (a bug)",
                    c.name, what);
}

inline const char* value_name(const fb::EValue* value) {
  const fb::Tensor* t = value ? value->value_as_Tensor() : nullptr;
  return t ? or_empty(fb_str(t->name())) : "";
}

// ---- method_load_values.cpp ----

/// Checks the method's arenas against the memory manager's.
Error check_arenas(const LoadContext& c);
/// Fills c.values from the method's value table (tensors bound to arenas, constants, the
/// caller; scalars and lists from the pools).
Error load_values(LoadContext& c);
/// Resolves tensor lists into the tensors loaded before them.
Error link_values(LoadContext& c);
/// Copies the value indices of the method's inputs or outputs (`what`) into `out`, checked.
Error load_io(const LoadContext& c, const flatbuffers::Vector<uint32_t>* list, const char* what,
              uint32_t* out);
/// Checks that caller-bound tensors are inputs.
Error check_caller_tensors(const LoadContext& c);
/// Writes every state tensor's initial value (its init segment, or zeros).
Error init_state(const Program* program, const fb::Method* method, const EValue* values,
                 size_t num_values);

// ---- method_load_steps.cpp ----

/// Resolves value indices `args` into a slice of the step-arg pool.
Error resolve_args(LoadContext& c, const flatbuffers::Vector<int32_t>* args, const char* where,
                   uint32_t where_index, MethodStep& step);
/// Fills `step` from a kernel call. `fallback` is the index in fallback_instructions or -1.
Error fill_kernel_step(LoadContext& c, const fb::Instruction* instr, uint32_t instruction,
                       int32_t fallback, MethodStep& step);
/// Decides how delegate `index` runs: initializes its backend, or marks it for the fallback
/// (logging one line that says why). `fallback_kernels` is for the log line.
Error resolve_delegate(LoadContext& c, uint32_t index, const MethodLoadOptions& options,
                       uint32_t fallback_kernels, MethodDelegateSlot& slot);

}  // namespace internal
}  // namespace tern
