// The memory a C API method runs in: what it needs (tern_program_memory_requirements), the
// caller's buffers checked and bound, or tern's own allocated at load.
#pragma once

#include "c_handles.h"
#include "runtime/executor/method_meta.h"

namespace tern {
namespace c_api {

/// Method allocator bytes added per delegate for backends that keep their host state there
/// (MethodMeta::method_allocator_bytes() does not count it); the same allowance as Module.
constexpr uint64_t kBackendBytesPerDelegate = 4096;
/// The temp buffer has at least this many bytes (kernels with small unplanned scratch needs);
/// the same floor as Module.
constexpr uint64_t kMinTempBytes = 4096;

/// What a method of `meta` needs (the allowances above included).
tern_status memory_requirements(const MethodMeta& meta, tern_memory_requirements* out);

/// Checks the caller's buffers against `meta`'s requirements (count, sizes, alignment) and
/// points `method`'s allocators and manager at them. Messages name the method `name`.
tern_status bind_caller_memory(const MethodMeta& meta, const char* name,
                               const tern_method_memory& memory, tern_method* method);

/// Allocates every buffer `meta` needs on the heap (method->owned_memory) and points
/// method->manager at it.
tern_status allocate_memory(const MethodMeta& meta, const char* name, tern_method* method);

}  // namespace c_api
}  // namespace tern
