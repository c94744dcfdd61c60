// Method: set inputs, execute (a loop over the steps Program::load_method resolved, which never
// allocates), read outputs, reset state. Loading is program_load_method.cpp.
#include "runtime/executor/method.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/core/log.h"
#include "runtime/executor/method_dynamic.h"
#include "runtime/executor/method_load_context.h"

namespace tern {

using internal::init_state;
using internal::method_name_of;
using internal::or_empty;

namespace {

/// Where a delegate step's parts go: the observer and the step index.
struct PartSink {
  ExecutionObserver* observer;
  size_t step;
};

void forward_delegate_part(void* sink, const char* label, uint64_t begin_ns, uint64_t end_ns) {
  const PartSink* s = static_cast<const PartSink*>(sink);
  s->observer->on_delegate_part(s->step, label, begin_ns, end_ns);
}

}  // namespace

// ---- Method ---------------------------------------------------------------------------------

Method::Method(Method&& other) noexcept
    : program_(other.program_),
      method_(other.method_),
      memory_(other.memory_),
      values_(other.values_),
      num_values_(other.num_values_),
      input_indices_(other.input_indices_),
      output_indices_(other.output_indices_),
      num_inputs_(other.num_inputs_),
      num_outputs_(other.num_outputs_),
      steps_(other.steps_),
      num_steps_(other.num_steps_),
      delegates_(other.delegates_),
      num_delegates_(other.num_delegates_),
      delegate_paths_(other.delegate_paths_),
      num_delegate_calls_(other.num_delegate_calls_),
      executed_(other.executed_),
      observer_(other.observer_),
      dynamic_(other.dynamic_) {
  // The handles now belong to this Method only; the moved-from one refuses to run.
  other.method_ = nullptr;
  other.values_ = nullptr;
  other.num_values_ = 0;
  other.delegates_ = nullptr;
  other.num_delegates_ = 0;
  other.steps_ = nullptr;
  other.num_steps_ = 0;
  other.num_inputs_ = 0;
  other.num_outputs_ = 0;
  other.num_delegate_calls_ = 0;
  other.executed_ = false;
  other.dynamic_ = nullptr;
}

Method::~Method() {
  for (size_t i = 0; i < num_delegates_; ++i) {
    internal::MethodDelegateSlot& slot = delegates_[i];
    if (slot.initialized && slot.backend != nullptr) {
      slot.backend->destroy(slot.handle);
      slot.initialized = false;
    }
  }
}

Error Method::set_input(size_t index, const TensorView& input) {
  const char* mname = method_name_of(method_);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_inputs_, InvalidArgument, mname,
                                    ": input %zu out of range: the method has %zu inputs", index,
                                    num_inputs_);
  const uint32_t v = input_indices_[index];
  EValue& value = values_[v];
  TERN_CHECK_METHOD_OR_RETURN_ERROR(value.is_tensor(), InvalidArgument, mname,
                                    ": input %zu is a %s, not a tensor; use "
                                    "set_input(index, EValue)",
                                    index, to_string(value.tag));
  TensorView& t = *value.payload.tensor;
  const char* name = or_empty(t.name);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      input.rank <= kMaxRank && (input.sizes != nullptr || input.rank == 0), InvalidArgument, mname,
      ": input %zu ('%s'): rank %u with %s sizes is not a valid "
      "tensor",
      index, name, input.rank, input.sizes ? "non-null" : "null");
  const internal::DynamicTensorSlot* dynamic =
      dynamic_ != nullptr ? dynamic_->input_slot(index) : nullptr;
  if (dynamic != nullptr) {
    // The view takes the new sizes before the checks below: until they all pass, the input
    // counts as not set, so execute() never runs on new sizes with old bytes.
    input_indices_[num_inputs_ + index] = 0;
    TERN_RETURN_IF_ERROR(internal::set_dynamic_input(*dynamic_, mname, index, *dynamic, input));
  }
  bool same_shape = input.dtype == t.dtype && input.rank == t.rank;
  for (uint32_t d = 0; same_shape && d < t.rank; ++d) {
    same_shape = input.sizes[d] == t.sizes[d];
  }
  if (!same_shape) {
    char expected[160];
    char got[160];
    format_shape(t.shape(), expected, sizeof(expected));
    format_shape(input.shape(), got, sizeof(got));
    TERN_RETURN_METHOD_ERROR(InvalidArgument, mname,
                             ": input %zu ('%s'): expected shape %s (%s), got %s (%s)", index, name,
                             expected, to_string(t.dtype), got, to_string(input.dtype));
  }
  TERN_CHECK_METHOD_OR_RETURN_ERROR(input.is_contiguous() || !t.is_contiguous(), InvalidArgument,
                                    mname,
                                    ": input %zu ('%s'): expected a contiguous tensor, got a "
                                    "non-contiguous dim order",
                                    index, name);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(input.nbytes == t.nbytes, InvalidArgument, mname,
                                    ": input %zu ('%s'): expected %llu bytes, got nbytes = "
                                    "%llu",
                                    index, name, static_cast<unsigned long long>(t.nbytes),
                                    static_cast<unsigned long long>(input.nbytes));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(input.data != nullptr || t.nbytes == 0, InvalidArgument, mname,
                                    ": input %zu ('%s'): data is null", index, name);
  const fb::Tensor* ft = method_->values()->Get(v)->value_as_Tensor();
  if (ft->storage() == fb::StorageKind::Caller) {
    t.data = input.data;
  } else if (t.nbytes > 0 && t.data != input.data) {
    std::memmove(t.data, input.data, t.nbytes);
  }
  input_indices_[num_inputs_ + index] = 1;
  return Error::Ok;
}

