// Program::load_method: lays out the method's arrays in the caller's method allocator
// (internal::MethodLayout, method_layout.h, so MethodMeta::method_allocator_bytes() is an exact
// upper bound), then loads values, inputs/outputs and steps with the helpers of
// method_load_context.h, and prepares every delegate.
#include <cstring>
#include <new>

#include "runtime/core/log.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_dynamic.h"
#include "runtime/executor/method_load_context.h"
#include "runtime/executor/program.h"

namespace tern {

using namespace internal;  // NOLINT: the load helpers

// ---- Program::load_method -------------------------------------------------------------------

Result<Method> Program::load_method(const char* name, MemoryManager* memory) const {
  return load_method(name, memory, MethodLoadOptions());
}

Result<Method> Program::load_method(const char* name, MemoryManager* memory,
                                    const MethodLoadOptions& options) const {
  TERN_CHECK_OR_RETURN_ERROR(name != nullptr, InvalidArgument, "load_method: method name is null");
  TERN_CHECK_OR_RETURN_ERROR(memory != nullptr && memory->method_allocator != nullptr,
                             InvalidArgument,
                             "load_method('%s'): the MemoryManager has no method_allocator", name);
  TERN_ASSIGN_OR_RETURN(MethodMeta meta, method_meta(name));
  const fb::Method* fm = meta.flatbuffer();
  TERN_CHECK_OR_RETURN_ERROR(fm != nullptr, Internal, "load_method('%s'): null method", name);

  LoadContext c;
  c.program = this;
  c.method = fm;
  c.name = method_name_of(fm);
  c.memory = memory;
  TERN_RETURN_IF_ERROR(check_arenas(c));

  // Every array up front, so a small allocator fails before any backend is initialized.
  const internal::MethodLayout layout = internal::compute_method_layout(fm);
  MemoryAllocator* allocator = memory->method_allocator;
  const size_t free_before = allocator->size() - allocator->used();
  Pool<EValue> values;
  Pool<uint32_t> io_inputs;
  Pool<uint32_t> io_outputs;
  Pool<internal::MethodStep> steps;
  Pool<internal::MethodDelegateSlot> slots;
  Pool<DelegatePath> paths;
  const bool allocated = allocate_pool(allocator, layout.num_values, &values) &&
                         allocate_pool(allocator, layout.num_tensors, &c.tensors) &&
                         allocate_pool(allocator, layout.num_int64, &c.ints) &&
                         allocate_pool(allocator, layout.num_double, &c.doubles) &&
                         allocate_pool(allocator, layout.num_quant, &c.quants) &&
                         allocate_pool(allocator, layout.num_tensor_refs, &c.tensor_refs) &&
                         allocate_pool(allocator, 2 * layout.num_inputs, &io_inputs) &&
                         allocate_pool(allocator, layout.num_outputs, &io_outputs) &&
                         allocate_pool(allocator, layout.num_steps, &steps) &&
                         allocate_pool(allocator, layout.num_step_args, &c.step_args) &&
                         allocate_pool(allocator, layout.num_delegates, &slots) &&
                         allocate_pool(allocator, layout.num_specs, &c.specs) &&
                         allocate_pool(allocator, layout.num_delegate_calls, &paths);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      allocated, MemoryAllocationFailed, c.name,
      ": the method allocator is too small: load needs up to %llu bytes "
      "(MethodMeta::method_allocator_bytes()), the allocator had %zu bytes free",
      static_cast<unsigned long long>(meta.method_allocator_bytes()), free_before);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(layout.num_values < (1ull << 31), InvalidProgram, c.name,
                                    ": %llu values exceed the limit of 2^31",
                                    static_cast<unsigned long long>(layout.num_values));
  c.values = values.data;
  c.num_values = static_cast<uint32_t>(layout.num_values);

  Method m;
  m.program_ = this;
  m.method_ = fm;
  m.memory_ = *memory;
  m.values_ = values.data;
  m.num_values_ = c.num_values;
  // The slots go into the Method first, so its destructor destroys any handle made below.
  for (uint64_t i = 0; i < layout.num_delegates; ++i) new (&slots.data[i]) internal::MethodDelegateSlot();
  m.delegates_ = slots.data;
  m.num_delegates_ = layout.num_delegates;

  TERN_RETURN_IF_ERROR(load_values(c));
  TERN_RETURN_IF_ERROR(link_values(c));

