// The C API's methods: load (in tern's or the caller's memory), inputs, execute, outputs,
// state, delegate paths. Every call checks its arguments and records failures in the handle.
#include <cinttypes>
#include <cstring>
#include <new>
#include <utility>

#include "c_handles.h"
#include "c_memory.h"
#include "runtime/core/evalue.h"

namespace tern {
namespace c_api {
namespace {

const char* method_name(const tern_method* m) { return m->method->meta().name(); }

/// The value behind input `index`, after checking the index (messages name the method).
tern_status check_input_index(const tern_method* m, size_t index) {
  TERN_C_CHECK(index < m->method->num_inputs(), m, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': input %zu out of range: the method has %zu inputs", method_name(m),
               index, m->method->num_inputs());
  return TERN_STATUS_OK;
}

/// Checks that input `index` exists and is of kind `expected`.
tern_status check_input_kind(const tern_method* m, size_t index, EValue::Tag expected) {
  const tern_status s = check_input_index(m, index);
  if (s != TERN_STATUS_OK) return s;
  Result<EValue::Tag> tag = m->method->meta().input_tag(index);
  if (!tag.ok()) return from_runtime(m, tag.error());
  TERN_C_CHECK(tag.get() == expected, m, TERN_STATUS_TYPE_MISMATCH,
               "method '%s': input %zu is a %s, not a %s", method_name(m), index,
               to_string(tag.get()), to_string(expected));
  return TERN_STATUS_OK;
}

/// Output `index` as a value after a successful execute, its kind checked against `expected`.
tern_status output_value(const tern_method* m, size_t index, EValue::Tag expected,
                         const EValue** out) {
  TERN_C_CHECK(index < m->method->num_outputs(), m, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': output %zu out of range: the method has %zu outputs", method_name(m),
               index, m->method->num_outputs());
  Result<const EValue*> value = m->method->output_value(index);
  if (!value.ok()) return from_runtime(m, value.error());
  TERN_C_CHECK(value.get()->tag == expected, m, TERN_STATUS_TYPE_MISMATCH,
               "method '%s': output %zu is a %s, not a %s", method_name(m), index,
               to_string(value.get()->tag), to_string(expected));
  *out = value.get();
  return TERN_STATUS_OK;
}

tern_status set_scalar(tern_method* m, size_t index, const EValue& value) {
  const tern_status s = check_input_kind(m, index, value.tag);
  if (s != TERN_STATUS_OK) return s;
  return from_runtime(m, m->method->set_input(index, value));
}

}  // namespace
}  // namespace c_api
}  // namespace tern

using namespace tern;         // NOLINT: the C functions below are thin wrappers
using namespace tern::c_api;  // NOLINT

extern "C" {

tern_status tern_method_load(tern_program* program, const char* method,
                             const tern_method_memory* memory, tern_method** out) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "tern_method_load: out is NULL");
  std::unique_ptr<tern_method> m(new (std::nothrow) tern_method());
  TERN_C_CHECK(m != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "method '%s': cannot allocate the method handle", method);
  const tern_status bound = memory != nullptr ? bind_caller_memory(meta, method, *memory, m.get())
                                              : allocate_memory(meta, method, m.get());
  if (bound != TERN_STATUS_OK) return bound;
  m->manager.shared_state = program->shared_state.span();  // the program's, shared by its methods
  MethodLoadOptions options;
  options.disabled_backends =
      Span<const char* const>(program->disabled.data(), program->disabled.size());
  options.num_threads = program->num_threads;
  options.backend_options = program->backend_options.span();
  Result<Method> loaded = program->program->load_method(method, &m->manager, options);
  if (!loaded.ok()) return to_status(loaded.error());
  m->method.reset(new (std::nothrow) Method(std::move(loaded.get())));
  TERN_C_CHECK(m->method != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "method '%s': cannot allocate the method", method);
  program->references.fetch_add(1, std::memory_order_relaxed);
  m->program = program;
  *out = m.release();
  return TERN_STATUS_OK;
}

void tern_method_free(tern_method* method) {
  if (method == nullptr) return;
  tern_program* program = method->program;
  delete method;  // the Method (and its delegates) before the program it points into
  release_program(program);
}

tern_status tern_method_set_input(tern_method* method, size_t index, const void* data,
                                  size_t nbytes) {
  TERN_C_CHECK_METHOD(method, "tern_method_set_input");
  const tern_status s = check_input_kind(method, index, EValue::Tag::Tensor);
  if (s != TERN_STATUS_OK) return s;
  Result<TensorInfo> info = method->method->meta().input_tensor_info(index);
  if (!info.ok()) return from_runtime(method, info.error());
  TERN_C_CHECK(nbytes == info->nbytes, method, TERN_STATUS_SIZE_MISMATCH,
               "method '%s': input %zu ('%s'): expected %" PRIu64 " bytes (%s, %zu dims), got %zu",
               method_name(method), index, info->name ? info->name : "", info->nbytes,
               to_string(info->dtype), info->sizes.size(), nbytes);
  TERN_C_CHECK(data != nullptr || nbytes == 0, method, TERN_STATUS_NULL_ARGUMENT,
               "method '%s': input %zu: data is NULL", method_name(method), index);
  TensorView view;
  view.dtype = info->dtype;
  view.rank = static_cast<uint32_t>(info->sizes.size());
  view.sizes = info->sizes.data();
  view.data = const_cast<void*>(data);
  view.nbytes = nbytes;
  return from_runtime(method, method->method->set_input(index, view));
}

