// The C API's programs: load options, loading from a path or a caller's buffer, the
// reference count, and the queries (methods, their inputs and outputs, their memory).
#include <cstring>
#include <new>
#include <utility>

#include "c_handles.h"
#include "c_memory.h"
#include "runtime/backend/backend.h"
#include "runtime/core/checked_math.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"

namespace tern {
namespace c_api {
namespace {

/// The registered backends' names as "a, b" (or "none"), for messages.
std::string registered_backend_names() {
  std::string names;
  for (size_t i = 0; i < num_registered_backends(); ++i) {
    if (!names.empty()) names += ", ";
    names += registered_backend(i).name;
  }
  return names.empty() ? "none" : names;
}

bool in_list(const char* name, const char* const* list, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (std::strcmp(list[i], name) == 0) return true;
  }
  return false;
}

/// Checks `options` and resolves its backend choices into the program's disabled list.
tern_status apply_options(const tern_load_options& options, tern_program* program) {
  TERN_C_CHECK(options.struct_size == sizeof(tern_load_options), nullptr,
               TERN_STATUS_INVALID_ARGUMENT,
               "load options: struct_size is %zu, expected %zu (initialise the options with "
               "tern_load_options_init)",
               options.struct_size, sizeof(tern_load_options));
  const int mode = enum_field(options.mode);
  TERN_C_CHECK(mode == TERN_LOAD_MMAP || mode == TERN_LOAD_FILE, nullptr,
               TERN_STATUS_INVALID_ARGUMENT,
               "load options: mode %d is neither TERN_LOAD_MMAP (0) nor TERN_LOAD_FILE (1)", mode);
  const int verification = enum_field(options.verification);
  TERN_C_CHECK(verification == TERN_VERIFY_FULL || verification == TERN_VERIFY_STRUCTURE, nullptr,
               TERN_STATUS_INVALID_ARGUMENT,
               "load options: verification %d is neither TERN_VERIFY_FULL (0) nor "
               "TERN_VERIFY_STRUCTURE (1)",
               verification);
  TERN_C_CHECK(options.backends != nullptr || options.num_backends == 0, nullptr,
               TERN_STATUS_NULL_ARGUMENT, "load options: backends is NULL but num_backends is %zu",
               options.num_backends);
  TERN_C_CHECK(options.disabled_backends != nullptr || options.num_disabled_backends == 0, nullptr,
               TERN_STATUS_NULL_ARGUMENT,
               "load options: disabled_backends is NULL but num_disabled_backends is %zu",
               options.num_disabled_backends);
  for (size_t i = 0; i < options.num_backends; ++i) {
    const char* name = options.backends[i];
    TERN_C_CHECK(name != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
                 "load options: backends[%zu] is NULL", i);
    TERN_C_CHECK(find_backend(name) != nullptr, nullptr, TERN_STATUS_NOT_FOUND,
                 "load options: backends[%zu] is '%s', which this build does not have "
                 "(backends: %s)",
                 i, name, registered_backend_names().c_str());
  }
  for (size_t i = 0; i < options.num_disabled_backends; ++i) {
    TERN_C_CHECK(options.disabled_backends[i] != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
                 "load options: disabled_backends[%zu] is NULL", i);
    program->disabled_names.emplace_back(options.disabled_backends[i]);
  }
  for (size_t i = 0; i < num_registered_backends(); ++i) {
    const char* name = registered_backend(i).name;
    const bool chosen =
        options.backends == nullptr || in_list(name, options.backends, options.num_backends);
    if (options.portable_only != 0 || !chosen) program->disabled_names.emplace_back(name);
  }
  for (const std::string& name : program->disabled_names) {
    program->disabled.push_back(name.c_str());
  }
  program->num_threads = options.num_threads;
  TERN_C_CHECK(options.backend_options != nullptr || options.num_backend_options == 0, nullptr,
               TERN_STATUS_NULL_ARGUMENT,
               "load options: backend_options is NULL but num_backend_options is %zu",
               options.num_backend_options);
  for (size_t i = 0; i < options.num_backend_options; ++i) {
    const tern_backend_option& o = options.backend_options[i];
    TERN_C_CHECK(o.backend != nullptr && o.key != nullptr && o.value != nullptr, nullptr,
                 TERN_STATUS_NULL_ARGUMENT,
                 "load options: backend_options[%zu] has a NULL backend, key or value", i);
    program->backend_options.add(o.backend, o.key, o.value);
  }
  return TERN_STATUS_OK;
}

/// Common tail of both loads: options, loader (already made), Program::load.
tern_status finish_load(std::unique_ptr<tern_program> program, const tern_load_options& options,
                        tern_program** out) {
  Program::LoadOptions load_options;
  load_options.verification = options.verification == TERN_VERIFY_STRUCTURE
                                  ? Program::Verification::Structure
                                  : Program::Verification::Full;
  Result<Program> loaded = Program::load(program->loader.get(), load_options);
  if (!loaded.ok()) return to_status(loaded.error());
  program->program.reset(new (std::nothrow) Program(std::move(loaded.get())));
  TERN_C_CHECK(program->program != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "cannot allocate the program");
  const Error shared = program->shared_state.allocate(*program->program);
  if (shared != Error::Ok) return to_status(shared);
  *out = program.release();
  return TERN_STATUS_OK;
}

/// The options to use (`given` or the defaults), checked, and a new program holding them.
tern_status start_load(const tern_load_options* given, tern_load_options* options,
                       std::unique_ptr<tern_program>* program) {
  tern_load_options_init(options);
  if (given != nullptr) *options = *given;
  const tern_status registered = ensure_registered();
  if (registered != TERN_STATUS_OK) return registered;
  program->reset(new (std::nothrow) tern_program());
  TERN_C_CHECK(*program != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "cannot allocate the program handle");
  return apply_options(*options, program->get());
}

/// Input or output info of `method` (is_input selects which).
tern_status value_info(const tern_program* program, const char* method, size_t index, bool is_input,
                       tern_value_info* out) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "out is NULL");
  const char* what = is_input ? "input" : "output";
  const size_t count = is_input ? meta.num_inputs() : meta.num_outputs();
  TERN_C_CHECK(index < count, nullptr, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': %s %zu out of range: the method has %zu %ss", method, what, index,
               count, what);
  Result<EValue::Tag> tag = is_input ? meta.input_tag(index) : meta.output_tag(index);
  if (!tag.ok()) return to_status(tag.error());
  tern_value_info info;
  std::memset(&info, 0, sizeof(info));
  info.kind = static_cast<tern_value_kind>(tag.get());
  if (tag.get() == EValue::Tag::Tensor) {
    Result<TensorInfo> tensor =
        is_input ? meta.input_tensor_info(index) : meta.output_tensor_info(index);
    if (!tensor.ok()) return to_status(tensor.error());
    info.dtype = static_cast<tern_dtype>(tensor->dtype);
    info.rank = tensor->sizes.size();
    info.sizes = tensor->sizes.data();
    info.nbytes = tensor->nbytes;
    info.name = tensor->name;
  }
  *out = info;
  return TERN_STATUS_OK;
}

}  // namespace

