// Method: one loaded method of a Program, bound to the caller's memory, ready to execute.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method_load_options.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/profiler.h"

namespace tern {

class Program;
namespace internal {
struct MethodStep;
struct MethodDelegateSlot;
struct DynamicShapes;
}  // namespace internal

/// A loaded method. Not thread-safe: one thread at a time per Method; several Methods of one
/// Program may run concurrently. Move-only; destroys its delegate handles on destruction.
/// What Method::delegate_memory() reports about one delegate.
struct DelegateMemory {
  const char* backend = nullptr;  ///< the backend's name (static storage)
  bool on_backend = false;        ///< init succeeded: the backend runs it
  uint64_t device_bytes = 0;      ///< device memory it holds
};

class Method {
 public:
  Method(Method&& other) noexcept;
  Method& operator=(Method&&) = delete;
  Method(const Method&) = delete;
  ~Method();

  MethodMeta meta() const { return MethodMeta(method_); }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }

  /// Sets input `index` from `input`: checks dtype, rank, each size and byte count, and names
  /// the input, expected and found on mismatch (InvalidArgument). A dim the program declares
  /// dynamic (docs/dynamic-shapes.md) accepts any size within its symbol's [min, max]; beyond
  /// the bound is InvalidArgument naming the method, input, dim, symbol, bound and size. An input
  /// planned in an arena is copied in; an input with Caller storage is bound to input.data, which
  /// the caller keeps alive and unchanged until execute() returns. Null data is InvalidArgument.
  Error set_input(size_t index, const TensorView& input);
  /// Sets a scalar input (the method input is an int/double/bool); type checked.
  Error set_input(size_t index, const EValue& input);

  /// Runs every instruction in order. Never allocates on the heap, never does I/O.
  /// A kernel or delegate error is returned with a message naming the instruction.
  Error execute();

  /// Output `index` after a successful execute(); InvalidState before, InvalidArgument when
  /// out of range or not a tensor. The view points into the planned memory.
  Result<const TensorView*> output(size_t index) const;
  /// Output `index` as a value (for scalar outputs).
  Result<const EValue*> output_value(size_t index) const;

  /// Re-initializes the method's own state tensors (zero or their initial segment); shared
  /// state (format 1.2) is the program's: Program::init_shared_state() resets it.
  Error reset_state();

  size_t num_delegate_calls() const { return num_delegate_calls_; }
  /// How delegate call i runs (Backend or Fallback); InvalidArgument when out of range.
  Result<DelegatePath> delegate_path(size_t index) const;
  size_t num_steps() const { return num_steps_; }
  /// Delegates of the method (a delegate may be called by several delegate calls).
  size_t num_delegates() const { return num_delegates_; }
  /// Delegate `index`: its backend's name, whether it runs on the backend (false: its portable
  /// fallback) and the device memory it holds (BackendInterface::device_memory_bytes; 0 on the
  /// fallback). InvalidArgument when out of range.
  Result<DelegateMemory> delegate_memory(size_t index) const;

  /// Installs `observer` (null removes it); execute() then calls it around every step. The
  /// caller owns the observer and keeps it alive while it is installed. Not thread-safe
  /// with a concurrent execute().
  void set_observer(ExecutionObserver* observer) { observer_ = observer; }

 private:
  friend class Program;
  Method() = default;

  const Program* program_ = nullptr;
  const fb::Method* method_ = nullptr;
  MemoryManager memory_{};
  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  uint32_t* input_indices_ = nullptr;
  uint32_t* output_indices_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  internal::MethodStep* steps_ = nullptr;  ///< resolved kernel and delegate calls
  size_t num_steps_ = 0;
  internal::MethodDelegateSlot* delegates_ = nullptr;  ///< initialized delegates
  size_t num_delegates_ = 0;
  DelegatePath* delegate_paths_ = nullptr;
  size_t num_delegate_calls_ = 0;
  bool executed_ = false;
  ExecutionObserver* observer_ = nullptr;  ///< not owned; may be null
  internal::DynamicShapes* dynamic_ = nullptr;  ///< null when the method has no dynamic dims
};

}  // namespace tern
