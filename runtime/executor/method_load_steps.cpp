// Program::load_method's step helpers (method_load_context.h): kernel calls and delegates
// (backend init, or the portable fallback with one log line saying why).
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/executor/method_load_context.h"
#include "runtime/kernel/kernel_registry.h"

namespace tern {
namespace internal {

// ---- instructions -------------------------------------------------------------------------

/// Resolves value indices `args` into a slice of the step-arg pool.
Error resolve_args(LoadContext& c, const flatbuffers::Vector<int32_t>* args, const char* where,
                   uint32_t where_index, MethodStep& step) {
  const uint32_t n = args ? args->size() : 0;
  EValue** out = c.step_args.take(n);
  if (out == nullptr && n > 0) return pool_exhausted(c, "step arguments");
  for (uint32_t k = 0; k < n; ++k) {
    const int32_t v = args->Get(k);
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        v >= 0 && static_cast<uint32_t>(v) < c.num_values, InvalidProgram, c.name,
        ": %s %u ('%s'): argument %u refers to value %d, out of "
        "range (%u values)",
        where, where_index, or_empty(step.debug_name), k, v, c.num_values);
    out[k] = &c.values[v];
  }
  step.args = out;
  step.num_args = n;
  return Error::Ok;
}

/// Fills `step` from a kernel call. `fallback` is the index in fallback_instructions or -1.
Error fill_kernel_step(LoadContext& c, const fb::Instruction* instr, uint32_t instruction,
                       int32_t fallback, MethodStep& step) {
  const char* where = fallback < 0 ? "instruction" : "fallback instruction";
  const uint32_t where_index = fallback < 0 ? instruction : static_cast<uint32_t>(fallback);
  step.instruction = instruction;
  step.fallback = fallback;
  step.debug_name = instr ? fb_str(instr->debug_name()) : nullptr;
  const fb::KernelCall* call = instr ? instr->kind_as_KernelCall() : nullptr;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(call != nullptr, InvalidProgram, c.name,
                                    ": %s %u ('%s') is not a kernel call", where, where_index,
                                    or_empty(step.debug_name));
  const auto* operators = c.method->operators();
  const uint32_t num_ops = operators ? operators->size() : 0;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      call->op() < num_ops && operators->Get(call->op()) != nullptr, InvalidProgram, c.name,
      ": %s %u ('%s'): operator %u out of range (%u operators)", where, where_index,
      or_empty(step.debug_name), call->op(), num_ops);
  step.op_name = operators->Get(call->op())->c_str();
  step.fn = find_kernel(step.op_name);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(step.fn != nullptr, NotFound, c.name,
                                    ": %s %u ('%s'): operator '%s' is not registered (%zu "
                                    "kernels registered; was register_portable_kernels() called?)",
                                    where, where_index, or_empty(step.debug_name), step.op_name,
                                    num_registered_kernels());
  return resolve_args(c, call->args(), where, where_index, step);
}

namespace {

bool is_disabled(const MethodLoadOptions& options, const char* backend) {
  for (const char* disabled : options.disabled_backends) {
    if (disabled != nullptr && std::strcmp(disabled, backend) == 0) return true;
  }
  return false;
}

/// BackendInitContext::release_constant: the program hands the range back to its loader.
void release_program_constant(void* program, const void* data, size_t size) {
  static_cast<const Program*>(program)->release_resident(data, size);
}

}  // namespace

/// Decides how delegate `index` runs: initializes its backend, or marks it for the fallback
/// (logging one line that says why). `fallback_kernels` is for the log line.
Error resolve_delegate(LoadContext& c, uint32_t index, const MethodLoadOptions& options,
                       uint32_t fallback_kernels, MethodDelegateSlot& slot) {
  const fb::Delegate* d = c.method->delegates()->Get(index);
  slot.resolved = true;
  slot.backend_name = d ? fb_str(d->backend()) : nullptr;
  TERN_CHECK_METHOD_OR_RETURN_ERROR(slot.backend_name != nullptr, InvalidProgram, c.name,
                                    ": delegate %u has no backend name", index);
  const char* backend = slot.backend_name;
  const uint32_t segment = d->segment();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(segment < c.program->num_segments(), InvalidProgram, c.name,
                                    ": delegate %u (backend '%s'): blob segment %u out of "
                                    "range (the program has %zu segments)",
                                    index, backend, segment, c.program->num_segments());
  const auto* specs = d->compile_specs();
  const uint32_t num_specs = specs ? specs->size() : 0;
  slot.specs = c.specs.take(num_specs);
  if (slot.specs == nullptr && num_specs > 0) return pool_exhausted(c, "compile specs");
  slot.num_specs = num_specs;
  for (uint32_t k = 0; k < num_specs; ++k) {
    const fb::CompileSpec* spec = specs->Get(k);
    const auto* value = spec->value();
    slot.specs[k].key = or_empty(fb_str(spec->key()));
    slot.specs[k].value =
        value ? Span<const uint8_t>(value->data(), value->size()) : Span<const uint8_t>();
  }

  const char* reason = nullptr;
  const char* detail = nullptr;  // the backend's own words on why it is not available
  const Backend* entry = find_backend(backend);
  if (is_disabled(options, backend)) {
    reason = "disabled by the caller";
  } else if (entry == nullptr) {
    reason = "not registered";
  } else if (!entry->backend->is_available()) {
    reason = "not available";
    detail = entry->backend->unavailable_reason();
  } else {
    auto blob = c.program->segment_buffer(segment);
    if (!blob.ok()) return blob.error();
    BackendInitContext init_context;
    init_context.method_allocator = c.memory->method_allocator;
    init_context.method_name = c.name;
    init_context.num_threads = options.num_threads;
    init_context.options = options.backend_options;
    init_context.release_constant = release_program_constant;
    init_context.release_cookie = const_cast<Program*>(c.program);  // read only
    clear_error_message();
    auto handle = entry->backend->init(init_context, std::move(blob.get()),
                                       Span<const CompileSpecView>(slot.specs, num_specs));
    if (handle.ok()) {
      slot.backend = entry->backend;
      slot.handle = handle.get();
      slot.initialized = true;
      return Error::Ok;
    }
    if (handle.error() != Error::DelegateInvalidCompatibility) {
      return chain_error_message(handle.error(),
                                 "method '%s': delegate %u (backend '%s'): init failed with %s",
                                 c.name, index, backend, to_string(handle.error()));
    }
    // Logging does not touch the last error message: the backend's reason is read in place.
    reason = "cannot take it";
    detail = last_error_message();
  }
  // One line: the reason, and the backend's own words when it has some.
  const bool has_detail = detail != nullptr && detail[0] != '\0';
  TERN_LOG(Info,
           "method '%s': delegate %u (backend '%s') %s%s%s; running its portable fallback (%u "
           "kernels)",
           c.name, index, backend, reason, has_detail ? ": " : "", has_detail ? detail : "",
           fallback_kernels);
  slot.use_fallback = true;
  return Error::Ok;
}

}  // namespace internal
}  // namespace tern
