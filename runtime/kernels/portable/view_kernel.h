// The common tail of the view ops (reshape, view, squeeze, unsqueeze, flatten): check the
// output against the computed shape, then alias or copy.
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor_view.h"

namespace tern::portable::dm {

/// Checks that `out` has x's dtype and exactly `shape` (which has x's element count), then
/// gives it x's bytes: nothing when the planner aliased them (out.data == x.data), otherwise
/// one memmove. InvalidArgument naming `op` on a dtype or shape mismatch.
Error finish_view(const char* op, const TensorView& x, const TensorView& out,
                  Span<const int64_t> shape);

}  // namespace tern::portable::dm
