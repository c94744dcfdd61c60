// Private to runtime/executor: program shared state (format 1.2, docs/format.md "Shared
// state"): state tensors that several methods of one program read and write (the KV cache of a
// prefill and a decode method). They live in one caller-provided buffer, laid out in
// Program.shared_state order, each tensor at the next multiple of kSharedStateAlignment.
// shared_state.cpp implements it; shared_state_off.cpp (TERN_SHARED_STATE=OFF, minimal cores)
// refuses programs that declare it.
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {
namespace fb {
struct Program;
struct Method;
struct Tensor;
}  // namespace fb

namespace internal {

/// Alignment of the caller's shared state buffer and of every tensor in it.
constexpr uint64_t kSharedStateAlignment = 64;

/// Checks Program.shared_state (called by verify_program): every entry named, its dtype known,
/// its rank, sizes and byte size valid, the buffer's total size representable, its init segment
/// in range and exactly the tensor's bytes. InvalidProgram naming the entry.
Error verify_shared_state(const fb::Program* program, uint32_t num_segments);

/// Checks method `method`'s value `index`, a tensor of storage SharedState, against the
/// program's declaration: the entry exists, offset 0, static, the same dtype and sizes, and the
/// value is not a method input (`is_input`). InvalidProgram naming the method, the value and
/// both layouts.
Error check_shared_state_view(const fb::Program* program, const char* method, uint32_t index,
                              const fb::Tensor* tensor, bool is_input);

/// Checks that every SharedState value of `fb_method` (named `method`) is listed as state
/// (`is_state[v]`). InvalidProgram naming the value.
Error check_shared_state_listed(const fb::Method* fb_method, const char* method,
                                const uint8_t* is_state);

/// Checks method state entry `index` (value `value`, a shared state view): its init segment
/// must be -1, the initial value being the program's. InvalidProgram otherwise.
Error check_shared_state_init(const char* method, uint32_t index, uint32_t value, int32_t init);

/// The address of shared state entry `location` in `buffer` for method `method`'s value
/// `index`: InvalidArgument when the caller gave no buffer, or one too small or misaligned
/// (naming Program::shared_state_bytes() and what was given).
Result<uint8_t*> bind_shared_state(const fb::Program* program, Span<uint8_t> buffer,
                                   const char* method, uint32_t index, uint32_t location);

}  // namespace internal
}  // namespace tern