  m.num_inputs_ = layout.num_inputs;
  m.num_outputs_ = layout.num_outputs;
  m.input_indices_ = io_inputs.data;
  m.output_indices_ = io_outputs.data;
  TERN_RETURN_IF_ERROR(load_io(c, fm->inputs(), "input", m.input_indices_));
  TERN_RETURN_IF_ERROR(load_io(c, fm->outputs(), "output", m.output_indices_));
  for (size_t i = 0; i < m.num_inputs_; ++i) {
    // "set" flags: scalars carry a value from the program; tensors must be set by the caller.
    m.input_indices_[m.num_inputs_ + i] = c.values[m.input_indices_[i]].is_tensor() ? 0 : 1;
  }
  TERN_RETURN_IF_ERROR(check_caller_tensors(c));
  TERN_RETURN_IF_ERROR(load_dynamic_shapes(c, m.input_indices_, m.num_inputs_, &m.dynamic_));

  // Steps: kernel calls, and delegate calls either as one backend step or their fallback.
  const auto* instructions = fm->instructions();
  const uint32_t num_instructions = instructions ? instructions->size() : 0;
  const auto* fallbacks = fm->fallback_instructions();
  const uint32_t num_fallbacks = fallbacks ? fallbacks->size() : 0;
  const uint32_t num_delegates = fm->delegates() ? fm->delegates()->size() : 0;
  m.steps_ = steps.data;
  m.delegate_paths_ = paths.data;
  size_t call_index = 0;
  for (uint32_t i = 0; i < num_instructions; ++i) {
    const fb::Instruction* instr = instructions->Get(i);
    const char* debug_name = instr ? fb_str(instr->debug_name()) : nullptr;
    const fb::DelegateCall* call = instr ? instr->kind_as_DelegateCall() : nullptr;
    if (call == nullptr) {
      internal::MethodStep* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) internal::MethodStep();
      ++m.num_steps_;
      TERN_RETURN_IF_ERROR(fill_kernel_step(c, instr, i, -1, *step));
      continue;
    }
    const uint32_t d = call->delegate();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(d < num_delegates, InvalidProgram, c.name,
                                      ": instruction %u ('%s'): delegate %u out of range (%u "
                                      "delegates)",
                                      i, or_empty(debug_name), d, num_delegates);
    const uint32_t begin = call->fallback_begin();
    const uint32_t end = call->fallback_end();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(begin <= end && end <= num_fallbacks, InvalidProgram, c.name,
                                      ": instruction %u ('%s'): fallback range [%u, %u) is "
                                      "not inside the %u fallback instructions",
                                      i, or_empty(debug_name), begin, end, num_fallbacks);
    internal::MethodDelegateSlot& slot = slots.data[d];
    if (!slot.resolved) {
      TERN_RETURN_IF_ERROR(resolve_delegate(c, d, options, end - begin, slot));
    }
    if (!slot.use_fallback) {
      internal::MethodStep* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) internal::MethodStep();
      ++m.num_steps_;
      step->backend = slot.backend;
      step->handle = slot.handle;
      step->op_name = slot.backend_name;
      step->debug_name = debug_name;
      step->instruction = i;
      step->delegate = d;
      TERN_RETURN_IF_ERROR(resolve_args(c, call->args(), "instruction", i, *step));
      paths.data[call_index++] = DelegatePath::Backend;
      continue;
    }
    TERN_CHECK_METHOD_OR_RETURN_ERROR(begin < end, BackendUnavailable, c.name,
                                      ": instruction %u ('%s'): delegate %u (backend '%s') "
                                      "cannot run here and has no portable fallback",
                                      i, or_empty(debug_name), d, slot.backend_name);
    for (uint32_t f = begin; f < end; ++f) {
      internal::MethodStep* step = steps.take(1);
      if (step == nullptr) return pool_exhausted(c, "steps");
      new (step) internal::MethodStep();
      ++m.num_steps_;
      step->delegate = d;
      TERN_RETURN_IF_ERROR(
          fill_kernel_step(c, fallbacks->Get(f), i, static_cast<int32_t>(f), *step));
    }
    paths.data[call_index++] = DelegatePath::Fallback;
  }
  m.num_delegate_calls_ = call_index;
  if (m.dynamic_ != nullptr) {
    for (size_t s = 0; s < m.num_steps_; ++s) {
      TERN_RETURN_IF_ERROR(check_dynamic_step(*m.dynamic_, c.name, m.steps_[s]));
    }
  }

  TERN_RETURN_IF_ERROR(init_state(this, fm, c.values, c.num_values));
  // Let each delegate bind to its arguments' final addresses (not during execute()).
  for (size_t s = 0; s < m.num_steps_; ++s) {
    const internal::MethodStep& step = m.steps_[s];
    if (step.backend == nullptr) continue;
    const Error err = step.backend->prepare(step.handle, Span<EValue*>(step.args, step.num_args));
    if (err != Error::Ok) {
      return chain_error_message(err,
                                 "method '%s': instruction %u: delegate %u (backend '%s') could "
                                 "not prepare its arguments",
                                 c.name, step.instruction, step.delegate, or_empty(step.op_name));
    }
  }
  return Result<Method>(std::move(m));
}


}  // namespace tern
