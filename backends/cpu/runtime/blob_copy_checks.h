// parse_blob's checks of the data-movement nodes that read their input at strides (internal to
// backends/cpu/runtime): StridedCopy (op 27) and RowConcat (op 29). Each proves that every
// element the kernel reads lies inside its input and that the output has the element count the
// parameters give; errors name the node, the field, what was expected and what was found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Largest node parameter taken (keeps every product below 2^62).
constexpr uint64_t kMaxParam = uint64_t{1} << 30;

/// A constant (in the blob or derived at prepare), not a data value.
inline bool is_constant_kind(const BlobValue& v) {
  return v.kind == static_cast<uint32_t>(ValueKind::Constant) ||
         v.kind == static_cast<uint32_t>(ValueKind::Derived);
}

/// Inputs first..count-1 of node `n` are f32 data values (not constants, not int64): the
/// operands of tern's products (ops 26, 32: a and q may be constants, checked apart).
Error check_f32_data_inputs(uint32_t n, const BlobNode& node, const BlobValue* v, uint32_t count,
                            uint32_t first = 0);

/// Node `n` (op 27) with values `v` (already checked to exist).
Error check_strided_copy(uint32_t n, const BlobNode& node, const BlobValue* v);
/// Node `n` (op 29) with values `v` (already checked to exist).
Error check_row_concat(uint32_t n, const BlobNode& node, const BlobValue* v);

}  // namespace tern::cpu