tern_status tern_method_set_input_int(tern_method* method, size_t index, int64_t value) {
  TERN_C_CHECK_METHOD(method, "tern_method_set_input_int");
  return set_scalar(method, index, EValue::from_int(value));
}

tern_status tern_method_set_input_double(tern_method* method, size_t index, double value) {
  TERN_C_CHECK_METHOD(method, "tern_method_set_input_double");
  return set_scalar(method, index, EValue::from_double(value));
}

tern_status tern_method_set_input_bool(tern_method* method, size_t index, int value) {
  TERN_C_CHECK_METHOD(method, "tern_method_set_input_bool");
  return set_scalar(method, index, EValue::from_bool(value != 0));
}

tern_status tern_method_execute(tern_method* method) {
  TERN_C_CHECK_METHOD(method, "tern_method_execute");
  return from_runtime(method, method->method->execute());
}

tern_status tern_method_output(const tern_method* method, size_t index, tern_tensor_view* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_output");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_output: out is NULL");
  const EValue* value = nullptr;
  const tern_status s = output_value(method, index, EValue::Tag::Tensor, &value);
  if (s != TERN_STATUS_OK) return s;
  const TensorView& t = *value->payload.tensor;
  tern_tensor_view view;
  view.dtype = static_cast<tern_dtype>(t.dtype);
  view.rank = t.rank;
  view.sizes = t.sizes;
  view.dim_order = t.is_contiguous() ? nullptr : t.dim_order;
  view.data = t.data;
  view.nbytes = t.nbytes;
  *out = view;
  return TERN_STATUS_OK;
}

tern_status tern_method_copy_output(const tern_method* method, size_t index, void* dst,
                                    size_t size) {
  TERN_C_CHECK_METHOD(method, "tern_method_copy_output");
  const EValue* value = nullptr;
  const tern_status s = output_value(method, index, EValue::Tag::Tensor, &value);
  if (s != TERN_STATUS_OK) return s;
  const TensorView& t = *value->payload.tensor;
  TERN_C_CHECK(dst != nullptr || t.nbytes == 0, method, TERN_STATUS_NULL_ARGUMENT,
               "method '%s': output %zu: dst is NULL", method_name(method), index);
  TERN_C_CHECK(
      size >= t.nbytes, method, TERN_STATUS_SIZE_MISMATCH,
      "method '%s': output %zu ('%s'): the buffer has %zu bytes, expected at least %" PRIu64,
      method_name(method), index, t.name ? t.name : "", size, t.nbytes);
  if (t.nbytes > 0) std::memcpy(dst, t.data, static_cast<size_t>(t.nbytes));
  return TERN_STATUS_OK;
}

tern_status tern_method_output_int(const tern_method* method, size_t index, int64_t* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_output_int");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_output_int: out is NULL");
  const EValue* value = nullptr;
  const tern_status s = output_value(method, index, EValue::Tag::Int, &value);
  if (s == TERN_STATUS_OK) *out = value->payload.i;
  return s;
}

tern_status tern_method_output_double(const tern_method* method, size_t index, double* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_output_double");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_output_double: out is NULL");
  const EValue* value = nullptr;
  const tern_status s = output_value(method, index, EValue::Tag::Double, &value);
  if (s == TERN_STATUS_OK) *out = value->payload.d;
  return s;
}

tern_status tern_method_output_bool(const tern_method* method, size_t index, int* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_output_bool");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_output_bool: out is NULL");
  const EValue* value = nullptr;
  const tern_status s = output_value(method, index, EValue::Tag::Bool, &value);
  if (s == TERN_STATUS_OK) *out = value->payload.b ? 1 : 0;
  return s;
}

tern_status tern_method_reset_state(tern_method* method) {
  TERN_C_CHECK_METHOD(method, "tern_method_reset_state");
  return from_runtime(method, method->method->reset_state());
}

tern_status tern_method_num_delegate_calls(const tern_method* method, size_t* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_num_delegate_calls");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_num_delegate_calls: out is NULL");
  *out = method->method->num_delegate_calls();
  return TERN_STATUS_OK;
}

tern_status tern_method_delegate_uses_backend(const tern_method* method, size_t index, int* out) {
  TERN_C_CHECK_METHOD(method, "tern_method_delegate_uses_backend");
  TERN_C_CHECK(out != nullptr, method, TERN_STATUS_NULL_ARGUMENT,
               "tern_method_delegate_uses_backend: out is NULL");
  TERN_C_CHECK(index < method->method->num_delegate_calls(), method, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': delegate call %zu out of range: the method has %zu delegate calls",
               method_name(method), index, method->method->num_delegate_calls());
  Result<DelegatePath> path = method->method->delegate_path(index);
  if (!path.ok()) return from_runtime(method, path.error());
  *out = path.get() == DelegatePath::Backend ? 1 : 0;
  return TERN_STATUS_OK;
}

}  // extern "C"
