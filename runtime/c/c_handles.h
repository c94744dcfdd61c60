// The C API's handles (tern_program, tern_method) and the helpers its functions share: turning
// a tern::Error into a tern_status, recording a failure's message, checking arguments.
// Internal to runtime/c: never installed, never included by users.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/data_loader.h"
#include "runtime/core/error.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/extension/method_memory.h"
#include "runtime/extension/owned_backend_options.h"
#include "tern.h"

/// A loaded program and what tern_method_load needs from the load options. Reference counted:
/// one reference for the caller (tern_program_free) and one per live method.
struct tern_program {
  std::atomic<size_t> references{1};
  std::unique_ptr<tern::DataLoader> loader;
  std::unique_ptr<tern::Program> program;
  /// Backends every method load disables (the options' allow-list, disabled list and
  /// portable_only, resolved against the registry at program load).
  std::vector<std::string> disabled_names;
  std::vector<const char*> disabled;  ///< pointers into disabled_names
  uint32_t num_threads = 0;
  /// The options' backend options, copied.
  tern::OwnedBackendOptions backend_options;
  /// The program's shared state (format 1.2: state its methods share, e.g. a KV cache),
  /// allocated and initialised at program load; empty when the program has none.
  tern::SharedStateBuffer shared_state;
};

/// A loaded method and the memory it runs in: either tern's own (owned_memory) or the
/// caller's buffers with allocators over them. Never moves (the Method points into it).
struct tern_method {
  tern_program* program = nullptr;  ///< holds one reference
  std::unique_ptr<tern::MethodMemory> owned_memory;
  tern::MemoryAllocator method_allocator;
  std::vector<tern::Span<uint8_t>> arenas;
  tern::HierarchicalAllocator planned_memory;
  tern::MemoryAllocator temp_allocator;
  tern::MemoryManager manager;
  std::unique_ptr<tern::Method> method;
  mutable char last_error[1024] = {0};
};

namespace tern {
namespace c_api {

/// The C status of a runtime error (the same number; unknown values are TERN_STATUS_INTERNAL).
tern_status to_status(Error error);

/// Records a printf-style message as this thread's last error message (and, when `method` is
/// not null, as the method's) and returns `status`.
tern_status fail(const tern_method* method, tern_status status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/// The C status of `error` from a runtime call; when `method` is not null and error is not Ok,
/// copies the runtime's message (this thread's last) into the method.
tern_status from_runtime(const tern_method* method, Error error);

/// Registers the portable kernels and every backend of this build, once per process
/// (thread-safe); the first call's result, with a message on failure.
tern_status ensure_registered();

/// Drops one reference to `program` and destroys it with the last one; null is ignored.
void release_program(tern_program* program);

/// The method meta of `name`, with NULL_ARGUMENT / NOT_FOUND statuses and messages.
tern_status find_method_meta(const tern_program* program, const char* name, MethodMeta* out);

/// The integer a caller stored in a C enum (a field or an argument), read without loading the
/// enum itself: a C caller may pass any int there, and loading an out-of-range value as a C++
/// enum is undefined (UBSan: "not a valid value for type").
template <typename E>
int enum_field(const E& field) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

}  // namespace c_api
}  // namespace tern

/// Returns `status` from the enclosing C function with a message when `cond` is false
/// (`method`: the handle whose last error also records it, or nullptr).
#define TERN_C_CHECK(cond, method, status, ...)                               \
  do {                                                                        \
    if (!(cond)) return ::tern::c_api::fail((method), (status), __VA_ARGS__); \
  } while (0)

/// Returns TERN_STATUS_NULL_ARGUMENT ("<function>: method is NULL") when `m` is null.
#define TERN_C_CHECK_METHOD(m, function) \
  TERN_C_CHECK((m) != nullptr, nullptr, TERN_STATUS_NULL_ARGUMENT, function ": method is NULL")