Error Method::set_input(size_t index, const EValue& input) {
  const char* mname = method_name_of(method_);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_inputs_, InvalidArgument, mname,
                                    ": input %zu out of range: the method has %zu inputs", index,
                                    num_inputs_);
  EValue& value = values_[input_indices_[index]];
  if (value.is_tensor()) {
    TERN_CHECK_METHOD_OR_RETURN_ERROR(input.is_tensor() && input.payload.tensor != nullptr,
                                      InvalidArgument, mname,
                                      ": input %zu ('%s') is a tensor, got a %s", index,
                                      or_empty(value.payload.tensor->name), to_string(input.tag));
    return set_input(index, *input.payload.tensor);
  }
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      (value.is_int() || value.is_double() || value.is_bool()) && input.tag == value.tag,
      InvalidArgument, mname, ": input %zu: expected a %s, got a %s", index, to_string(value.tag),
      to_string(input.tag));
  value.payload = input.payload;
  input_indices_[num_inputs_ + index] = 1;
  return Error::Ok;
}

Error Method::execute() {
  executed_ = false;
  TERN_CHECK_OR_RETURN_ERROR(method_ != nullptr, InvalidState,
                             "execute: the Method was moved from or never loaded");
  for (size_t i = 0; i < num_inputs_; ++i) {
    if (input_indices_[num_inputs_ + i] == 0) {
      const EValue& v = values_[input_indices_[i]];
      TERN_RETURN_METHOD_ERROR(InvalidState, method_name_of(method_),
                               ": input %zu ('%s') has not been set; call set_input() "
                               "before execute()",
                               i, v.is_tensor() ? or_empty(v.payload.tensor->name) : "");
    }
  }
  if (dynamic_ != nullptr) {
    TERN_RETURN_IF_ERROR(internal::resolve_dynamic_shapes(*dynamic_, method_name_of(method_)));
  }
  MemoryAllocator* temp = memory_.temp_allocator;
  for (size_t i = 0; i < num_steps_; ++i) {
    const internal::MethodStep& step = steps_[i];
    clear_error_message();
    if (observer_ != nullptr) observer_->on_step_begin(i, step.op_name, step.debug_name);
    Error err;
    if (step.fn != nullptr) {
      KernelContext context;
      context.temp_allocator = temp;
      context.op_name = step.op_name;
      context.debug_name = step.debug_name;
      err = step.fn(context, Span<EValue*>(step.args, step.num_args));
    } else {
      BackendExecuteContext context;
      context.temp_allocator = temp;
      PartSink sink{observer_, i};
      if (observer_ != nullptr) {
        context.report_part = &forward_delegate_part;
        context.part_sink = &sink;
      }
      err = step.backend->execute(context, step.handle, Span<EValue*>(step.args, step.num_args));
    }
    if (temp != nullptr) temp->reset();
    if (observer_ != nullptr) observer_->on_step_end(i, step.op_name, step.debug_name);
    if (err != Error::Ok) {
      if (step.fn == nullptr) {
        return chain_error_message(err,
                                   "method '%s': step %zu (instruction %u, delegate %u, backend "
                                   "'%s', '%s') failed with %s",
                                   method_name_of(method_), i, step.instruction, step.delegate,
                                   or_empty(step.op_name), or_empty(step.debug_name),
                                   to_string(err));
      }
      if (step.fallback >= 0) {
        return chain_error_message(err,
                                   "method '%s': step %zu (fallback instruction %d of delegate "
                                   "call at instruction %u, op '%s', '%s') failed with %s",
                                   method_name_of(method_), i, step.fallback, step.instruction,
                                   or_empty(step.op_name), or_empty(step.debug_name),
                                   to_string(err));
      }
      return chain_error_message(err,
                                 "method '%s': step %zu (instruction %u, op '%s', '%s') failed "
                                 "with %s",
                                 method_name_of(method_), i, step.instruction,
                                 or_empty(step.op_name), or_empty(step.debug_name),
                                 to_string(err));
    }
  }
  executed_ = true;
  return Error::Ok;
}

