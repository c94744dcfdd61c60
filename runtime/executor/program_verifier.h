// Private to runtime/executor: verification of a program's FlatBuffer before any use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/executor/file_header.h"

namespace tern {
namespace fb {
struct Program;
struct Method;
struct Tensor;
}  // namespace fb

namespace internal {

/// Runs the FlatBuffers verifier over `data[0, size)` (identifier "TRNP", alignment checked
/// relative to `data`, which must be 8-byte aligned). InvalidProgram with a message on failure.
Error verify_flatbuffer(const uint8_t* data, size_t size);

/// Checks every version, index, offset, size and product of sizes of `program` (which passed
/// verify_flatbuffer) against `header` and itself, overflow-safe (docs/format.md,
/// "Verification"). InvalidProgram naming method, what and where on the first failure.
/// Allocates small scratch arrays on the heap (load time only).
Error verify_program(const fb::Program* program, const FileHeader& header);

/// Element count and byte size of a tensor; false when the sizes are negative, the rank is
/// above kMaxRank, the dtype is unknown or the product overflows.
bool tensor_numel_nbytes(const fb::Tensor* tensor, uint64_t* numel, uint64_t* nbytes);

/// Checks a method's bounded-dynamic shapes (format 1.1, docs/dynamic-shapes.md): its
/// symbols, every tensor's dim_symbols against its rank, sizes, storage and dtype, that every
/// symbol is bound by a method input, and its symbolic ints. `name` is the method's name and
/// `is_state[v]` says whether value v is listed as state. Called by verify_program after the
/// method's values and state are checked. InvalidProgram naming what and where.
Error verify_dynamic_shapes(const fb::Method* method, const char* name, const uint8_t* is_state);

}  // namespace internal
}  // namespace tern
