// Private to runtime/executor: a compact, table-driven verifier of a program's FlatBuffer.
//
// It performs, for tern's schema (schema/program.fbs), exactly the checks of the FlatBuffers
// C++ verifier that flatc generates (fb::VerifyProgramBuffer with max_depth 64, max_tables
// 2^26 and alignment checks on): buffer size and identifier, the root offset, every table's
// vtable offset, vtable size and bounds, every present scalar field's bounds and alignment,
// every offset field (non-zero, non-negative, inside the buffer), every vector's and
// string's length and bounds, each string's terminating zero, every table reached through a
// field, a vector or a union, and the depth and table-count limits. The generated verifier
// inlines all of this per field (about 6 KB of code in the minimal runner); here one walk
// reads a description of each table's fields (flatbuffer_verifier.cpp).
// flatbuffer_verifier_test checks that both accept and reject the same buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {
namespace internal {

/// The FlatBuffers limits tern verifies with (verify_flatbuffer).
constexpr uint32_t kFlatbufferMaxDepth = 64;
constexpr uint32_t kFlatbufferMaxTables = 1u << 26;

/// True when `data[0, size)` passes the checks above with root type tern.fb.Program and file
/// identifier "TRNP". `data` must be 8-byte aligned (alignment is checked relative to it);
/// `size` must be below FLATBUFFERS_MAX_BUFFER_SIZE (verify_flatbuffer checks it first).
bool verify_program_flatbuffer(const uint8_t* data, size_t size);

}  // namespace internal
}  // namespace tern