Result<const EValue*> Method::output_value(size_t index) const {
  const char* mname = method_name_of(method_);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(executed_, InvalidState, mname,
                                    ": output %zu read before a successful execute()", index);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_outputs_, InvalidArgument, mname,
                                    ": output %zu out of range: the method has %zu outputs", index,
                                    num_outputs_);
  return static_cast<const EValue*>(&values_[output_indices_[index]]);
}

Result<const TensorView*> Method::output(size_t index) const {
  TERN_ASSIGN_OR_RETURN(const EValue* value, output_value(index));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(value->is_tensor(), InvalidArgument, method_name_of(method_),
                                    ": output %zu is a %s, not a tensor; use output_value()", index,
                                    to_string(value->tag));
  return static_cast<const TensorView*>(value->payload.tensor);
}

Error Method::reset_state() {
  TERN_CHECK_OR_RETURN_ERROR(method_ != nullptr, InvalidState,
                             "reset_state: the Method was moved from");
  return init_state(program_, method_, values_, num_values_);
}

Result<DelegatePath> Method::delegate_path(size_t index) const {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_delegate_calls_, InvalidArgument,
                                    method_name_of(method_),
                                    ": delegate call %zu out of range: the method has %zu "
                                    "delegate calls",
                                    index, num_delegate_calls_);
  return delegate_paths_[index];
}

Result<DelegateMemory> Method::delegate_memory(size_t index) const {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(index < num_delegates_, InvalidArgument,
                                    method_name_of(method_),
                                    ": delegate %zu out of range: the method has %zu delegates",
                                    index, num_delegates_);
  const internal::MethodDelegateSlot& slot = delegates_[index];
  DelegateMemory m;
  m.backend = slot.backend_name;
  m.on_backend = slot.initialized && !slot.use_fallback && slot.backend != nullptr;
  if (m.on_backend) m.device_bytes = slot.backend->device_memory_bytes(slot.handle);
  return m;
}

}  // namespace tern
