// Declarations of the portable kernels (one definition per file). Normally reached through
// the kernel registry (register_portable_kernels() then find_kernel("tern::add")).
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/executor/kernel_registry.h"

namespace tern {
namespace portable {

/// tern::add(a, b, out) / tern::add(a, b, alpha, out): out = a + alpha * b with NumPy
/// broadcasting; b may be an Int/Double scalar; f32, i32, i64 (all operands one dtype;
/// integer arithmetic wraps); alpha Int or Double (Int only for integer tensors).
Error add(KernelContext& context, Span<EValue*> args);

/// tern::mul(a, b, out): out = a * b with broadcasting; dtypes as add.
Error mul(KernelContext& context, Span<EValue*> args);

/// tern::relu(x, out): out = max(x, 0); f32, i32, i64; out has x's dtype and shape.
Error relu(KernelContext& context, Span<EValue*> args);

/// tern::linear(x [..., in], weight [out_features, in], bias [out_features] or None,
/// out [..., out_features]): out = x @ weight^T + bias; f32.
Error linear(KernelContext& context, Span<EValue*> args);

/// tern::reshape(x, shape IntList (one -1 allowed), out): out holds x's elements in the
/// resolved shape; copies (memmove) only when out's data differs from x's.
Error reshape(KernelContext& context, Span<EValue*> args);

}  // namespace portable
}  // namespace tern