void release_program(tern_program* program) {
  if (program == nullptr) return;
  if (program->references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete program;
}

}  // namespace c_api
}  // namespace tern

using namespace tern;         // NOLINT: the C functions below are thin wrappers
using namespace tern::c_api;  // NOLINT

static_assert(static_cast<int>(EValue::Tag::Tensor) == TERN_VALUE_TENSOR &&
                  static_cast<int>(EValue::Tag::Bool) == TERN_VALUE_BOOL &&
                  static_cast<int>(EValue::Tag::TensorList) == TERN_VALUE_TENSOR_LIST,
              "tern_value_kind mirrors EValue::Tag");

extern "C" {

void tern_load_options_init(tern_load_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->mode = TERN_LOAD_MMAP;
  options->verification = TERN_VERIFY_FULL;
}

tern_status tern_program_load_file(const char* path, const tern_load_options* options,
                                   tern_program** out) {
  TERN_C_CHECK(path != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_load_file: path is NULL");
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_load_file: out is NULL");
  tern_load_options resolved;
  std::unique_ptr<tern_program> program;
  const tern_status started = start_load(options, &resolved, &program);
  if (started != TERN_STATUS_OK) return started;
  if (resolved.mode == TERN_LOAD_FILE) {
    Result<FileDataLoader> loader = FileDataLoader::from(path);
    if (!loader.ok()) return to_status(loader.error());
    program->loader.reset(new (std::nothrow) FileDataLoader(std::move(loader.get())));
  } else {
    Result<MmapDataLoader> loader = MmapDataLoader::from(path);
    if (!loader.ok()) return to_status(loader.error());
    program->loader.reset(new (std::nothrow) MmapDataLoader(std::move(loader.get())));
  }
  TERN_C_CHECK(program->loader != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "cannot allocate the loader of '%s'", path);
  return finish_load(std::move(program), resolved, out);
}

tern_status tern_program_load_buffer(const void* data, size_t size,
                                     const tern_load_options* options, tern_program** out) {
  TERN_C_CHECK(data != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_load_buffer: data is NULL");
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_load_buffer: out is NULL");
  tern_load_options resolved;
  std::unique_ptr<tern_program> program;
  const tern_status started = start_load(options, &resolved, &program);
  if (started != TERN_STATUS_OK) return started;
  program->loader.reset(new (std::nothrow) BufferDataLoader(data, size));
  TERN_C_CHECK(program->loader != nullptr, nullptr, TERN_STATUS_MEMORY_ALLOCATION_FAILED,
               "cannot allocate the buffer loader");
  return finish_load(std::move(program), resolved, out);
}

void tern_program_free(tern_program* program) { release_program(program); }

tern_status tern_program_shared_state_bytes(const tern_program* program, size_t* out) {
  TERN_C_CHECK(program != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_shared_state_bytes: program is NULL");
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_shared_state_bytes: out is NULL");
  *out = program->shared_state.span().size();
  return TERN_STATUS_OK;
}

tern_status tern_program_reset_shared_state(tern_program* program) {
  TERN_C_CHECK(program != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_reset_shared_state: program is NULL");
  return from_runtime(nullptr, program->program->init_shared_state(program->shared_state.span()));
}

tern_status tern_program_num_methods(const tern_program* program, size_t* out) {
  TERN_C_CHECK(program != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_num_methods: program is NULL");
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_num_methods: out is NULL");
  *out = program->program->num_methods();
  return TERN_STATUS_OK;
}

tern_status tern_program_method_name(const tern_program* program, size_t index, const char** out) {
  TERN_C_CHECK(program != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_method_name: program is NULL");
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_method_name: out is NULL");
  const size_t count = program->program->num_methods();
  TERN_C_CHECK(index < count, nullptr, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "tern_program_method_name: method %zu out of range: the program has %zu methods",
               index, count);
  Result<const char*> name = program->program->method_name(index);
  if (!name.ok()) return to_status(name.error());
  *out = name.get();
  return TERN_STATUS_OK;
}

tern_status tern_program_method_io(const tern_program* program, const char* method,
                                   size_t* num_inputs, size_t* num_outputs) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(num_inputs != nullptr || num_outputs != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_method_io: num_inputs and num_outputs are both NULL");
  if (num_inputs != nullptr) *num_inputs = meta.num_inputs();
  if (num_outputs != nullptr) *num_outputs = meta.num_outputs();
  return TERN_STATUS_OK;
}

tern_status tern_program_num_symbols(const tern_program* program, const char* method,
                                     size_t* out) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "out is NULL");
  *out = meta.num_symbols();
  return TERN_STATUS_OK;
}

tern_status tern_program_symbol_info(const tern_program* program, const char* method, size_t index,
                                     tern_symbol_info* out) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "out is NULL");
  TERN_C_CHECK(index < meta.num_symbols(), nullptr, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': symbol %zu out of range: the method has %zu symbols", method, index,
               meta.num_symbols());
  Result<DimSymbolInfo> symbol = meta.symbol(index);
  if (!symbol.ok()) return to_status(symbol.error());
  out->name = symbol->name;
  out->min = symbol->min;
  out->max = symbol->max;
  return TERN_STATUS_OK;
}

tern_status tern_program_dim_symbols(const tern_program* program, const char* method, int is_input,
                                     size_t index, int32_t* out, size_t capacity) {
  tern_value_info info;
  const tern_status got = value_info(program, method, index, is_input != 0, &info);
  if (got != TERN_STATUS_OK) return got;
  const char* what = is_input != 0 ? "input" : "output";
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, "out is NULL");
  TERN_C_CHECK(info.kind == TERN_VALUE_TENSOR, nullptr, TERN_STATUS_TYPE_MISMATCH,
               "method '%s': %s %zu is no tensor", method, what, index);
  TERN_C_CHECK(capacity >= info.rank, nullptr, TERN_STATUS_SIZE_MISMATCH,
               "method '%s': %s %zu has rank %zu, out holds %zu entries", method, what, index,
               info.rank, capacity);
  MethodMeta meta(nullptr);
  (void)find_method_meta(program, method, &meta);  // found by value_info
  Result<TensorInfo> tensor =
      is_input != 0 ? meta.input_tensor_info(index) : meta.output_tensor_info(index);
  if (!tensor.ok()) return to_status(tensor.error());
  for (size_t d = 0; d < info.rank; ++d) {
    out[d] = d < tensor->dim_symbols.size() ? tensor->dim_symbols[d] : -1;
  }
  return TERN_STATUS_OK;
}

tern_status tern_program_input_info(const tern_program* program, const char* method, size_t index,
                                    tern_value_info* out) {
  return value_info(program, method, index, /*is_input=*/true, out);
}

tern_status tern_program_output_info(const tern_program* program, const char* method, size_t index,
                                     tern_value_info* out) {
  return value_info(program, method, index, /*is_input=*/false, out);
}

tern_status tern_program_memory_requirements(const tern_program* program, const char* method,
                                             tern_memory_requirements* out) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(out != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_memory_requirements: out is NULL");
  return memory_requirements(meta, out);
}

tern_status tern_program_arena_requirement(const tern_program* program, const char* method,
                                           size_t arena, uint64_t* size, uint32_t* alignment) {
  MethodMeta meta(nullptr);
  const tern_status found = find_method_meta(program, method, &meta);
  if (found != TERN_STATUS_OK) return found;
  TERN_C_CHECK(size != nullptr || alignment != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT,
               "tern_program_arena_requirement: size and alignment are both NULL");
  TERN_C_CHECK(arena < meta.num_arenas(), nullptr, TERN_STATUS_INDEX_OUT_OF_RANGE,
               "method '%s': arena %zu out of range: the method has %zu arenas", method, arena,
               meta.num_arenas());
  Result<uint64_t> arena_size = meta.arena_size(arena);
  if (!arena_size.ok()) return to_status(arena_size.error());
  Result<uint32_t> arena_alignment = meta.arena_alignment(arena);
  if (!arena_alignment.ok()) return to_status(arena_alignment.error());
  if (size != nullptr) *size = arena_size.get();
  if (alignment != nullptr) *alignment = arena_alignment.get();
  return TERN_STATUS_OK;
}

}  // extern "C"
