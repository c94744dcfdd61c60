// parse_blob's checks of View values (internal to backends/cpu/runtime; blob version 18,
// cpu_blob_format.h ValueKind::View): a view reads a contiguous run of an earlier Internal
// value in place, so its base must exist, be made by a node, be no view itself, and hold every
// element the view reads. Errors name the value, expected and found.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_blob_format.h"
#include "runtime/core/error.h"

namespace tern::cpu {

/// Whether value `v` is a View.
inline bool is_view_value(const BlobValue& v) {
  return v.kind == static_cast<uint32_t>(ValueKind::View);
}

/// Value `i`'s view fields against `values` (all `nv` of them, each already checked on its
/// own): for a View, view_base < i names an Internal value, layout Plain, static dims, no
/// data bytes, and data_offset + numel within the base's elements; for any other value,
/// view_base 0.
Error check_view_value(uint32_t i, const BlobValue* values, uint32_t nv);

}  // namespace tern::cpu
