// Shared argument handling of the unary elementwise kernels (unary math, activations).
#pragma once

#include "runtime/kernels/portable/elementwise_binary.h"

namespace tern {
namespace portable {

/// Parses (x, attributes..., out) with `min_args`..`max_args` arguments: x a tensor of a
/// plain dtype, out the last argument, a tensor of x's shape. The caller checks dtypes.
Error unary_args(const char* op, Span<EValue*> args, size_t min_args, size_t max_args, Operand* x,
                 TensorView** out);

/// How a float op treats non-float inputs.
enum class IntInputs {
  Promote,  ///< ints and bool are read as f32 (exp(int) gives f32, as in ATen)
  Refuse,   ///< only f32 (ATen has no integer version of the op)
};

/// Checks that x (as `ints` says) and out suit a float op computing in f32: out must be f32.
Error check_float_unary(const char* op, const Operand& x, const TensorView& out, IntInputs ints);

/// out = f(x) in f32 after check_float_unary; x read in place or converted.
template <typename F>
void run_float_unary(const Operand& x, TensorView* out, F f) {
  unary_loop<float, float>(x, out->data_as<float>(), out->numel(), f);
}

}  // namespace portable
}  // namespace tern
