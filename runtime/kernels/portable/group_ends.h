// The running ends of a grouped product's row groups (tern::grouped_mm's offsets,
// tern::grouped_linear's ends: group e is rows [ends[e - 1], ends[e]), group 0 from row 0).
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace portable {

/// Ok when every end of `ends` (i32 or i64, [E]) lies in [the previous end, rows]; else
/// InvalidArgument naming `op`, `name`[e], its value and the range it had.
Error check_group_ends(const char* op, const char* name, const TensorView& ends, int64_t rows);

}  // namespace portable
}  // namespace tern
